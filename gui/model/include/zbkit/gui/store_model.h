// SPDX-License-Identifier: Apache-2.0
// What zbview shows, read from a store without Qt (the GUI's model, tested without a display):
// the store's listing, one item loaded with everything its views and summary need (simulated
// when a schedule has no times, indexed, bounded, its bubbles named), and a comparison's sides cut
// to one iteration (docs/zbview.md §8). Synchronous: every call opens its own read-only
// connection (store.h: one Store per thread), so the app's loader runs them on worker threads,
// and the headless screenshot and the benchmark call them directly.
#ifndef ZBKIT_GUI_STORE_MODEL_H_
#define ZBKIT_GUI_STORE_MODEL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "zbkit/gui/memory_unit.h"
#include "zbkit/schemas/status.h"
#include "zbkit/schemas/store.h"
#include "zbkit/schemas/timeline_index.h"
#include "zbkit/schemas/types.h"

namespace zb::gui {

// What a store item is: the browser's rows and the command line's --schedule/--compare/--frontier
// values.
enum class ItemKind { kSchedule, kTimeline, kCostProfile, kFrontier };

struct ItemRef {
  ItemKind kind = ItemKind::kSchedule;
  int64_t id = 0;
  bool operator==(const ItemRef& other) const { return kind == other.kind && id == other.id; }
  bool operator!=(const ItemRef& other) const { return !(*this == other); }
};

// "schedule 3", "timeline 7", "cost profile 2", "frontier 4".
std::string ItemName(const ItemRef& ref);
// Command-line spelling: "3" or "s3" or "schedule:3" is schedule 3; "t7" or "timeline:7" is
// timeline 7; "f4" or "frontier:4" is frontier 4 (case and surrounding blanks ignored). nullopt
// when it is none of these.
std::optional<ItemRef> ParseItemSpec(std::string_view text);

// Everything a store lists, without loading any ops.
struct StoreListing {
  std::string path;
  std::vector<ScheduleInfo> schedules;
  std::vector<TimelineInfo> timelines;
  std::vector<CostProfileInfo> profiles;
  std::vector<FrontierInfo> frontiers;
  std::vector<RunInfo> runs;  // so that a run's timelines show under its job

  // Nothing to draw: no schedule, timeline or frontier (cost profiles are only tables).
  bool empty() const { return schedules.empty() && timelines.empty() && frontiers.empty(); }
  const ScheduleInfo* FindSchedule(int64_t id) const;
  const TimelineInfo* FindTimeline(int64_t id) const;
  const CostProfileInfo* FindProfile(int64_t id) const;
  const FrontierInfo* FindFrontier(int64_t id) const;
  bool Contains(const ItemRef& ref) const;
  // The most recent schedule, run or frontier: highest created_at, then (in the same millisecond)
  // frontier over run over schedule, then highest id. A predicted timeline linked to a schedule is
  // that schedule's own prediction, so it stands for the schedule. A frontier is recorded after
  // the schedules of its points, so `zb tune --frontier` opens on its plot. Without
  // `with_frontiers`, only schedules and runs count (what a comparison starts from). nullopt for
  // a store with nothing of that to draw.
  std::optional<ItemRef> MostRecent(bool with_frontiers = true) const;
  // Bytes when a cost profile of the job was measured or estimated from the real job (its memory
  // figures are bytes), else the profile's own units (docs/zbview.md §10).
  MemoryUnit MemoryUnitOf(const std::string& cluster, const std::string& job) const;
};

// One idle stretch of a rank and why it ended (TimelineIndex::WaitedFor): what a person asks of
// a bubble.
struct BubbleNote {
  int rank = 0;
  TimeNs start = 0;
  TimeNs end = 0;
  std::string before;      // the op that ended the bubble, e.g. "B stage 3 mb 0", "" at the end
  std::string waited_for;  // e.g. "F stage 2 mb 0 on rank 2", "" when unknown
};

// A loaded item with everything the views and the summary need.
struct LoadedItem {
  ItemRef ref;
  std::string store_path;
  std::string title;        // "schedule 3: zb-v p=8 m=24 v=2"
  std::string context;      // "cluster/job", "" when unknown
  std::string short_label;  // "predicted", "measured", "1f1b", ...: a pane's title
  std::shared_ptr<const TimelineIndex> index;  // null for a cost profile
  std::optional<ScheduleInfo>
      schedule;  // the item's schedule, or the one its timeline is linked to
  std::optional<TimelineInfo> timeline;    // for a timeline item
  std::optional<CostProfileInfo> profile;  // for a cost-profile item, or a frontier's profile
  std::optional<CostProfile> costs;  // per scheduled stage; the profile itself for a profile item
  // For a frontier item (which has no index): its listing row and its points.
  std::optional<FrontierInfo> frontier_info;
  std::shared_ptr<const Frontier> frontier;
  std::vector<double> caps;                            // per rank; empty = no cap known
  MemoryUnit memory_unit = MemoryUnit::kProfileUnits;  // of caps, peaks, M_B (units.h)
  std::optional<Prediction> figures;                   // makespan, bubbles, peak memory per rank
  std::vector<TimeNs> rank_busy;                       // compute busy time per rank
  TimeNs lower_bound = 0;           // makespan lower bound under the caps, 0 = unknown
  std::vector<BubbleNote> bubbles;  // the largest idle stretches, longest first
  double load_ms = 0;               // wall time of the load, for the status bar

