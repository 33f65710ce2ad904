// SPDX-License-Identifier: Apache-2.0
// zb list --store DB [--json]: the schedules a store holds, with their summary figures.
#include "tuner_commands.h"
#include "zbkit/cli/store_listing.h"
#include "zbkit/cli/text_table.h"
#include "zbkit/schemas/store.h"

namespace zb::cli {

int RunListCommand(const Args& args, std::ostream& out, std::ostream& err) {
  StoreListing listing("zb-list/1", "schedules",
                       {"id", "job", "family", "p", "m", "v", "makespan_ms", "bubble",
                        "paper_bubble", "cap", "ops"});
  return RunStoreListing(
      "list", args, out, err, std::move(listing),
      [](const Store& store, StoreListing& rows) -> Status {
        ZB_ASSIGN_OR_RETURN(std::vector<ScheduleInfo> schedules, store.ListSchedules());
        for (const ScheduleInfo& info : schedules) {
          rows.Add({{"id", info.id},
                    {"cluster", info.cluster},
                    {"job", info.job},
                    {"family", info.family},
                    {"stages", info.ranks},
                    {"microbatches", info.microbatches},
                    {"chunks", info.chunks},
                    {"placement", PlacementName(info.placement)},
                    {"cap", info.cap ? nlohmann::json(*info.cap) : nullptr},
                    // The same figure under its old name, kept for readers of zb-list/1.
                    {"memory_limit", info.cap ? nlohmann::json(*info.cap) : nullptr},
                    {"makespan", NsToMs(info.predicted.makespan)},
                    {"bubble_rate", info.predicted.bubble_rate},
                    {"paper_bubble_rate", info.predicted.paper_bubble_rate},
                    {"ops", info.num_ops},
                    {"created_at", info.created_at}},
                   {std::to_string(info.id), info.cluster + "/" + info.job, info.family,
                    std::to_string(info.ranks), std::to_string(info.microbatches),
                    std::to_string(info.chunks), FormatMs(info.predicted.makespan),
                    FormatFixed(info.predicted.bubble_rate, 4),
                    FormatFixed(info.predicted.paper_bubble_rate, 4),
                    info.cap ? FormatFixed(*info.cap, 0) : "none", std::to_string(info.num_ops)});
        }
        return Status::Ok();
      });
}

}  // namespace zb::cli
