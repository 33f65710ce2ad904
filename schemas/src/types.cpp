// SPDX-License-Identifier: Apache-2.0
#include "zbkit/schemas/types.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace zb {

TimeNs MsToNs(double ms) {
  // Saturates instead of overflowing (llround of a value beyond int64 is undefined): readers
  // then refuse the value by its range (validate.h, kMaxOpTime).
  const double ns = ms * 1e6;
  if (!(ns < 9.2e18)) return ns > 0 ? std::numeric_limits<TimeNs>::max() : 0;
  if (ns < -9.2e18) return std::numeric_limits<TimeNs>::min();
  return static_cast<TimeNs>(std::llround(ns));
}
double NsToMs(TimeNs ns) {
  return static_cast<double>(ns) / 1e6;
}

const char* OpKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kF:
      return "F";
    case OpKind::kB:
      return "B";
    case OpKind::kW:
      return "W";
    case OpKind::kBW:
      return "BW";
    case OpKind::kComm:
      return "COMM";
  }
  return "?";
}

std::optional<OpKind> ParseOpKind(std::string_view name) {
  if (name == "F") return OpKind::kF;
  if (name == "B") return OpKind::kB;
  if (name == "W") return OpKind::kW;
  if (name == "BW") return OpKind::kBW;
  if (name == "COMM") return OpKind::kComm;
  return std::nullopt;
}

bool CostProfile::IsUniform() const {
  for (const StageCost& stage : stages) {
    if (!(stage == stages.front())) return false;
  }
  return true;
}

bool IsCheckpointingMode(std::string_view mode) {
  for (std::string_view known : {"none", "full", "op", "reentrant", "layer", "mixed"}) {
    if (mode == known) return true;
  }
  return false;
}

const char* CheckpointingModeList() {
  return "none, full, op, reentrant, layer, mixed";
}

bool IsBlockCheckpointingMode(std::string_view mode) {
  return IsCheckpointingMode(mode) && mode != "layer" && mode != "mixed";
}

const char* ReduceWaitName(ReduceWait wait) {
  return wait == ReduceWait::kStepEnd ? "step_end" : "in_place";
}

std::optional<ReduceWait> ParseReduceWait(std::string_view name) {
  if (name == "in_place") return ReduceWait::kInPlace;
  if (name == "step_end") return ReduceWait::kStepEnd;
  return std::nullopt;
}

bool CostProfile::HasDataParallelWork() const {
  return std::any_of(stages.begin(), stages.end(),
                     [](const StageCost& stage) { return stage.HasDataParallelWork(); });
}

CostProfile CostProfile::WithoutDataParallelWork() const {
  CostProfile costs = *this;
  for (StageCost& stage : costs.stages) {
    stage.reduce = 0;
    stage.unshard = 0;
    stage.unsharded = 0;
    stage.reduced = 0;
  }
  return costs;
}

CostProfile CostProfile::CostsOnly() const {
  CostProfile costs;
  costs.stages = stages;
  costs.comm = comm;
  costs.checkpointing = checkpointing;
  costs.reduce_wait = reduce_wait;
  return costs;
}

CostProfile CostProfile::SplitStages(int parts) const {
  if (parts <= 1) return CostsOnly();
  CostProfile split;
  split.comm = comm;
  split.checkpointing = checkpointing;
  split.reduce_wait = reduce_wait;
  split.stages.reserve(stages.size() * parts);
  for (const StageCost& stage : stages) {
    // Integer division would lose up to parts-1 ns per stage; give the remainder to the first
    // sub-stages so the sub-stages add up to the original stage exactly.
    for (int part = 0; part < parts; ++part) {
      auto share = [&](TimeNs total) { return total / parts + (part < total % parts ? 1 : 0); };
      StageCost sub;
      sub.f = share(stage.f);
      sub.b = share(stage.b);
      sub.w = share(stage.w);
      sub.bw = share(stage.bw);
      sub.m_b = stage.m_b / parts;
      sub.m_w = stage.m_w / parts;
      // Each sub-stage reduces and gathers its share of the parameters.
      sub.reduce = share(stage.reduce);
      sub.unshard = share(stage.unshard);
      sub.unsharded = stage.unsharded / parts;
      sub.reduced = stage.reduced / parts;
      split.stages.push_back(sub);
    }
  }
  return split;
}

