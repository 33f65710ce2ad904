// SPDX-License-Identifier: Apache-2.0
#include "zbkit/gui/store_model.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <system_error>
#include <tuple>

#include "zbkit/schemas/op_text.h"
#include "zbkit/schemas/timeline_analysis.h"
#include "zbkit/schemas/validate.h"
#include "zbkit/tuner/lower_bound.h"
#include "zbkit/tuner/simulator.h"

namespace zb::gui {
namespace {

// The status a load returns when its ProgressFn asked it to stop; never shown to anyone.
constexpr const char* kCancelled = "cancelled";

Status Cancelled() {
  return InternalError(kCancelled);
}

std::string FileName(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

std::string WithThousands(int64_t value) {
  const std::string digits = std::to_string(value < 0 ? -value : value);
  std::string grouped = value < 0 ? "-" : "";
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) grouped += ',';
    grouped += digits[i];
  }
  return grouped;
}

std::string DescribeOp(const TimelineLane& lane, size_t i) {
  return FormatOp(lane.kind_of[i], lane.stage_of[i], lane.microbatch[i]);
}

bool HasTimes(const Schedule& schedule) {
  if (!schedule.predicted) return false;
  for (const RankProgram& program : schedule.programs) {
    for (const Op& op : program.ops) {
      if (op.end > 0) return true;
    }
  }
  return false;
}

// Fills what every item with a timeline has: the index-derived figures the summary shows.
void FinishTimelineItem(LoadedItem& item) {
  if (!item.figures) item.figures = item.index->Figures();
  item.rank_busy = item.index->rank_busy();
  item.bubbles = FindBubbles(*item.index, item.figures->makespan, 5);
}

void ComputeBound(LoadedItem& item, const Schedule& schedule) {
  if (schedule.costs.num_stages() != schedule.num_stages() || schedule.ranks < 1 ||
      schedule.microbatches < 1) {
    return;
  }
  const tuner::LowerBounds bounds = tuner::ComputeLowerBounds(
      schedule.costs, schedule.ranks, schedule.microbatches, schedule.placement, item.caps);
  item.lower_bound = bounds.makespan;
}

std::string ScheduleTitle(const ScheduleInfo& info) {
  std::string title = "schedule " + std::to_string(info.id) + ": " +
                      (info.family.empty() ? std::string("unnamed") : info.family) +
                      ", p=" + std::to_string(info.ranks) +
                      " m=" + std::to_string(info.microbatches);
  if (info.chunks > 1) title += " v=" + std::to_string(info.chunks);
  return title;
}

Expected<LoadedItem> LoadSchedule(const StoreListing& listing, Store& store,
                                  const ScheduleInfo& info, const ProgressFn& step) {
  if (!step(5, "reading schedule " + std::to_string(info.id) + " (" + WithThousands(info.num_ops) +
                   " ops)")) {
    return Cancelled();
  }
  ZB_ASSIGN_OR_RETURN(Schedule schedule, store.LoadSchedule(info.id));
  LoadedItem item;
  item.ref = {ItemKind::kSchedule, info.id};
  item.store_path = listing.path;
  item.title = ScheduleTitle(info);
  item.context = info.cluster + "/" + info.job;
  item.short_label = info.family.empty() ? "schedule " + std::to_string(info.id) : info.family;
  item.schedule = info;
  item.caps = info.rank_caps;
  item.memory_unit = listing.MemoryUnitOf(info.cluster, info.job);
  if (!HasTimes(schedule)) {
    // A schedule stored without a prediction (e.g. imported orders): time it like `zb show`.
    if (!step(35, "simulating schedule " + std::to_string(info.id))) return Cancelled();
    const std::string where = listing.path + ": schedule " + std::to_string(info.id);
    ZB_RETURN_IF_ERROR(ValidateSchedule(schedule).WithContext(where));
    ZB_RETURN_IF_ERROR(tuner::Simulate(schedule).WithContext(where));
  }
  if (!step(50, "building the timeline")) return Cancelled();
  std::shared_ptr<const TimelineIndex> index;
  {
    Timeline timeline = TimelineFromSchedule(schedule);
    if (!step(65,
              "indexing " + WithThousands(static_cast<int64_t>(timeline.ops.size())) + " ops")) {
      return Cancelled();
    }
    index =
        std::make_shared<const TimelineIndex>(timeline, schedule.costs.comm, schedule.num_stages());
  }
  item.index = std::move(index);
  // The simulator's figures are the reference the tuner printed and the store lists.
  item.figures = schedule.predicted;
  item.costs = schedule.costs;
  ComputeBound(item, schedule);
  if (!step(90, "summarising")) return Cancelled();
  FinishTimelineItem(item);
  return item;
}

Expected<LoadedItem> LoadTimeline(const StoreListing& listing, Store& store,
                                  const TimelineInfo& info, const ProgressFn& step) {
  LoadedItem item;
  item.ref = {ItemKind::kTimeline, info.id};
  item.store_path = listing.path;
  item.timeline = info;
  const std::string kind = TimelineKindName(info.kind);
  item.title = "timeline " + std::to_string(info.id) + ": " + kind + ", " +
               WithThousands(info.num_ops) + " ops";
  item.short_label = kind;  // the pane title; the id is in the title and the browser
  if (info.run_id) {
    for (const RunInfo& run : listing.runs) {
      if (run.id == *info.run_id) item.memory_unit = listing.MemoryUnitOf(run.cluster, run.job);
    }
  }

  // The linked schedule gives the costs (hop latency for the wait links, the cost table, the
  // bound) and the cap. Loaded first so that its ops are freed before the timeline arrives.
  TimeNs comm = 0;
  int num_stages = 0;
  const ScheduleInfo* linked = info.schedule_id ? listing.FindSchedule(*info.schedule_id) : nullptr;
  if (linked != nullptr) {
    if (!step(5, "reading the costs of schedule " + std::to_string(linked->id))) {
      return Cancelled();
    }
    ZB_ASSIGN_OR_RETURN(Schedule schedule, store.LoadSchedule(linked->id));
    item.schedule = *linked;
    item.caps = linked->rank_caps;
    item.memory_unit = listing.MemoryUnitOf(linked->cluster, linked->job);
    item.context = linked->cluster + "/" + linked->job;
    item.title += " of " + ScheduleTitle(*linked);
    comm = schedule.costs.comm;
    num_stages = schedule.num_stages();
    item.costs = schedule.costs;
    ComputeBound(item, schedule);
  }
  if (!step(20, "reading timeline " + std::to_string(info.id) + " (" + WithThousands(info.num_ops) +
                    " ops)")) {
    return Cancelled();
  }
  std::shared_ptr<const TimelineIndex> index;
  {
    ZB_ASSIGN_OR_RETURN(Timeline timeline, store.LoadTimeline(info.id));
    if (!step(60,
              "indexing " + WithThousands(static_cast<int64_t>(timeline.ops.size())) + " ops")) {
      return Cancelled();
    }
    index = std::make_shared<const TimelineIndex>(timeline, comm, num_stages);
  }
  item.index = std::move(index);
  if (!step(90, "summarising")) return Cancelled();
  FinishTimelineItem(item);
  return item;
}

Expected<LoadedItem> LoadProfile(const StoreListing& listing, Store& store,
                                 const CostProfileInfo& info, const ProgressFn& step) {
  if (!step(10, "reading cost profile " + std::to_string(info.id))) return Cancelled();
  ZB_ASSIGN_OR_RETURN(CostProfile costs, store.LoadCostProfile(info.id));
  LoadedItem item;
  item.ref = {ItemKind::kCostProfile, info.id};
  item.store_path = listing.path;
  item.title = "cost profile " + std::to_string(info.id) + ": " + info.name;
  item.context = info.cluster + "/" + info.job;
  item.short_label = info.name;
  item.profile = info;
  item.memory_unit = listing.MemoryUnitOf(info.cluster, info.job);
  item.costs = std::move(costs);
  return item;
}

Expected<LoadedItem> LoadFrontierItem(const StoreListing& listing, Store& store,
                                      const FrontierInfo& info, const ProgressFn& step) {
  if (!step(10, "reading frontier " + std::to_string(info.id) + " (" +
                    std::to_string(info.num_points) + " points)")) {
    return Cancelled();
  }
  ZB_ASSIGN_OR_RETURN(Frontier frontier, store.LoadFrontier(info.id));
  LoadedItem item;
  item.ref = {ItemKind::kFrontier, info.id};
  item.store_path = listing.path;
  item.title = FrontierTitle(info, &frontier);
  item.context = info.cluster + "/" + info.job;
  item.short_label = "frontier " + std::to_string(info.id);
  item.frontier_info = info;
  // The costs it was computed from, for the summary's cost table.
  if (!step(60, "reading cost profile " + std::to_string(info.cost_profile_id))) {
    return Cancelled();
  }
  ZB_ASSIGN_OR_RETURN(item.costs, store.LoadCostProfile(info.cost_profile_id));
  if (const CostProfileInfo* profile = listing.FindProfile(info.cost_profile_id)) {
    item.profile = *profile;
  }
  item.frontier = std::make_shared<const Frontier>(std::move(frontier));
  return item;
}

}  // namespace

