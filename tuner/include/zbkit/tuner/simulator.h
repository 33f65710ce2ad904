// SPDX-License-Identifier: Apache-2.0
// The schedule simulator: given each rank's op order, the per-stage costs and the hop latency,
// computes when every op starts and ends (each op as early as its rank and its dependencies
// allow), the peak activation memory of every rank, and the summary figures.
//
// Dependencies (docs/cost-model.md §3):  F(s,j) <- F(s-1,j);  B(s,j) <- B(s+1,j);  B(last,j) <-
// F(last,j); W(s,j) <- B(s,j); a BW op stands for both B and W. An edge between two ranks adds the
// comm latency; an edge within a rank (the V turn, B after F on the last stage) does not. Ops on a
// rank run one at a time in the given order. An order that can never finish is a deadlock, reported
// with the ops each rank is stuck on.
//
// The sweep is event driven and O(ops): each rank runs until its next op waits on an op that has
// not run yet, and is woken when that op completes.
//
// A pipeline inside data parallelism (stages with reduce/unshard costs, docs/data-parallel.md §5)
// adds each rank's collectives on a resource of their own, one at a time, where torch's runtime
// issues them (data_parallel.h): FSDP's all-gather of a stage when it enters the rank's unshard
// window (the stage's next op waits for it), the stage's gradient reduction after its last W or
// BW (the rank's next op waits for it under ReduceWait::kInPlace, only the step's end under
// kStepEnd). A rank ends when its last op and its last collective have. Without such costs the
// simulation is what it was.
#ifndef ZBKIT_TUNER_SIMULATOR_H_
#define ZBKIT_TUNER_SIMULATOR_H_

#include <cstdint>
#include <vector>

#include "zbkit/schemas/dependencies.h"
#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"
#include "zbkit/tuner/data_parallel.h"

namespace zb::tuner {

struct SimulationOptions {
  // Reproduces the authors' 1F1B-I simulation (efficiency.py on the ZB repo's arxiv branch): the
  // wrap-around edge between stage k*p-1 and k*p (and its mirror for B) is enforced only for the
  // first microbatch of each group of p. Physically wrong; exists only so `zb bench paper` can
  // show the published 1F1B-I column next to the correct value.
  bool paper_interleaved_quirk = false;
};

// Per-rank figures beyond Prediction, for tables and tests.
struct RankFigures {
  TimeNs busy = 0;           // sum of op durations
  TimeNs first_f_start = 0;  // start of the rank's first F (or first op)
  TimeNs end = 0;            // end of the rank's last op or collective, whichever is later
  TimeNs collectives = 0;    // time its data-parallel collectives took (reduce + unshard)
  double peak_memory = 0;    // max prefix sum of memory deltas along the rank's order
};

class Simulator {
 public:
  // Fills start/end of every op of `schedule` and sets schedule.predicted. The schedule must be
  // structurally valid (ValidateSchedule); on a deadlock returns kInfeasible naming stuck ops.
  Status Run(Schedule& schedule, const SimulationOptions& options = {});

  // Figures of the last successful Run().
  const std::vector<RankFigures>& ranks() const { return rank_figures_; }

 private:
  void IndexOps(const Schedule& schedule);
  int64_t DependencySlot(const Op& op, int stage) const;
  Status RunOps(Schedule& schedule);
  void PrepareDataParallel(const Schedule& schedule);
  // The collectives rank r issues before ops[position] (its unshards) and after it (a reduction).
  void IssueUnshards(const Schedule& schedule, int r, size_t position);
  void IssueReduction(const Schedule& schedule, int r, size_t position, TimeNs done);
  Status CheckFinished(const Schedule& schedule) const;
  void ComputeFigures(Schedule& schedule);

  DependencyRule rule_;
  int num_stages_ = 0;
  int microbatches_ = 0;
  // Reused between runs so that repeated simulation (search, benchmarks) does not allocate.
  std::vector<int64_t> op_index_;      // (kind, stage, microbatch) -> flat op id, -1 if absent
  std::vector<TimeNs> op_end_;         // per flat op id, -1 until it ran
  std::vector<int32_t> waiting_rank_;  // per flat op id, the rank blocked on it, -1 if none
  std::vector<int64_t> rank_offset_;   // flat op id of each rank's first op
  std::vector<size_t> position_;       // next op to run per rank
  std::vector<TimeNs> clock_;
  std::vector<int32_t> ready_;
  std::vector<RankFigures> rank_figures_;
  // Data parallelism, only where the costs have such work (data_parallel_):
  bool data_parallel_ = false;
  std::vector<std::vector<UnshardWindow>> windows_;  // per rank and position
  std::vector<std::vector<int32_t>> reductions_;     // per rank and position, stage or -1
  std::vector<std::vector<int32_t>> unsharded_;      // per rank, the stages held unsharded
  std::vector<size_t> unshards_issued_;              // per rank, the position they were for + 1
  std::vector<TimeNs> comm_free_;                    // per rank, when its collectives are done
  std::vector<TimeNs> collective_time_;              // per rank, their total
  std::vector<TimeNs> gathered_at_;                  // per stage, when its all-gather ends
  UnshardStep unshard_step_;                         // IssueUnshards' buffers
};

// Convenience: one simulation with a temporary Simulator.
Status Simulate(Schedule& schedule, const SimulationOptions& options = {});

// Peak activation memory of every rank (max prefix sum along its order, starting from 0).
std::vector<double> PeakMemory(const Schedule& schedule);

}  // namespace zb::tuner

#endif  // ZBKIT_TUNER_SIMULATOR_H_
