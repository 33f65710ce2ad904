// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the `zb` subcommands: option parsing with one-line usage errors, error
// reporting with the exit-code convention, and loading a schedule from a file or a store.
#ifndef ZBKIT_TUNER_CLI_CLI_SUPPORT_H_
#define ZBKIT_TUNER_CLI_CLI_SUPPORT_H_

#include <boost/program_options.hpp>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "commands.h"
#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"

namespace zb::cli {

namespace po = boost::program_options;

// Parses `args`; prints the usage to `out` for --help (returns 0 in `exit_code`) and one error
// line to `err` for anything malformed (returns 2). Returns true when the command should run.
bool ParseCommandLine(const std::string& command, const std::string& usage, const Args& args,
                      const po::options_description& options,
                      const po::positional_options_description& positional,
                      po::variables_map& values, std::ostream& out, std::ostream& err,
                      int& exit_code);

// Writes "zb <command>: <message>" and returns the exit code for the status.
int ReportError(std::ostream& err, const std::string& command, const Status& status);

// Adds the options that name one schedule: a zb-schedule/1 FILE (positional) or
// --store DB --schedule ID.
void AddScheduleSourceOptions(po::options_description& options,
                              po::positional_options_description& positional);
// Loads the schedule those options name.
Expected<Schedule> LoadScheduleFromArguments(const po::variables_map& values);

}  // namespace zb::cli

#endif  // ZBKIT_TUNER_CLI_CLI_SUPPORT_H_