std::string FrontierTitle(const FrontierInfo& info, const Frontier* frontier) {
  std::string title = "frontier " + std::to_string(info.id) + ": ";
  if (frontier != nullptr) {
    std::vector<std::string> methods;
    for (const FrontierPoint& point : frontier->points) {
      if (std::find(methods.begin(), methods.end(), point.method) == methods.end()) {
        methods.push_back(point.method);
      }
    }
    for (size_t i = 0; i < methods.size(); ++i)
      title += (i == 0 ? "" : " vs ") + methods[i];
    title += ", ";
  }
  const auto factor = [](double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", value);
    return std::string(text) + "x";
  };
  title += "m=" + std::to_string(info.microbatches) + ", by " + info.objective + ", " +
           info.placement + " placement, caps " + factor(info.min_cap_factor) + "-" +
           factor(info.max_cap_factor);
  return title;
}

bool IsCancelledLoad(const Status& status) {
  return status.code() == ErrorCode::kInternal && status.message() == kCancelled;
}

std::string ItemName(const ItemRef& ref) {
  const std::string id = std::to_string(ref.id);
  switch (ref.kind) {
    case ItemKind::kSchedule:
      return "schedule " + id;
    case ItemKind::kTimeline:
      return "timeline " + id;
    case ItemKind::kCostProfile:
      return "cost profile " + id;
    case ItemKind::kFrontier:
      return "frontier " + id;
  }
  return {};
}

