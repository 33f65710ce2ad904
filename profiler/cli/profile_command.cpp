// SPDX-License-Identifier: Apache-2.0
// zb profile [--store DB] [--name NAME] [--pp P] [--layout loop|v] [--skip-iters N]
//            [--rules FILE] [--shard-dir DIR] ... -- CMD ARGS...
//
// Runs CMD with the injection library set up (CUDA_INJECTION64_PATH, NVTX_INJECTION64_PATH) and
// ZBKIT_SHARD_DIR pointing at a shard directory; every process of the job that initializes CUDA
// or NVTX writes <dir>/rank<R>.zbshard (the environment is inherited by torchrun's and
// torch.multiprocessing's workers). When CMD exits, the shards are read, attributed and
// aggregated as `zb import` does. The exit code is always CMD's (128 + signal if it was killed):
// profiling problems are one warning line, never a different exit code, so that wrapping a job
// in `zb profile` cannot change what its scheduler sees.
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "analysis.h"
#include "profiler_commands.h"
#include "zbkit/profiler/shard.h"

extern char** environ;

namespace zb::cli {
namespace {

namespace fs = std::filesystem;

volatile sig_atomic_t g_child_pid = 0;

// Forwards a signal sent to zb (kill, torchrun's SIGTERM, a scheduler) to the command. A
// terminal's Ctrl-C already reached the command (same process group), so a kernel-generated
// signal is not sent twice.
void ForwardSignal(int signal_number, siginfo_t* info, void*) {
  const pid_t child = g_child_pid;
  if (child <= 0) return;
  if (info != nullptr && info->si_code == SI_KERNEL) return;
  kill(child, signal_number);
}

bool FileExists(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

std::string Absolute(const std::string& path) {
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) != nullptr) return resolved;
  return path;
}

// The injection library: ZBKIT_INJECT_LIBRARY if set (and only it), else the build tree's, else
// ../lib next to this zb. Empty with `why` set when there is none.
std::string FindInjectionLibrary(std::string& why) {
  if (const char* env = std::getenv("ZBKIT_INJECT_LIBRARY"); env != nullptr && *env != '\0') {
    if (FileExists(env)) return Absolute(env);
    why = std::string("ZBKIT_INJECT_LIBRARY=") + env + " does not exist";
    return {};
  }
#ifdef ZBKIT_INJECT_BUILD_PATH
  if (FileExists(ZBKIT_INJECT_BUILD_PATH)) return ZBKIT_INJECT_BUILD_PATH;
#endif
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (!error) {
    const fs::path installed = self.parent_path() / ".." / "lib" / "libzbkit_inject.so";
    if (FileExists(installed.string())) return Absolute(installed.string());
  }
  why = "libzbkit_inject.so not found (built only with the CUDA Toolkit; set ZBKIT_INJECT_LIBRARY)";
  return {};
}

// A job name from the command: the script of `python train.py`, else the program's name.
std::string NameFromCommand(const std::vector<std::string>& command) {
  for (const std::string& arg : command) {
    if (arg.size() > 3 && arg.compare(arg.size() - 3, 3, ".py") == 0) {
      return fs::path(arg).stem().string();
    }
  }
  return fs::path(command[0]).filename().string();
}

std::string JoinCommand(const std::vector<std::string>& command) {
  std::string text;
  for (const std::string& arg : command) {
    if (!text.empty()) text += ' ';
    text += arg;
  }
  return text;
}

// Runs the command with `extra_env` added; returns its exit code (128 + signal if killed), or
// 127 when it could not be started (the child says why on stderr).
int RunChild(const std::vector<std::string>& command,
             const std::vector<std::pair<std::string, std::string>>& extra_env) {
  std::vector<std::string> env_strings;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const std::string key = text.substr(0, text.find('='));
    bool overridden = false;
    for (const auto& [name, value] : extra_env)
      overridden = overridden || name == key;
    if (!overridden) env_strings.push_back(text);
  }
  for (const auto& [name, value] : extra_env)
    env_strings.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (std::string& text : env_strings)
    envp.push_back(text.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings = command;
  std::vector<char*> argv;
  for (std::string& arg : argv_strings)
    argv.push_back(arg.data());
  argv.push_back(nullptr);

  struct sigaction forward {};
  forward.sa_sigaction = ForwardSignal;
  forward.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&forward.sa_mask);
  struct sigaction old_int {
  }, old_term{}, old_hup{}, old_quit{};
  // Block the forwarded signals across fork so that the handler never sees a half-set pid.
  sigset_t block, previous;
  sigemptyset(&block);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT})
    sigaddset(&block, s);
  sigprocmask(SIG_BLOCK, &block, &previous);
  sigaction(SIGINT, &forward, &old_int);
  sigaction(SIGTERM, &forward, &old_term);
  sigaction(SIGHUP, &forward, &old_hup);
  sigaction(SIGQUIT, &forward, &old_quit);

  std::fflush(nullptr);
  const pid_t child = fork();
  if (child == 0) {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    sigaction(SIGHUP, &old_hup, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    execvpe(argv[0], argv.data(), envp.data());
    const std::string message =
        std::string("zb profile: cannot run ") + argv[0] + ": " + std::strerror(errno) + "\n";
    if (write(STDERR_FILENO, message.data(), message.size()) < 0) {
      // Nothing else to do in a failed child.
    }
    _exit(127);
  }
  int exit_code = 127;
  if (child > 0) {
    g_child_pid = child;
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    int status = 0;
    pid_t done;
    do {
      done = waitpid(child, &status, 0);
    } while (done < 0 && errno == EINTR);
    if (done == child) {
      if (WIFEXITED(status)) exit_code = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) exit_code = 128 + WTERMSIG(status);
    }
    sigprocmask(SIG_BLOCK, &block, nullptr);
    g_child_pid = 0;
  } else {
    std::perror("zb profile: fork");
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  sigprocmask(SIG_SETMASK, &previous, nullptr);
  return exit_code;
}

}  // namespace

