// SPDX-License-Identifier: Apache-2.0
// The trainer adapters' `zb` subcommands; the zb front end in cli/ dispatches to them.
#ifndef ZBKIT_ADAPTERS_CLI_ADAPTER_COMMANDS_H_
#define ZBKIT_ADAPTERS_CLI_ADAPTER_COMMANDS_H_

#include <ostream>

#include "zbkit/cli/options.h"

namespace zb::cli {

// zb replay (FILE | --store DB --schedule ID) [--shard-dir D] -- CMD ARGS...
// Runs an unmodified torch.distributed.pipelining job with a zbkit schedule in place of its own
// order: exports the schedule as PyTorch CSV to a temporary file, sets ZBKIT_SCHEDULE to it and
// puts the shim's startup hook (adapters/pytorch/zbkit/_hook) first on PYTHONPATH, runs CMD and
// returns its exit code.
int RunReplayCommand(const Args& args, std::ostream& out, std::ostream& err);

// zb demo [options]: profile the bundled PyTorch job under torch's Schedule1F1B, tune, replay the
// tuned schedule through the shim and through zbkit's executor next to torch's own schedules, and
// report measured against predicted: runs the Python module zbkit_harness.demo
// (python_commands.cpp).
int RunDemoCommand(const Args& args, std::ostream& out, std::ostream& err);

// zb rehearse --costs FILE -m M --mem-limit L [options]: run torch's schedule classes and zbkit's
// tuned schedules (shim and executor) on a real process group with stages that take the
// profile's F/B/W as timed waits, and report measured against predicted: runs the Python module
// zbkit_harness.rehearse (python_commands.cpp, docs/rehearse.md).
int RunRehearseCommand(const Args& args, std::ostream& out, std::ostream& err);

}  // namespace zb::cli

#endif  // ZBKIT_ADAPTERS_CLI_ADAPTER_COMMANDS_H_