std::optional<ItemRef> ParseItemSpec(std::string_view text) {
  const auto blank = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!text.empty() && blank(text.front()))
    text.remove_prefix(1);
  while (!text.empty() && blank(text.back()))
    text.remove_suffix(1);
  std::string spec(text);
  for (char& c : spec)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  ItemKind kind = ItemKind::kSchedule;
  for (const auto& [prefix, prefix_kind] :
       {std::pair{"schedule:", ItemKind::kSchedule}, std::pair{"timeline:", ItemKind::kTimeline},
        std::pair{"frontier:", ItemKind::kFrontier}, std::pair{"s", ItemKind::kSchedule},
        std::pair{"t", ItemKind::kTimeline}, std::pair{"f", ItemKind::kFrontier}}) {
    if (std::string_view(spec).substr(0, std::char_traits<char>::length(prefix)) == prefix) {
      spec.erase(0, std::char_traits<char>::length(prefix));
      kind = prefix_kind;
      break;
    }
  }
  // Digits only: no sign (from_chars reads a '-', which id < 1 refuses), no blank, no fraction.
  int64_t id = 0;
  const char* first = spec.data();
  const char* last = spec.data() + spec.size();
  const auto [end, error] = std::from_chars(first, last, id);
  if (error != std::errc() || end != last || id < 1) {
    return std::nullopt;
  }
  return ItemRef{kind, id};
}

const ScheduleInfo* StoreListing::FindSchedule(int64_t id) const {
  for (const ScheduleInfo& info : schedules) {
    if (info.id == id) return &info;
  }
  return nullptr;
}