int RunProfileCommand(const Args& args, std::ostream& out, std::ostream& err) {
  const std::string command_name = "profile";
  const std::string usage = "[options] -- CMD ARGS...";
  Args own_args;
  std::vector<std::string> command;
  bool after_separator = false;
  for (const std::string& arg : args) {
    if (!after_separator && arg == "--") {
      after_separator = true;
      continue;
    }
    (after_separator ? command : own_args).push_back(arg);
  }
  po::options_description options("options");
  AddAnalysisOptions(options);
  options.add_options()("shard-dir", po::value<std::string>(),
                        "keep the shards in this directory (default: a temporary one, removed)");
  po::variables_map values;
  int exit_code = 0;
  if (!ParseCommandLine(command_name, usage, own_args, options, {}, values, out, err, exit_code)) {
    return exit_code;
  }
  if (command.empty()) {
    return ReportError(err, command_name,
                       UsageError("give the command to profile after --: zb profile " + usage));
  }
  auto settings = ReadAnalysisSettings(values);
  if (!settings.ok()) return ReportError(err, command_name, settings.status());

  // Shard directory.
  std::string shard_dir;
  bool temporary = false;
  if (values.count("shard-dir")) {
    shard_dir = values["shard-dir"].as<std::string>();
    std::error_code error;
    fs::create_directories(shard_dir, error);
    if (error) {
      return ReportError(err, command_name,
                         IoError("--shard-dir " + shard_dir + ": " + error.message()));
    }
    auto existing = profiler::ListShards(shard_dir);
    if (existing.ok() && !existing->empty()) {
      return ReportError(err, command_name,
                         UsageError("--shard-dir " + shard_dir +
                                    " already holds shards of an earlier run; remove them, or "
                                    "analyze them with zb import " +
                                    shard_dir));
    }
    shard_dir = Absolute(shard_dir);
  } else {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/zbkit-profile-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      return ReportError(
          err, command_name,
          IoError("cannot create a shard directory " + pattern + ": " + std::strerror(errno)));
    }
    shard_dir = pattern;
    temporary = true;
  }

  std::string why;
  const std::string library = FindInjectionLibrary(why);
  std::vector<std::pair<std::string, std::string>> env = {{"ZBKIT_SHARD_DIR", shard_dir}};
  if (!library.empty()) {
    env.emplace_back("CUDA_INJECTION64_PATH", library);
    env.emplace_back("NVTX_INJECTION64_PATH", library);
  } else {
    err << "zb profile: warning: " << why << "; running the command without profiling\n";
    err.flush();
  }

  const int child_code = RunChild(command, env);

  // From here on the command's exit code is what zb returns.
  std::vector<std::string> skipped;
  auto traces = profiler::ReadShardDirectory(shard_dir, skipped);
  if (temporary) {
    std::error_code error;
    fs::remove_all(shard_dir, error);
  }
  if (!traces.ok() || traces->empty()) {
    if (library.empty()) {
      out << "zb profile: nothing was recorded (no injection library)\n";
    } else {
      err << "zb profile: warning: nothing was recorded (no process of the command initialized "
             "CUDA or NVTX"
          << (skipped.empty() ? "" : "; unreadable shards: " + skipped[0]) << ")\n";
    }
    return child_code;
  }
  AnalysisInput input;
  input.source = temporary ? JoinCommand(command) : shard_dir;
  input.run_kind = "profile";
  input.command = JoinCommand(command);
  input.exit_code = child_code;
  input.default_name = NameFromCommand(command);
  input.traces = std::move(*traces);
  for (const std::string& problem : skipped) {
    err << "zb profile: warning: skipped shard: " << problem << "\n";
  }
  Status status = AnalyzeAndReport(input, *settings, out);
  if (!status.ok()) err << "zb profile: warning: " << status.message() << "\n";
  return child_code;
}

}  // namespace zb::cli
