// SPDX-License-Identifier: Apache-2.0
// zb list --store DB [--json]: the schedules a store holds, with their summary figures.
#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "text_table.h"
#include "zbkit/schemas/store.h"

namespace zb::cli {

int RunListCommand(const Args& args, std::ostream& out, std::ostream& err) {
  const std::string command = "list";
  po::options_description options("options");
  po::options_description_easy_init add = options.add_options();
  add("store", po::value<std::string>()->required(), "SQLite store");
  add("json", "print JSON");
  po::variables_map values;
  int exit_code = 0;
  if (!ParseCommandLine(command, "--store DB [--json]", args, options, {}, values, out, err,
                        exit_code)) {
    return exit_code;
  }
  auto store = Store::Open(values["store"].as<std::string>(), Store::Mode::kReadOnly);
  if (!store.ok()) return ReportError(err, command, store.status());
  auto schedules = store->ListSchedules();
  if (!schedules.ok()) return ReportError(err, command, schedules.status());

  if (values.count("json")) {
    nlohmann::json list = {{"format", "zb-list/1"}, {"schedules", nlohmann::json::array()}};
    for (const ScheduleInfo& info : *schedules) {
      list["schedules"].push_back(
          {{"id", info.id},
           {"cluster", info.cluster},
           {"job", info.job},
           {"family", info.family},
           {"stages", info.ranks},
           {"microbatches", info.microbatches},
           {"chunks", info.chunks},
           {"placement", PlacementName(info.placement)},
           {"memory_limit", info.memory_limit ? nlohmann::json(*info.memory_limit) : nullptr},
           {"makespan", NsToMs(info.predicted.makespan)},
           {"bubble_rate", info.predicted.bubble_rate},
           {"paper_bubble_rate", info.predicted.paper_bubble_rate},
           {"ops", info.num_ops},
           {"created_at", info.created_at}});
    }
    out << list.dump(2) << "\n";
    return 0;
  }
  TextTable table({"id", "job", "family", "p", "m", "v", "makespan_ms", "bubble", "paper_bubble",
                   "cap", "ops"});
  for (const ScheduleInfo& info : *schedules) {
    table.AddRow({std::to_string(info.id), info.cluster + "/" + info.job, info.family,
                  std::to_string(info.ranks), std::to_string(info.microbatches),
                  std::to_string(info.chunks), FormatMs(info.predicted.makespan),
                  FormatFixed(info.predicted.bubble_rate, 4),
                  FormatFixed(info.predicted.paper_bubble_rate, 4),
                  info.memory_limit ? FormatFixed(*info.memory_limit, 0) : "none",
                  std::to_string(info.num_ops)});
  }
  table.Render(out);
  return 0;
}

}  // namespace zb::cli