const TimelineInfo* StoreListing::FindTimeline(int64_t id) const {
  for (const TimelineInfo& info : timelines) {
    if (info.id == id) return &info;
  }
  return nullptr;
}

const CostProfileInfo* StoreListing::FindProfile(int64_t id) const {
  for (const CostProfileInfo& info : profiles) {
    if (info.id == id) return &info;
  }
  return nullptr;
}

const FrontierInfo* StoreListing::FindFrontier(int64_t id) const {
  for (const FrontierInfo& info : frontiers) {
    if (info.id == id) return &info;
  }
  return nullptr;
}

bool StoreListing::Contains(const ItemRef& ref) const {
  switch (ref.kind) {
    case ItemKind::kSchedule:
      return FindSchedule(ref.id) != nullptr;
    case ItemKind::kTimeline:
      return FindTimeline(ref.id) != nullptr;
    case ItemKind::kCostProfile:
      return FindProfile(ref.id) != nullptr;
    case ItemKind::kFrontier:
      return FindFrontier(ref.id) != nullptr;
  }
  return false;
}

std::optional<ItemRef> StoreListing::MostRecent(bool with_frontiers) const {
  // Ordered by (created_at, frontier-over-timeline-over-schedule, id): a run recorded in the same
  // millisecond as a schedule is the later event, and so is a frontier recorded with its
  // schedules.
  std::optional<std::tuple<std::string, int, int64_t>> best_key;
  std::optional<ItemRef> best;
  auto consider = [&](const std::string& created_at, int rank, const ItemRef& ref) {
    auto key = std::make_tuple(created_at, rank, ref.id);
    if (!best_key || key > *best_key) {
      best_key = std::move(key);
      best = ref;
    }
  };
  for (const ScheduleInfo& info : schedules) {
    consider(info.created_at, 0, {ItemKind::kSchedule, info.id});
  }
  for (const TimelineInfo& info : timelines) {
    const bool own_prediction = info.kind == TimelineKind::kPredicted && info.schedule_id &&
                                FindSchedule(*info.schedule_id) != nullptr;
    if (own_prediction) continue;  // the schedule itself was considered
    consider(info.created_at, 1, {ItemKind::kTimeline, info.id});
  }
  if (with_frontiers) {
    for (const FrontierInfo& info : frontiers) {
      consider(info.created_at, 2, {ItemKind::kFrontier, info.id});
    }
  }
  return best;
}

std::optional<double> LoadedItem::TOverLb() const {
  if (!figures || lower_bound <= 0) return std::nullopt;
  return static_cast<double>(figures->makespan) / static_cast<double>(lower_bound);
}

std::string EmptyStoreMessage(const std::string& path) {
  return path +
         ": the store holds no schedules or timelines yet (add one with `zb tune ... --store " +
         path + "`)";
}

Expected<StoreListing> ReadListing(const std::string& path) {
  // SQLite reads a zero-byte file as an empty database; say what it is instead of the store's
  // generic "no tables".
  std::error_code error;
  if (!path.empty() && std::filesystem::is_regular_file(path, error) &&
      std::filesystem::file_size(path, error) == 0 && !error) {
    return StoreError(path + ": open store: the file is empty (0 bytes), not a zbkit store");
  }
  ZB_ASSIGN_OR_RETURN(Store store, Store::Open(path, Store::Mode::kReadOnly));
  StoreListing listing;
  listing.path = path;
  ZB_ASSIGN_OR_RETURN(listing.schedules, store.ListSchedules());
  ZB_ASSIGN_OR_RETURN(listing.timelines, store.ListTimelines());
  ZB_ASSIGN_OR_RETURN(listing.profiles, store.ListCostProfiles());
  ZB_ASSIGN_OR_RETURN(listing.frontiers, store.ListFrontiers());
  ZB_ASSIGN_OR_RETURN(listing.runs, store.ListRuns());
  return listing;
}

MemoryUnit StoreListing::MemoryUnitOf(const std::string& cluster, const std::string& job) const {
  for (const CostProfileInfo& profile : profiles) {
    if (profile.cluster == cluster && profile.job == job &&
        (profile.memory_source == MemorySource::kMeasured ||
         profile.memory_source == MemorySource::kEstimated)) {
      return MemoryUnit::kBytes;
    }
  }
  return MemoryUnit::kProfileUnits;
}

