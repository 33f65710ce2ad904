// SPDX-License-Identifier: Apache-2.0
#include "zbkit/cli/schedule_source.h"

#include "zbkit/schemas/json_io.h"
#include "zbkit/schemas/store.h"

namespace zb::cli {

void AddScheduleSourceOptions(po::options_description& options,
                              po::positional_options_description& positional) {
  po::options_description_easy_init add = options.add_options();
  add("store", po::value<std::string>(), "SQLite store holding the schedule");
  add("schedule", po::value<int64_t>(), "schedule id in the store");
  add("file", po::value<std::string>(), "or a zb-schedule/1 file (also positional)");
  positional.add("file", 1);
}

Expected<Schedule> LoadScheduleFromArguments(const po::variables_map& values) {
  const bool has_file = values.count("file") > 0;
  const bool has_store = values.count("store") > 0;
  const bool has_id = values.count("schedule") > 0;
  if (has_file && has_store) return UsageError("give either a schedule FILE or --store, not both");
  if (has_file) {
    if (has_id) return UsageError("--schedule needs --store");
    return ReadScheduleFile(values["file"].as<std::string>());
  }
  if (!has_store) return UsageError("give a schedule FILE or --store DB --schedule ID");
  if (!has_id) return UsageError("--store needs --schedule ID");
  ZB_ASSIGN_OR_RETURN(Store store,
                      Store::Open(values["store"].as<std::string>(), Store::Mode::kReadOnly));
  return store.LoadSchedule(values["schedule"].as<int64_t>());
}

std::string ScheduleSourceName(const po::variables_map& values) {
  if (values.count("file")) return values["file"].as<std::string>();
  std::string name = values.count("store") ? values["store"].as<std::string>() : "";
  if (values.count("schedule"))
    name += " schedule " + std::to_string(values["schedule"].as<int64_t>());
  return name;
}

}  // namespace zb::cli
