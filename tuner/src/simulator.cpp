// SPDX-License-Identifier: Apache-2.0
#include "zbkit/tuner/simulator.h"

#include <algorithm>
#include <optional>
#include <string>

#include "zbkit/schemas/dependencies.h"

namespace zb::tuner {
namespace {

// Slots are indexed by (kind, stage, microbatch) for kind in F, B, W; a BW op fills both its B
// and its W slot, so that "B(s+1, j)" finds it whichever way stage s+1 ran its backward.
inline size_t Slot(int kind, int stage, int microbatch, int num_stages, int microbatches) {
  return (static_cast<size_t>(kind) * num_stages + stage) * microbatches + microbatch;
}

std::string Describe(OpKind kind, int stage, int microbatch) {
  return std::string(OpKindName(kind)) + "(stage " + std::to_string(stage) + ", mb " +
         std::to_string(microbatch) + ")";
}

}  // namespace

Status Simulator::Run(Schedule& schedule, const SimulationOptions& options) {
  IndexOps(schedule);
  // The rule names B(s+1, j) where a fused BW also delivers; its slot holds either.
  rule_ = DependencyRule{};
  rule_.num_stages = schedule.num_stages();
  if (options.paper_interleaved_quirk && schedule.chunks > 1 &&
      schedule.placement == Placement::kLoop) {
    rule_.wrap_period = schedule.ranks;
  }
  PrepareDataParallel(schedule);
  ZB_RETURN_IF_ERROR(RunOps(schedule));
  ZB_RETURN_IF_ERROR(CheckFinished(schedule));
  ComputeFigures(schedule);
  return Status::Ok();
}

// Flat op ids (rank by rank, in order) and the (kind, stage, microbatch) -> id index.
void Simulator::IndexOps(const Schedule& schedule) {
  const int p = schedule.ranks;
  num_stages_ = schedule.num_stages();
  microbatches_ = schedule.microbatches;
  rank_offset_.assign(p + 1, 0);
  for (int r = 0; r < p; ++r) {
    rank_offset_[r + 1] = rank_offset_[r] + static_cast<int64_t>(schedule.programs[r].ops.size());
  }
  const int64_t num_ops = rank_offset_[p];
  op_index_.assign(static_cast<size_t>(3) * num_stages_ * microbatches_, -1);
  for (int r = 0; r < p; ++r) {
    const RankProgram& program = schedule.programs[r];
    for (size_t i = 0; i < program.ops.size(); ++i) {
      const Op& op = program.ops[i];
      const int stage = program.stages[op.chunk];
      const int64_t id = rank_offset_[r] + static_cast<int64_t>(i);
      if (op.kind == OpKind::kBW) {
        op_index_[Slot(1, stage, op.microbatch, num_stages_, microbatches_)] = id;
        op_index_[Slot(2, stage, op.microbatch, num_stages_, microbatches_)] = id;
      } else {
        op_index_[Slot(static_cast<int>(op.kind), stage, op.microbatch, num_stages_,
                       microbatches_)] = id;
      }
    }
  }
  op_end_.assign(num_ops, -1);
  waiting_rank_.assign(num_ops, -1);
  position_.assign(p, 0);
  clock_.assign(p, 0);
  ready_.clear();
  for (int r = p - 1; r >= 0; --r)
    ready_.push_back(r);
}

void Simulator::PrepareDataParallel(const Schedule& schedule) {
  data_parallel_ = schedule.costs.HasDataParallelWork();
  if (!data_parallel_) return;
  const int p = schedule.ranks;
  windows_.clear();
  reductions_.clear();
  for (const RankProgram& program : schedule.programs) {
    windows_.push_back(UnshardWindows(program));
    reductions_.push_back(ReductionsAfter(program, schedule.microbatches));
  }
  unsharded_.assign(p, {});
  unshards_issued_.assign(p, 0);
  comm_free_.assign(p, 0);
  collective_time_.assign(p, 0);
  gathered_at_.assign(num_stages_, 0);
}

// FSDP's window before ops[position] (data_parallel.h): the stages leaving it are resharded (no
// time), each entering one is gathered on the rank's collective resource from the moment the
// rank reaches the op; its ops wait for that (gathered_at_).
void Simulator::IssueUnshards(const Schedule& schedule, int r, size_t position) {
  EnterUnshardWindow(windows_[r][position], unsharded_[r], unshard_step_);
  for (int32_t stage : unshard_step_.unsharded) {
    const TimeNs cost = schedule.costs.stages[stage].unshard;
    if (cost == 0) continue;  // not FSDP: nothing to gather
    comm_free_[r] = std::max(clock_[r], comm_free_[r]) + cost;
    collective_time_[r] += cost;
    gathered_at_[stage] = comm_free_[r];
  }
}

// The reduction of the stage whose last weight pass ops[position] is, from when it ended
// (`done`) and the resource is free; under kInPlace the rank's next op waits for it.
void Simulator::IssueReduction(const Schedule& schedule, int r, size_t position, TimeNs done) {
  const int32_t stage = reductions_[r][position];
  if (stage < 0) return;
  const TimeNs cost = schedule.costs.stages[stage].reduce;
  if (cost == 0) return;
  comm_free_[r] = std::max(done, comm_free_[r]) + cost;
  collective_time_[r] += cost;
  if (schedule.costs.reduce_wait == ReduceWait::kInPlace) clock_[r] = comm_free_[r];
}

// The slot of the op `op` waits for (zbkit/schemas/dependencies.h), -1 when it has none.
int64_t Simulator::DependencySlot(const Op& op, int stage) const {
  const std::optional<Dependency> dep = WaitsFor(op.kind, stage, op.microbatch, rule_);
  if (!dep) return -1;  // also COMM, which ValidateSchedule rejects
  return static_cast<int64_t>(
      Slot(static_cast<int>(dep->kind), dep->stage, dep->microbatch, num_stages_, microbatches_));
}

// Runs each rank as far as its dependencies allow; a rank blocked on an op that has not run waits
// on it and is made ready again when it ends.
Status Simulator::RunOps(Schedule& schedule) {
  const std::vector<StageCost>& costs = schedule.costs.stages;
  const TimeNs comm = schedule.costs.comm;
  while (!ready_.empty()) {
    const int r = ready_.back();
    ready_.pop_back();
    RankProgram& program = schedule.programs[r];
    size_t& position = position_[r];
    TimeNs& clock = clock_[r];
    while (position < program.ops.size()) {
      if (data_parallel_ && unshards_issued_[r] <= position) {
        IssueUnshards(schedule, r, position);  // once, when the rank first reaches the op
        unshards_issued_[r] = position + 1;
      }
      Op& op = program.ops[position];
      const int stage = program.stages[op.chunk];
      const int64_t slot = DependencySlot(op, stage);
      TimeNs ready_at = 0;
      if (slot >= 0) {
        const int64_t dep = op_index_[slot];
        if (dep < 0) {
          return InvalidInput("rank " + std::to_string(r) + " op " + std::to_string(position) +
                              " " + Describe(op.kind, stage, op.microbatch) +
                              " depends on an op that is not in the schedule");
        }
        if (op_end_[dep] < 0) {
          waiting_rank_[dep] = r;
          break;
        }
        const bool same_rank = dep >= rank_offset_[r] && dep < rank_offset_[r + 1];
        ready_at = op_end_[dep] + (same_rank ? 0 : comm);
      }
      if (data_parallel_) ready_at = std::max(ready_at, gathered_at_[stage]);
      op.start = std::max(clock, ready_at);
      op.end = op.start + costs[stage].Duration(op.kind);
      clock = op.end;
      if (data_parallel_) IssueReduction(schedule, r, position, op.end);
      const int64_t id = rank_offset_[r] + static_cast<int64_t>(position);
      op_end_[id] = op.end;
      if (waiting_rank_[id] >= 0) {
        ready_.push_back(waiting_rank_[id]);
        waiting_rank_[id] = -1;
      }
      ++position;
    }
  }
  return Status::Ok();
}

// Any rank that did not finish is stuck behind an op that can never run: name each.
Status Simulator::CheckFinished(const Schedule& schedule) const {
  std::string stuck;
  for (int r = 0; r < schedule.ranks; ++r) {
    const RankProgram& program = schedule.programs[r];
    if (position_[r] == program.ops.size()) continue;
    const Op& op = program.ops[position_[r]];
    const int stage = program.stages[op.chunk];
    const int64_t dep = op_index_[DependencySlot(op, stage)];
    int dep_rank = 0;
    while (dep >= rank_offset_[dep_rank + 1])
      ++dep_rank;
    const Op& dep_op = schedule.programs[dep_rank].ops[dep - rank_offset_[dep_rank]];
    const int dep_stage = schedule.programs[dep_rank].stages[dep_op.chunk];
    if (!stuck.empty()) stuck += "; ";
    stuck += "rank " + std::to_string(r) + " op " + std::to_string(position_[r]) + " " +
             Describe(op.kind, stage, op.microbatch) + " waits for " +
             Describe(dep_op.kind, dep_stage, dep_op.microbatch) + " (rank " +
             std::to_string(dep_rank) + " op " + std::to_string(dep - rank_offset_[dep_rank]) + ")";
  }
  if (!stuck.empty()) return Infeasible("deadlock: " + stuck);
  return Status::Ok();
}

// Per-rank figures and the schedule's prediction, from the simulated times.
void Simulator::ComputeFigures(Schedule& schedule) {
  const std::vector<StageCost>& costs = schedule.costs.stages;
  rank_figures_.assign(schedule.ranks, RankFigures{});
  Prediction prediction;
  TimeNs max_busy = 0;
  for (int r = 0; r < schedule.ranks; ++r) {
    const RankProgram& program = schedule.programs[r];
    RankFigures& figures = rank_figures_[r];
    double memory = 0;
    bool seen_f = false;
    for (const Op& op : program.ops) {
      const StageCost& cost = costs[program.stages[op.chunk]];
      figures.busy += op.end - op.start;
      memory += cost.MemoryDelta(op.kind);
      figures.peak_memory = std::max(figures.peak_memory, memory);
      if (!seen_f && op.kind == OpKind::kF) {
        figures.first_f_start = op.start;
        seen_f = true;
      }
    }
    if (!program.ops.empty()) {
      figures.end = program.ops.back().end;
      if (!seen_f) figures.first_f_start = program.ops.front().start;
    }
    if (data_parallel_) {
      figures.end = std::max(figures.end, comm_free_[r]);
      figures.collectives = collective_time_[r];
    }
    max_busy = std::max(max_busy, figures.busy);
    prediction.makespan = std::max(prediction.makespan, figures.end);
    prediction.span = std::max(prediction.span, figures.end - figures.first_f_start);
    prediction.peak_memory.push_back(figures.peak_memory);
  }
  auto rate = [max_busy](TimeNs span) {
    return span > 0 ? static_cast<double>(span - max_busy) / static_cast<double>(span) : 0.0;
  };
  prediction.bubble_rate = rate(prediction.makespan);
  prediction.paper_bubble_rate = rate(prediction.span);
  schedule.predicted = std::move(prediction);
}

Status Simulate(Schedule& schedule, const SimulationOptions& options) {
  Simulator simulator;
  return simulator.Run(schedule, options);
}

std::vector<double> PeakMemory(const Schedule& schedule) {
  std::vector<double> peaks;
  for (const RankProgram& program : schedule.programs) {
    double memory = 0;
    double peak = 0;
    for (const Op& op : program.ops) {
      memory += schedule.costs.stages[program.stages[op.chunk]].MemoryDelta(op.kind);
      peak = std::max(peak, memory);
    }
    peaks.push_back(peak);
  }
  return peaks;
}

}  // namespace zb::tuner