std::shared_ptr<const LoadedItem> OneIteration(std::shared_ptr<const LoadedItem> item,
                                               int iteration) {
  if (!item || !item->index || item->index->iterations().size() < 2 || iteration == kWholeRun) {
    return item;
  }
  const int32_t chosen = iteration == kMedianIteration ? MedianIteration(*item->index) : iteration;
  auto one = std::make_shared<LoadedItem>(*item);
  one->index = std::make_shared<const TimelineIndex>(ExtractIteration(*item->index, chosen));
  one->figures.reset();
  FinishTimelineItem(*one);
  const std::string which = "iteration " + std::to_string(chosen) + " of " +
                            std::to_string(item->index->iterations().size());
  one->title += " (" + which + ")";
  one->short_label += ", " + which;
  return one;
}

const LoadedItem* IterationSide(const LoadedItem& a, const LoadedItem& b) {
  auto measured = [](const LoadedItem& item) {
    return item.index && item.index->kind() == TimelineKind::kMeasured;
  };
  if (measured(a) == measured(b)) return nullptr;
  const LoadedItem& side = measured(a) ? a : b;
  return side.index->iterations().size() >= 2 ? &side : nullptr;
}

std::pair<std::shared_ptr<const LoadedItem>, std::shared_ptr<const LoadedItem>> ComparedSides(
    std::shared_ptr<const LoadedItem> a, std::shared_ptr<const LoadedItem> b, int iteration) {
  if (!a || !b) return {a, b};
  const LoadedItem* cut = IterationSide(*a, *b);
  if (cut == a.get()) a = OneIteration(a, iteration);
  if (cut == b.get()) b = OneIteration(b, iteration);
  return {a, b};
}

Expected<LoadedItem> LoadItem(const StoreListing& listing, const ItemRef& ref,
                              const ProgressFn& progress) {
  const auto started = std::chrono::steady_clock::now();
  const ProgressFn step = [&progress](int percent, const std::string& text) {
    return !progress || progress(percent, text);
  };
  if (!listing.Contains(ref)) {
    return NotFound(listing.path + ": no " + ItemName(ref) + " in the store");
  }
  if (!step(1, "opening " + FileName(listing.path))) return Cancelled();
  ZB_ASSIGN_OR_RETURN(Store store, Store::Open(listing.path, Store::Mode::kReadOnly));
  Expected<LoadedItem> item = NotFound("");
  switch (ref.kind) {
    case ItemKind::kSchedule:
      item = LoadSchedule(listing, store, *listing.FindSchedule(ref.id), step);
      break;
    case ItemKind::kTimeline:
      item = LoadTimeline(listing, store, *listing.FindTimeline(ref.id), step);
      break;
    case ItemKind::kCostProfile:
      item = LoadProfile(listing, store, *listing.FindProfile(ref.id), step);
      break;
    case ItemKind::kFrontier:
      item = LoadFrontierItem(listing, store, *listing.FindFrontier(ref.id), step);
      break;
  }
  if (!item.ok()) return item.status();
  item->load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  step(100, "loaded " + ItemName(ref));
  return item;
}

std::vector<BubbleNote> FindBubbles(const TimelineIndex& index, TimeNs makespan, int count) {
  std::vector<BubbleNote> notes;
  for (const Bubble& bubble : LongestBubbles(index, makespan, count)) {
    const TimelineLane& lane = index.lane(bubble.lane);
    BubbleNote note;
    note.rank = lane.rank;
    note.start = bubble.start;
    note.end = bubble.end;
    if (bubble.next >= 0) {
      const auto i = static_cast<size_t>(bubble.next);
      note.before = DescribeOp(lane, i);
      if (auto cause = index.WaitedFor(bubble.lane, i)) {
        const TimelineLane& cause_lane = index.lane(cause->lane);
        note.waited_for =
            DescribeOp(cause_lane, cause->index) + " on rank " + std::to_string(cause_lane.rank);
      }
    }
    notes.push_back(std::move(note));
  }
  return notes;
}

}  // namespace zb::gui
