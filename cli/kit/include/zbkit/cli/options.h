// SPDX-License-Identifier: Apache-2.0
// The command-line contract every `zb` subcommand follows, whichever component it belongs to:
// arguments without the subcommand name, results to `out`, one error line "zb <command>: ..." to
// `err`, and the exit code 0 success, 2 usage error, 1 any other failure. Option parsing is
// Boost.Program_options; --help prints the usage and the options.
#ifndef ZBKIT_CLI_OPTIONS_H_
#define ZBKIT_CLI_OPTIONS_H_

#include <boost/program_options.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "zbkit/schemas/status.h"

namespace zb::cli {

namespace po = boost::program_options;

// A subcommand's arguments (argv after the subcommand name).
using Args = std::vector<std::string>;

// The signature of every subcommand the front end dispatches to.
using CommandFunction = int (*)(const Args& args, std::ostream& out, std::ostream& err);

// Parses `args`; prints the usage to `out` for --help (returns 0 in `exit_code`), followed by
// `epilogue` (examples, conventions) when given, and one error line to `err` for anything
// malformed (returns 2). Returns true when the command should run.
bool ParseCommandLine(const std::string& command, const std::string& usage, const Args& args,
                      const po::options_description& options,
                      const po::positional_options_description& positional,
                      po::variables_map& values, std::ostream& out, std::ostream& err,
                      int& exit_code, const std::string& epilogue = "");

// Writes "zb <command>: <message>" and returns the exit code for the status.
int ReportError(std::ostream& err, const std::string& command, const Status& status);

}  // namespace zb::cli

#endif  // ZBKIT_CLI_OPTIONS_H_
