// SPDX-License-Identifier: Apache-2.0
// Running a user's job under a `zb` subcommand (`zb profile -- CMD`, `zb replay -- CMD`): zb
// stays in front of the job for its whole life, passes on the signals a scheduler sends it, and
// returns the job's own exit code, so that wrapping a job in zb does not change what its
// scheduler sees.
#ifndef ZBKIT_CLI_CHILD_PROCESS_H_
#define ZBKIT_CLI_CHILD_PROCESS_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "zbkit/cli/options.h"

namespace zb::cli {

// A subcommand's arguments split at the first "--": zb's own options, then the job's command.
struct CommandAfterSeparator {
  Args own;
  std::vector<std::string> command;
};
CommandAfterSeparator SplitAtSeparator(const Args& args);

// The command as one line (for the store's runs.command and messages).
std::string JoinCommand(const std::vector<std::string>& command);

// This zb's absolute path (from /proc/self/exe), or "zb" when it cannot be read.
std::string SelfPath();

using EnvironmentOverrides = std::vector<std::pair<std::string, std::string>>;

// Runs `command` (looked up on PATH) with this process's environment plus `overrides` and waits
// for it. SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to zb (kill, torchrun's shutdown, a
// scheduler) go on to the job; a terminal's Ctrl-C, which reaches the whole foreground process
// group anyway, is not sent twice. Returns the job's exit code, 128 + the signal when it was
// killed, or 127 when it could not be started (the child then writes "zb <who>: cannot run ..."
// to stderr).
// With `output_path`, the job's stdout and stderr are appended to that file instead (zb demo
// keeps its own output to its report); a file that cannot be opened gives 127 and a message.
// With `killed_by`, the signal that killed the job goes there (0 when it exited): 139 from a job
// that called exit(139) and from one killed by SIGSEGV are not the same story. With
// `stdout_to_stderr` the job's stdout goes to zb's stderr, leaving zb's stdout to zb (--json).
// With `watch`, its `tick` runs about every `interval_s` while the job runs (zb's stall watch,
// docs/stalls.md); when it returns true the job is ended: SIGTERM, and SIGKILL after
// `grace_s` if it is still there.
struct ChildWatch {
  double interval_s = 1.0;
  double grace_s = 10.0;
  std::function<bool()> tick;
};
int RunChildCommand(const std::string& who, const std::vector<std::string>& command,
                    const EnvironmentOverrides& overrides, const std::string& output_path = "",
                    int* killed_by = nullptr, bool stdout_to_stderr = false,
                    const ChildWatch* watch = nullptr);

// "SIGSEGV" for 11; "signal N" for a number without a name.
std::string SignalName(int signal_number);

}  // namespace zb::cli

#endif  // ZBKIT_CLI_CHILD_PROCESS_H_
