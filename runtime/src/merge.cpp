// SPDX-License-Identifier: Apache-2.0
// libzbrt: merging the ranks' shards of a replay into one run of the store.
#include <sys/stat.h>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zbkit/profiler/shard.h"
#include "zbkit/schemas/range_name.h"
#include "zbkit/schemas/store.h"
#include "zbrt_internal.h"

namespace {

bool IsDirectory(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

// A directory's *.zbshard files, or the ':'-separated list of files.
zb::Expected<std::vector<std::string>> ShardFiles(const std::string& shards) {
  if (IsDirectory(shards)) {
    ZB_ASSIGN_OR_RETURN(std::vector<std::string> files, zb::profiler::ListShards(shards));
    if (files.empty()) return zb::NotFound(shards + ": no *.zbshard files in this directory");
    return files;
  }
  std::vector<std::string> files;
  size_t begin = 0;
  while (begin <= shards.size()) {
    size_t end = shards.find(':', begin);
    if (end == std::string::npos) end = shards.size();
    if (end > begin) files.push_back(shards.substr(begin, end - begin));
    begin = end + 1;
  }
  if (files.empty()) return zb::UsageError("shards: no directory or shard file given");
  return files;
}

// One shard's ops and memory samples, checked against the schedule.
zb::Status AddShard(const std::string& path, const zb::Schedule& schedule,
                    std::vector<bool>& seen_ranks, zb::Timeline& timeline) {
  ZB_ASSIGN_OR_RETURN(zb::profiler::RawTrace trace, zb::profiler::ReadShard(path));
  const int32_t rank = trace.process.rank;
  if (rank < 0 || rank >= schedule.ranks) {
    return zb::InvalidInput(path + ": rank " + std::to_string(rank) +
                            " is not a rank of the schedule (" + std::to_string(schedule.ranks) +
                            " ranks)");
  }
  if (seen_ranks[rank]) {
    return zb::InvalidInput(path + ": a second shard for rank " + std::to_string(rank));
  }
  seen_ranks[rank] = true;
  const std::vector<int32_t>& stages = schedule.programs[rank].stages;
  // The recorder's iteration ranges ("zb:iter:<n>", range_name.h): an op belongs to the one
  // it starts in.
  struct IterationSpan {
    zb::TimeNs start, end;
    int32_t number;
  };
  std::vector<IterationSpan> iterations;
  for (const zb::profiler::TraceRange& range : trace.ranges) {
    const std::optional<zb::RangeName> name = zb::ParseRangeName(range.name);
    if (name && name->role == zb::RangeName::Role::kIteration) {
      iterations.push_back({range.start, range.end, name->iteration});
    }
  }
  auto iteration_of = [&](zb::TimeNs start) -> int32_t {
    for (const IterationSpan& span : iterations) {
      if (span.start <= start && start <= span.end) return span.number;
    }
    return 0;
  };
  for (const zb::profiler::TraceRange& range : trace.ranges) {
    // The runtime's own names (range_name.h): torch's labels, or zbkit's (shards recorded before
    // the runtime took torch's); iterations, transfers and names of other conventions (a shard
    // that also went through the injection library) carry nothing the replay timeline needs.
    std::optional<zb::RangeName> match = zb::ParseTorchActionName(range.name);
    if (!match) match = zb::ParseRangeName(range.name);
    if (!match || match->role != zb::RangeName::Role::kOp) continue;
    if (std::find(stages.begin(), stages.end(), match->stage) == stages.end()) {
      return zb::InvalidInput(path + ": range " + range.name + ": stage " +
                              std::to_string(match->stage) + " is not on rank " +
                              std::to_string(rank));
    }
    if (match->microbatch < 0 || match->microbatch >= schedule.microbatches) {
      return zb::InvalidInput(path + ": range " + range.name + ": microbatch " +
                              std::to_string(match->microbatch) + " is out of range (" +
                              std::to_string(schedule.microbatches) + " microbatches)");
    }
    if (range.end < range.start) {
      return zb::InvalidInput(path + ": range " + range.name + " ends before it begins");
    }
    timeline.ops.push_back({rank, match->stage, match->kind, match->microbatch, range.start,
                            range.end, iteration_of(range.start)});
  }
  int64_t held = 0;  // the shard keeps deltas (runtime/README.md)
  for (const zb::profiler::MemoryEvent& event : trace.memory) {
    held += event.bytes;
    timeline.memory.push_back({rank, event.time, static_cast<double>(held)});
  }
  return zb::Status::Ok();
}

zb::Expected<int64_t> Merge(const std::string& store_path, int64_t schedule_id,
                            const std::string& shards, const std::string& command) {
  // Open() would create a missing store; a replay merges into the store its schedule came from.
  struct stat info {};
  if (stat(store_path.c_str(), &info) != 0) {
    return zb::NotFound(store_path + ": no such store");
  }
  ZB_ASSIGN_OR_RETURN(zb::Store store, zb::Store::Open(store_path));
  ZB_ASSIGN_OR_RETURN(zb::Schedule schedule, store.LoadSchedule(schedule_id));
  // The replay's run belongs to the job that owns the schedule.
  ZB_ASSIGN_OR_RETURN(const zb::ScheduleInfo owner, store.LoadScheduleInfo(schedule_id));
  const int64_t job_id = owner.job_id;
  ZB_ASSIGN_OR_RETURN(std::vector<std::string> files, ShardFiles(shards));

  zb::Timeline timeline;
  timeline.kind = zb::TimelineKind::kMeasured;
  std::vector<bool> seen_ranks(schedule.ranks, false);
  for (const std::string& file : files) {
    ZB_RETURN_IF_ERROR(AddShard(file, schedule, seen_ranks, timeline));
  }
  for (int32_t rank = 0; rank < schedule.ranks; ++rank) {
    if (!seen_ranks[rank]) {
      return zb::NotFound(shards + ": no shard for rank " + std::to_string(rank) + " of " +
                          std::to_string(schedule.ranks));
    }
  }
  if (timeline.ops.empty()) return zb::InvalidInput(shards + ": the shards hold no ops");

  // t = 0 at the first record of any rank, as the store's other timelines start at 0.
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const zb::TimelineOp& op : timeline.ops)
    origin = std::min(origin, op.start);
  for (const zb::MemorySample& sample : timeline.memory)
    origin = std::min(origin, sample.time);
  // Iterations from 0 at the run's first, as the store numbers a measured run's steps.
  int32_t first_iteration = std::numeric_limits<int32_t>::max();
  for (const zb::TimelineOp& op : timeline.ops)
    first_iteration = std::min(first_iteration, op.iteration);
  for (zb::TimelineOp& op : timeline.ops) {
    op.start -= origin;
    op.end -= origin;
    op.iteration -= first_iteration;
  }
  for (zb::MemorySample& sample : timeline.memory)
    sample.time -= origin;
  std::stable_sort(timeline.ops.begin(), timeline.ops.end(),
                   [](const zb::TimelineOp& a, const zb::TimelineOp& b) {
                     return a.rank != b.rank ? a.rank < b.rank : a.start < b.start;
                   });
  std::stable_sort(timeline.memory.begin(), timeline.memory.end(),
                   [](const zb::MemorySample& a, const zb::MemorySample& b) {
                     return a.rank != b.rank ? a.rank < b.rank : a.time < b.time;
                   });

  // One transaction: the run and its measured timeline land together or not at all.
  timeline.kind = zb::TimelineKind::kMeasured;
  return store.RecordMeasuredRun(job_id, schedule_id, command, std::nullopt, timeline);
}

}  // namespace

extern "C" {

zbrt_status zbrt_merge_run(const char* store_path, int64_t schedule_id, const char* shards,
                           const char* command, int64_t* run_id) {
  constexpr const char* kFn = "zbrt_merge_run";
  return zbrt::Guard(kFn, [&]() -> zbrt_status {
    for (auto [value, name] : {std::pair<const void*, const char*>{store_path, "store_path"},
                               {shards, "shards"},
                               {run_id, "run_id"}}) {
      if (value == nullptr) {
        return zbrt::Fail(ZBRT_ERROR_INVALID_ARGUMENT, std::string(kFn) + ": " + name + " is null");
      }
    }
    zb::Expected<int64_t> merged =
        Merge(store_path, schedule_id, shards, command == nullptr ? "" : command);
    if (!merged.ok()) return zbrt::Fail(kFn, merged.status());
    *run_id = *merged;
    return ZBRT_OK;
  });
}

}  // extern "C"
