// SPDX-License-Identifier: Apache-2.0
// Runs a child process with a controlled environment and captures its output, for the
// injection library's end-to-end tests.
#ifndef ZBKIT_TESTS_INJECT_PROCESS_RUNNER_H_
#define ZBKIT_TESTS_INJECT_PROCESS_RUNNER_H_

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace zb::testing {

struct ProcessResult {
  int status = 0;  // as from waitpid
  std::string out;
  std::string err;
  bool exited() const { return WIFEXITED(status); }
  int exit_code() const { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }
  int signal() const { return WIFSIGNALED(status) ? WTERMSIG(status) : 0; }
};

// This process's environment without the variables the injection library reacts to, plus
// `extra` (overriding).
inline std::vector<std::string> CleanEnvironment(const std::map<std::string, std::string>& extra) {
  static const char* kDrop[] = {"NVTX_INJECTION64_PATH",
                                "CUDA_INJECTION64_PATH",
                                "ZBKIT_SHARD_DIR",
                                "RANK",
                                "LOCAL_RANK",
                                "WORLD_SIZE",
                                "ZBKIT_SIGNAL_FLUSH_MS",
                                "ZBKIT_EXIT_FLUSH_MS"};
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string key = entry.substr(0, entry.find('='));
    bool drop = extra.count(key) > 0;
    for (const char* d : kDrop)
      drop = drop || key == d;
    if (!drop) env.push_back(entry);
  }
  for (const auto& [key, value] : extra)
    env.push_back(key + "=" + value);
  return env;
}

class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv,
               const std::map<std::string, std::string>& extra_env) {
    int out_pipe[2];
    int err_pipe[2];
    if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) std::abort();
    const std::vector<std::string> env = CleanEnvironment(extra_env);
    std::vector<char*> args;
    for (const auto& a : argv)
      args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::vector<char*> envp;
    for (const auto& e : env)
      envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out_pipe[1], STDOUT_FILENO);
      dup2(err_pipe[1], STDERR_FILENO);
      close(out_pipe[0]);
      close(err_pipe[0]);
      close(out_pipe[1]);
      close(err_pipe[1]);
      execve(args[0], args.data(), envp.data());
      _exit(127);
    }
    close(out_pipe[1]);
    close(err_pipe[1]);
    out_fd_ = out_pipe[0];
    err_fd_ = err_pipe[0];
  }
  ~ChildProcess() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      Wait(10.0);
    }
  }
  pid_t pid() const { return pid_; }

  // Reads output until the child closes it, then reaps it; kills it after `timeout_s`.
  ProcessResult Wait(double timeout_s) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    bool killed = false;
    while (out_fd_ >= 0 || err_fd_ >= 0) {
      pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
      poll(fds, 2, 100);
      Pump(&out_fd_, &result_.out);
      Pump(&err_fd_, &result_.err);
      if (!killed && std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        killed = true;
      }
    }
    waitpid(pid_, &result_.status, 0);
    reaped_ = true;
    return result_;
  }

 private:
  static void Pump(int* fd, std::string* sink) {
    if (*fd < 0) return;
    pollfd p{*fd, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) return;
    char buffer[4096];
    const ssize_t n = read(*fd, buffer, sizeof(buffer));
    if (n > 0) {
      sink->append(buffer, static_cast<size_t>(n));
    } else {
      close(*fd);
      *fd = -1;
    }
  }

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  bool reaped_ = false;
  ProcessResult result_;
};

inline ProcessResult RunProcess(const std::vector<std::string>& argv,
                                const std::map<std::string, std::string>& extra_env,
                                double timeout_s = 60.0) {
  ChildProcess child(argv, extra_env);
  return child.Wait(timeout_s);
}

inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

}  // namespace zb::testing

#endif  // ZBKIT_TESTS_INJECT_PROCESS_RUNNER_H_
