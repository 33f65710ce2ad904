// SPDX-License-Identifier: Apache-2.0
// The tuner's `zb` subcommands. Each takes its arguments (without the subcommand name), writes
// results to `out` and a single error line to `err`, and returns the exit code:
// 0 success, 2 usage error, 1 any other failure.
#ifndef ZBKIT_TUNER_CLI_COMMANDS_H_
#define ZBKIT_TUNER_CLI_COMMANDS_H_

#include <ostream>
#include <string>
#include <vector>

namespace zb::cli {

using Args = std::vector<std::string>;

int RunTuneCommand(const Args& args, std::ostream& out, std::ostream& err);
int RunExportCommand(const Args& args, std::ostream& out, std::ostream& err);
int RunShowCommand(const Args& args, std::ostream& out, std::ostream& err);
int RunBenchCommand(const Args& args, std::ostream& out, std::ostream& err);
int RunListCommand(const Args& args, std::ostream& out, std::ostream& err);

}  // namespace zb::cli

#endif  // ZBKIT_TUNER_CLI_COMMANDS_H_
