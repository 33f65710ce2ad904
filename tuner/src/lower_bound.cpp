// SPDX-License-Identifier: Apache-2.0
#include "zbkit/tuner/lower_bound.h"

#include <algorithm>
#include <cmath>

namespace zb::tuner {

LowerBounds ComputeLowerBounds(const CostProfile& costs, int ranks, int microbatches,
                               Placement placement, const std::vector<double>& rank_caps) {
  const int num_stages = costs.num_stages();
  const int p = ranks;
  const int v = num_stages / p;
  const double m = microbatches;
  const std::vector<StageCost>& stage = costs.stages;
  // Where a stage's fused backward was measured (StageCost::bw), a schedule may run it in place of
  // B and W, so every term below takes the shorter of the two ways: the bound stays a bound.
  auto fused = [&](int s) { return stage[s].bw > 0; };
  auto b_min = [&](int s) { return fused(s) ? std::min(stage[s].b, stage[s].bw) : stage[s].b; };
  auto backward_min = [&](int s) {  // B and W of one microbatch, split or fused
    const TimeNs split = stage[s].b + stage[s].w;
    return fused(s) ? std::min(split, stage[s].bw) : split;
  };
  auto hop = [&](int from) {  // latency of the edge from stage `from` to stage `from + 1`
    return RankOfStage(placement, p, from) != RankOfStage(placement, p, from + 1) ? costs.comm : 0;
  };

  // head[s]: earliest start of stage s's first F; round_trip[s]: from the end of F(s, j) to the
  // start of B(s, j) at the earliest; b_chain[s]: from the end of B(s, j) to the end of B(0, j).
  std::vector<TimeNs> head(num_stages, 0), round_trip(num_stages, 0), b_chain(num_stages, 0);
  for (int s = 1; s < num_stages; ++s)
    head[s] = head[s - 1] + stage[s - 1].f + hop(s - 1);
  for (int s = num_stages - 2; s >= 0; --s) {
    round_trip[s] = round_trip[s + 1] + stage[s + 1].f + b_min(s + 1) + 2 * hop(s);
  }
  for (int s = 1; s < num_stages; ++s)
    b_chain[s] = b_chain[s - 1] + hop(s - 1) + b_min(s - 1);

  double makespan = 0;
  double span = 0;
  for (int s = 0; s < num_stages; ++s) {
    // The path ends with stage 0's last weight pass, whose reduction follows it.
    const double critical = static_cast<double>(head[s]) + m * stage[s].f + round_trip[s] +
                            b_min(s) + b_chain[s] + (backward_min(0) - b_min(0)) +
                            static_cast<double>(stage[0].reduce);
    makespan = std::max(makespan, critical);
  }
  for (int d = 0; d < p; ++d) {
    std::vector<int> stages;
    for (int chunk = 0; chunk < v; ++chunk)
      stages.push_back(StageOfChunk(placement, p, d, chunk));
    TimeNs first_start = head[stages[0]];
    double work = 0;
    double held = 0;  // memory x time that m microbatches must hold on this rank
    for (int s : stages) {
      first_start = std::min(first_start, head[s]);
      work += m * static_cast<double>(stage[s].f + backward_min(s));
      const double a = stage[s].m_b;
      const double a_minus_b = stage[s].m_w;
      double backward_held = static_cast<double>(stage[s].b) * a +
                             static_cast<double>(stage[s].w) * a_minus_b;  // split: M_W until W
      if (fused(s)) backward_held = std::min(backward_held, static_cast<double>(stage[s].bw) * a);
      held += m * (static_cast<double>(stage[s].f + round_trip[s]) * a + backward_held);
    }
    // The data-parallel work (docs/data-parallel.md §5): the rank's last op is some stage's last
    // weight pass, whose reduction follows it; in place every reduction holds the rank. Its first
    // op waits for its stage's all-gather.
    TimeNs reduce_min = stage[stages[0]].reduce;
    TimeNs reduce_sum = 0;
    TimeNs unshard_min = stage[stages[0]].unshard;
    for (int s : stages) {
      reduce_min = std::min(reduce_min, stage[s].reduce);
      reduce_sum += stage[s].reduce;
      unshard_min = std::min(unshard_min, stage[s].unshard);
    }
    work +=
        static_cast<double>(costs.reduce_wait == ReduceWait::kInPlace ? reduce_sum : reduce_min);
    first_start = std::max(first_start, unshard_min);
    double busy_bound = work;  // LB1 without the head
    if (v == 1) {
      const int s = stages[0];
      const double cap = rank_caps.empty() ? INFINITY : rank_caps[d];
      double forwards_that_fit = m;
      if (stage[s].m_b > 0 && std::isfinite(cap)) {
        forwards_that_fit = std::min(m, std::floor(cap / stage[s].m_b));
      }
      const double window = static_cast<double>(stage[s].f + round_trip[s]);
      busy_bound += std::max(0.0, window - forwards_that_fit * static_cast<double>(stage[s].f));
    }
    double memory_bound = 0;  // LB2 without the head
    const double cap = rank_caps.empty() ? INFINITY : rank_caps[d];
    if (std::isfinite(cap) && cap > 0) memory_bound = held / cap;
    const double rank_span = std::max(busy_bound, memory_bound);
    span = std::max(span, rank_span);
    makespan = std::max(makespan, static_cast<double>(first_start) + rank_span);
  }
  return {static_cast<TimeNs>(std::ceil(makespan)), static_cast<TimeNs>(std::ceil(span))};
}

}  // namespace zb::tuner
