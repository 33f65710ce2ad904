// SPDX-License-Identifier: Apache-2.0
// What `zb export`, `zb show` and `zb replay` share: the options that name one schedule (a
// zb-schedule/1 FILE, positional, or --store DB --schedule ID) and loading the schedule they name.
#ifndef ZBKIT_CLI_SCHEDULE_SOURCE_H_
#define ZBKIT_CLI_SCHEDULE_SOURCE_H_

#include "zbkit/cli/options.h"
#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"

namespace zb::cli {

void AddScheduleSourceOptions(po::options_description& options,
                              po::positional_options_description& positional);
// Loads the schedule those options name; kUsage when they name none or two.
Expected<Schedule> LoadScheduleFromArguments(const po::variables_map& values);
// How errors about that schedule name it: the FILE, or "DB schedule ID".
std::string ScheduleSourceName(const po::variables_map& values);

}  // namespace zb::cli

#endif  // ZBKIT_CLI_SCHEDULE_SOURCE_H_
