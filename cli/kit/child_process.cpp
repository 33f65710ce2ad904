// SPDX-License-Identifier: Apache-2.0
#include "zbkit/cli/child_process.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>

extern char** environ;

namespace zb::cli {
namespace {

volatile sig_atomic_t g_child_pid = 0;

// Passes a signal sent to zb on to the job. A terminal's Ctrl-C (si_code SI_KERNEL) already
// reached the job, which shares zb's process group, so it is not sent a second time.
void ForwardSignal(int signal_number, siginfo_t* info, void*) {
  const pid_t child = g_child_pid;
  if (child <= 0) return;
  if (info != nullptr && info->si_code == SI_KERNEL) return;
  kill(child, signal_number);
}

constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
constexpr size_t kNumForwarded = sizeof(kForwardedSignals) / sizeof(kForwardedSignals[0]);

// The environment the job gets, built before fork (a child of fork may only make
// async-signal-safe calls).
std::vector<std::string> JobEnvironment(const EnvironmentOverrides& overrides) {
  std::vector<std::string> entries;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const std::string key = text.substr(0, text.find('='));
    bool overridden = false;
    for (const auto& [name, value] : overrides)
      overridden = overridden || name == key;
    if (!overridden) entries.push_back(text);
  }
  for (const auto& [name, value] : overrides)
    entries.push_back(name + "=" + value);
  return entries;
}

std::vector<char*> NullTerminated(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (std::string& text : strings)
    pointers.push_back(text.data());
  pointers.push_back(nullptr);
  return pointers;
}

// Waits for `child`, running the watch's tick on the way; ends the child when the tick says so.
pid_t WaitForChild(pid_t child, int& status, const ChildWatch* watch) {
  if (watch == nullptr || !watch->tick) {
    pid_t done;
    do {
      done = waitpid(child, &status, 0);
    } while (done < 0 && errno == EINTR);
    return done;
  }
  using Clock = std::chrono::steady_clock;
  const auto interval = std::chrono::duration<double>(watch->interval_s);
  auto next_tick = Clock::now() + interval;
  std::optional<Clock::time_point> kill_at;  // set once the tick ended the job
  bool killed = false;
  for (;;) {
    const pid_t done = waitpid(child, &status, WNOHANG);
    if (done != 0 && !(done < 0 && errno == EINTR)) return done;
    const auto now = Clock::now();
    if (kill_at && !killed && now >= *kill_at) {
      kill(child, SIGKILL);
      killed = true;
    }
    if (!kill_at && now >= next_tick) {
      next_tick = now + interval;
      if (watch->tick()) {
        kill(child, SIGTERM);
        kill_at = now + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(watch->grace_s));
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

int ExitCodeOf(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 127;
}

}  // namespace

CommandAfterSeparator SplitAtSeparator(const Args& args) {
  CommandAfterSeparator split;
  bool after_separator = false;
  for (const std::string& arg : args) {
    if (!after_separator && arg == "--") {
      after_separator = true;
      continue;
    }
    (after_separator ? split.command : split.own).push_back(arg);
  }
  return split;
}

std::string JoinCommand(const std::vector<std::string>& command) {
  std::string text;
  for (const std::string& arg : command) {
    if (!text.empty()) text += ' ';
    text += arg;
  }
  return text;
}

std::string SelfPath() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string("zb") : self.string();
}

int RunChildCommand(const std::string& who, const std::vector<std::string>& command,
                    const EnvironmentOverrides& overrides, const std::string& output_path,
                    int* killed_by, bool stdout_to_stderr, const ChildWatch* watch) {
  if (killed_by != nullptr) *killed_by = 0;
  int output_fd = -1;
  if (!output_path.empty()) {
    output_fd = open(output_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (output_fd < 0) {
      std::fprintf(stderr, "zb %s: cannot open %s: %s\n", who.c_str(), output_path.c_str(),
                   std::strerror(errno));
      return 127;
    }
  }
  std::vector<std::string> env_strings = JobEnvironment(overrides);
  std::vector<char*> envp = NullTerminated(env_strings);
  std::vector<std::string> argv_strings = command;
  std::vector<char*> argv = NullTerminated(argv_strings);
  const std::string cannot_run = "zb " + who + ": cannot run " + command.at(0) + ": ";

  struct sigaction forward {};
  forward.sa_sigaction = ForwardSignal;
  forward.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&forward.sa_mask);
  struct sigaction previous_actions[kNumForwarded] = {};
  // Blocked across fork so that the handler never runs before the child's pid is known.
  sigset_t block, previous_mask;
  sigemptyset(&block);
  for (int signal_number : kForwardedSignals)
    sigaddset(&block, signal_number);
  sigprocmask(SIG_BLOCK, &block, &previous_mask);
  for (size_t i = 0; i < kNumForwarded; ++i)
    sigaction(kForwardedSignals[i], &forward, &previous_actions[i]);
  auto restore_signals = [&] {
    for (size_t i = 0; i < kNumForwarded; ++i)
      sigaction(kForwardedSignals[i], &previous_actions[i], nullptr);
    sigprocmask(SIG_SETMASK, &previous_mask, nullptr);
  };

  std::fflush(nullptr);
  const pid_t child = fork();
  if (child == 0) {
    restore_signals();
    if (output_fd >= 0) {
      dup2(output_fd, STDOUT_FILENO);
      dup2(output_fd, STDERR_FILENO);
    } else if (stdout_to_stderr) {
      dup2(STDERR_FILENO, STDOUT_FILENO);
    }
    execvpe(argv[0], argv.data(), envp.data());
    const std::string message = cannot_run + std::strerror(errno) + "\n";
    if (write(STDERR_FILENO, message.data(), message.size()) < 0) {
      // Nothing more a failed child can do.
    }
    _exit(127);
  }
  int exit_code = 127;
  if (child > 0) {
    g_child_pid = child;
    sigprocmask(SIG_SETMASK, &previous_mask, nullptr);
    int status = 0;
    const pid_t done = WaitForChild(child, status, watch);
    if (done == child) {
      exit_code = ExitCodeOf(status);
      if (killed_by != nullptr && WIFSIGNALED(status)) *killed_by = WTERMSIG(status);
    }
    sigprocmask(SIG_BLOCK, &block, nullptr);
    g_child_pid = 0;
  } else {
    std::fprintf(stderr, "zb %s: fork: %s\n", who.c_str(), std::strerror(errno));
  }
  restore_signals();
  if (output_fd >= 0) close(output_fd);
  return exit_code;
}

std::string SignalName(int signal_number) {
  const char* abbreviation = sigabbrev_np(signal_number);
  return abbreviation != nullptr ? std::string("SIG") + abbreviation
                                 : "signal " + std::to_string(signal_number);
}

}  // namespace zb::cli
