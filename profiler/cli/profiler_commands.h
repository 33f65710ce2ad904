// SPDX-License-Identifier: Apache-2.0
// The profiler's `zb` subcommands (the contract of zbkit/cli/options.h: arguments without the
// subcommand name, results to `out`, one error line to `err`, the exit code returned).
#ifndef ZBKIT_PROFILER_CLI_PROFILER_COMMANDS_H_
#define ZBKIT_PROFILER_CLI_PROFILER_COMMANDS_H_

#include <ostream>

#include "zbkit/cli/options.h"

namespace zb::cli {

// zb profile [options] -- CMD ARGS...: runs CMD with the injection library, exits with CMD's
// exit code (128 + signal if it was killed).
int RunProfileCommand(const Args& args, std::ostream& out, std::ostream& err);
// zb import FILE|DIR [--format nsys|chrome|shards] [options]
int RunImportCommand(const Args& args, std::ostream& out, std::ostream& err);
// zb costs export|list ...
int RunCostsCommand(const Args& args, std::ostream& out, std::ostream& err);
// zb trace (SCHEDULE | --store DB ...) --format perfetto|kineto -o PATH; zb trace --check FILE
int RunTraceCommand(const Args& args, std::ostream& out, std::ostream& err);

}  // namespace zb::cli

#endif  // ZBKIT_PROFILER_CLI_PROFILER_COMMANDS_H_