const char* PlacementName(Placement placement) {
  return placement == Placement::kV ? "v" : "loop";
}

std::optional<Placement> ParsePlacement(std::string_view name) {
  if (name == "loop") return Placement::kLoop;
  if (name == "v") return Placement::kV;
  return std::nullopt;
}

std::optional<JobLayout> ParseJobLayout(std::string_view text) {
  if (text == "v") return JobLayout{Placement::kV, 2};
  if (text.substr(0, 5) != "loop:" || text.size() == 5 || text.size() > 7) return std::nullopt;
  int chunks = 0;
  for (char c : text.substr(5)) {
    if (c < '0' || c > '9') return std::nullopt;
    chunks = chunks * 10 + (c - '0');
  }
  if (chunks < 1) return std::nullopt;
  return JobLayout{Placement::kLoop, chunks};
}

std::string JobLayoutName(const JobLayout& layout) {
  return layout.placement == Placement::kV ? "v" : "loop:" + std::to_string(layout.chunks);
}

std::string JobLayoutDescription(const JobLayout& layout) {
  if (layout.placement == Placement::kV) return "2 stages per rank in V placement";
  if (layout.chunks == 1) return "1 stage per rank";
  return std::to_string(layout.chunks) + " stages per rank, interleaved (loop placement)";
}

int StageOfChunk(Placement placement, int ranks, int rank, int chunk) {
  if (placement == Placement::kV) return chunk == 0 ? rank : 2 * ranks - 1 - rank;
  return rank + chunk * ranks;
}

int RankOfStage(Placement placement, int ranks, int stage) {
  if (placement == Placement::kV) return stage < ranks ? stage : 2 * ranks - 1 - stage;
  return stage % ranks;
}

int64_t Schedule::num_ops() const {
  int64_t count = 0;
  for (const RankProgram& program : programs)
    count += static_cast<int64_t>(program.ops.size());
  return count;
}

bool Schedule::operator==(const Schedule& other) const {
  return ranks == other.ranks && microbatches == other.microbatches && chunks == other.chunks &&
         placement == other.placement && family == other.family && costs == other.costs &&
         programs == other.programs && predicted == other.predicted;
}

const char* TimelineKindName(TimelineKind kind) {
  return kind == TimelineKind::kMeasured ? "measured" : "predicted";
}

int32_t TimelineNameTable::Intern(std::string_view name) {
  const auto [it, inserted] =
      ids_.try_emplace(std::string(name), static_cast<int32_t>(names_.size()));
  if (inserted) names_.emplace_back(name);
  return it->second;
}

Timeline TimelineFromSchedule(const Schedule& schedule) {
  Timeline timeline;
  timeline.kind = TimelineKind::kPredicted;
  timeline.ops.reserve(static_cast<size_t>(schedule.num_ops()));
  for (int rank = 0; rank < static_cast<int>(schedule.programs.size()); ++rank) {
    const RankProgram& program = schedule.programs[rank];
    double memory = 0;
    for (const Op& op : program.ops) {
      const int stage = program.stages[op.chunk];
      timeline.ops.push_back({rank, stage, op.kind, op.microbatch, op.start, op.end});
      memory += schedule.costs.stages[stage].MemoryDelta(op.kind);
      timeline.memory.push_back({rank, op.end, memory});
    }
  }
  return timeline;
}

TimeNs HopMeasurement::MedianTime() const {
  if (hops.empty()) return 0;
  std::vector<TimeNs> times;
  times.reserve(hops.size());
  for (const MeasuredHop& hop : hops)
    times.push_back(hop.time);
  std::sort(times.begin(), times.end());
  const size_t mid = times.size() / 2;
  // Halves first: the sum of two int64 nanosecond counts cannot overflow this way.
  return times.size() % 2 ? times[mid] : times[mid - 1] / 2 + times[mid] / 2;
}

}  // namespace zb