  std::optional<double> TOverLb() const;
};

// Reports progress (0..100) and a short text; returns false to abandon the work (cancelled).
using ProgressFn = std::function<bool(int percent, const std::string& text)>;
// Whether a load's status says its ProgressFn abandoned it (nothing to show anyone).
bool IsCancelledLoad(const Status& status);

// Opens `path` read-only and lists its schedules, timelines, cost profiles and frontiers.
Expected<StoreListing> ReadListing(const std::string& path);
// Loads one item of an already listed store. kNotFound when the listing does not hold it.
// kInternal("cancelled") when `progress` returned false.
// Comparing a prediction with a measured run of several iterations compares one iteration
// (docs/zbview.md §8). kMedianIteration picks MedianIteration; kWholeRun keeps the item.
inline constexpr int kMedianIteration = -1;
inline constexpr int kWholeRun = -2;
// `item` as one of its iterations: the iteration's own index (ExtractIteration), figures, busy
// and bubbles, "iteration N of M" in its title and pane label. The item itself when it has no
// index, one iteration, or `iteration` is kWholeRun.
std::shared_ptr<const LoadedItem> OneIteration(std::shared_ptr<const LoadedItem> item,
                                               int iteration);
// The side of a comparison that ComparedSides cuts to one iteration: a measured run of several
// iterations compared with a prediction; null when neither is.
const LoadedItem* IterationSide(const LoadedItem& a, const LoadedItem& b);
// The sides a comparison shows: a measured side of several iterations against a predicted one is
// cut to `iteration` (default the median); two measured runs, or two predictions, stay whole.
std::pair<std::shared_ptr<const LoadedItem>, std::shared_ptr<const LoadedItem>> ComparedSides(
    std::shared_ptr<const LoadedItem> a, std::shared_ptr<const LoadedItem> b,
    int iteration = kMedianIteration);

Expected<LoadedItem> LoadItem(const StoreListing& listing, const ItemRef& ref,
                              const ProgressFn& progress = nullptr);
// "frontier 4: search vs heuristic, m=8, by span, caps 1x-3x": a frontier's title.
std::string FrontierTitle(const FrontierInfo& info, const Frontier* frontier = nullptr);
// The one-line message for a store that holds nothing to draw.
std::string EmptyStoreMessage(const std::string& path);

// The largest `count` idle stretches of the index's ranks (inside [0, makespan]), longest first.
std::vector<BubbleNote> FindBubbles(const TimelineIndex& index, TimeNs makespan, int count);

}  // namespace zb::gui

#endif  // ZBKIT_GUI_STORE_MODEL_H_
