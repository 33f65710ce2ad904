// SPDX-License-Identifier: Apache-2.0
// The tuner's `zb` subcommands (the contract of zbkit/cli/options.h: arguments without the
// subcommand name, results to `out`, one error line to `err`, the exit code returned).
#ifndef ZBKIT_TUNER_CLI_TUNER_COMMANDS_H_
#define ZBKIT_TUNER_CLI_TUNER_COMMANDS_H_

#include <ostream>

#include "zbkit/cli/options.h"

namespace zb::cli {

int RunTuneCommand(const Args& args, std::ostream& out, std::ostream& err);
int RunExportCommand(const Args& args, std::ostream& out, std::ostream& err);
int RunShowCommand(const Args& args, std::ostream& out, std::ostream& err);
int RunBenchCommand(const Args& args, std::ostream& out, std::ostream& err);
int RunListCommand(const Args& args, std::ostream& out, std::ostream& err);
int RunPartitionCommand(const Args& args, std::ostream& out, std::ostream& err);

}  // namespace zb::cli

#endif  // ZBKIT_TUNER_CLI_TUNER_COMMANDS_H_
