// SPDX-License-Identifier: Apache-2.0
// The ZB paper's automatic scheduling heuristic (ICLR 2024 §3.1; docs/schedules.md §4), a port of
// the reference repository's Graph.manual_order / initial_solution with per-stage costs and caps.
//
// The heuristic builds every stage's order while timing it: ops are "put" in a round-robin over
// stages, each as early as its stage and its cross-stage input allow. It chooses how many
// warm-up forwards each stage runs (as many as memory allows, knob: one more even if it delays
// the first B), then runs 1F-1B, putting W's into gaps where they fit (knob: also into a smaller
// gap when leaving it would raise the largest cumulative bubble) or to free memory. The grid over
// the three knobs keeps the smallest cost, where cost is the paper's span convention.
#include "zbkit/tuner/zb_auto.h"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "zbkit/tuner/memory_limit.h"  // FitsCap

namespace zb::tuner {
namespace {

enum Pass { kF = 0, kB = 1, kW = 2 };

class ZbGreedy {
 public:
  ZbGreedy(const CostProfile& costs, int microbatches, const std::vector<double>& stage_caps,
           const ZbKnobs& knobs)
      : costs_(costs.stages),
        comm_(costs.comm),
        p_(costs.num_stages()),
        m_(microbatches),
        knobs_(knobs),
        caps_(stage_caps),
        count_(3, std::vector<int>(p_, 0)),
        clock_(p_, 0),
        memory_(p_, 0),
        bubble_(p_, 0),
        end_(3, std::vector<std::vector<TimeNs>>(p_, std::vector<TimeNs>(m_, 0))),
        order_(p_) {
    if (caps_.empty()) {
      // The reference default: room for three microbatches' worth of forwards per microbatch.
      for (const StageCost& stage : costs_)
        caps_.push_back(stage.m_b * m_ * 3);
    }
  }

  Status Run();
  Schedule TakeSchedule();
  TimeNs cost() const { return cost_; }

 private:
  TimeNs Duration(int stage, Pass pass) const {
    return costs_[stage].Duration(static_cast<OpKind>(pass));
  }
  double Delta(int stage, Pass pass) const {
    return costs_[stage].MemoryDelta(static_cast<OpKind>(pass));
  }
  TimeNs MaxBubble() const { return *std::max_element(bubble_.begin(), bubble_.end()); }

  void Put(int stage, Pass pass);
  // Puts W's on `stage` while they fit before `ready` (the arrival of its next F/B input), and
  // one more that straddles it unless leaving the gap idle keeps the stage's cumulative bubble
  // within the largest one (then only with no_bubble_greedy).
  void FillGap(int stage, TimeNs ready);
  // Puts W's until `delta` more memory fits under the cap; false if W's run out first.
  bool FreeMemoryFor(int stage, double delta);
  void Warmup();
  bool WantsForward(int stage) const;

  const std::vector<StageCost>& costs_;
  const TimeNs comm_;
  const int p_;
  const int m_;
  const ZbKnobs knobs_;
  std::vector<double> caps_;
  std::vector<std::vector<int>> count_;  // [pass][stage]: ops of that pass put so far
  std::vector<TimeNs> clock_;            // end of the last op put on each stage
  std::vector<double> memory_;
  std::vector<TimeNs> bubble_;                         // idle time after each stage's first F
  std::vector<std::vector<std::vector<TimeNs>>> end_;  // [pass][stage][mb]
  std::vector<std::vector<Op>> order_;
  TimeNs cost_ = 0;
};

void ZbGreedy::Put(int stage, Pass pass) {
  const int mb = count_[pass][stage]++;
  const TimeNs duration = Duration(stage, pass);
  const TimeNs no_wait = clock_[stage] + duration;
  TimeNs end = no_wait;
  if (pass == kF && stage > 0) end = std::max(end, end_[kF][stage - 1][mb] + comm_ + duration);
  if (pass == kB && stage < p_ - 1) {
    end = std::max(end, end_[kB][stage + 1][mb] + comm_ + duration);
  }
  // Idle before a stage's first forward is not a bubble in the paper's span convention.
  if (count_[kF][stage] - (pass == kF ? 1 : 0) > 0) bubble_[stage] += end - no_wait;
  clock_[stage] = end;
  end_[pass][stage][mb] = end;
  memory_[stage] += Delta(stage, pass);
  order_[stage].push_back({static_cast<OpKind>(pass), 0, mb, end - duration, end});
}

void ZbGreedy::FillGap(int stage, TimeNs ready) {
  auto pending_w = [&] { return count_[kW][stage] < count_[kB][stage]; };
  while (pending_w() && clock_[stage] + Duration(stage, kW) <= ready)
    Put(stage, kW);
  if (pending_w() && clock_[stage] < ready) {
    if (ready - clock_[stage] <= MaxBubble() - bubble_[stage]) {
      if (knobs_.no_bubble_greedy) Put(stage, kW);
    } else {
      Put(stage, kW);
    }
  }
}

bool ZbGreedy::FreeMemoryFor(int stage, double delta) {
  while (!FitsCap(memory_[stage] + delta, caps_[stage])) {
    if (count_[kW][stage] >= count_[kB][stage]) return false;
    Put(stage, kW);
  }
  return true;
}

void ZbGreedy::Warmup() {
  for (int stage = 0; stage < p_; ++stage)
    Put(stage, kF);
  // Walk back from the last stage estimating when microbatch 0's B reaches each stage, and give
  // each stage as many extra forwards as fit (in time and memory) before it.
  std::vector<int> extra(p_, 0);
  TimeNs b_arrival = 0;
  for (int stage = p_ - 1; stage >= 0; --stage) {
    if (stage == p_ - 1) {
      b_arrival = end_[kF][stage][0] + Duration(stage, kB);
      continue;
    }
    double memory = memory_[stage];
    TimeNs clock = clock_[stage];
    while (count_[kF][stage] + extra[stage] < m_ &&
           FitsCap(memory + Delta(stage, kF), caps_[stage])) {
      const bool stop = knobs_.allow_bubble_before_first_b
                            ? clock + Duration(stage, kF) > b_arrival + comm_
                            : clock >= b_arrival + comm_;
      if (stop) break;
      memory += Delta(stage, kF);
      clock += Duration(stage, kF);
      ++extra[stage];
    }
    b_arrival = std::max(clock, b_arrival + comm_) + Duration(stage, kB);
  }
  // Keep the staircase: each stage holds fewer warm-up forwards than the one before it (the
  // reference lets a stage that fits all m forwards keep them). Beyond the reference: never more
  // than the stage before has run, which only binds with heterogeneous caps, where the
  // reference would time forwards whose inputs do not exist yet.
  for (int stage = 1; stage < p_; ++stage) {
    while (extra[stage] > 0 && extra[stage] >= extra[stage - 1] &&
           count_[kF][stage] + extra[stage] < m_) {
      --extra[stage];
    }
    while (count_[kF][stage] + extra[stage] > count_[kF][stage - 1] + extra[stage - 1]) {
      --extra[stage];
    }
  }
  for (int stage = 0; stage < p_; ++stage) {
    for (int k = 0; k < extra[stage]; ++k)
      Put(stage, kF);
  }
  for (int stage = p_ - 1; stage >= 0; --stage)
    Put(stage, kB);
}

bool ZbGreedy::WantsForward(int stage) const {
  if (count_[kF][stage] >= m_) return false;
  if (!knobs_.prioritize_b || stage + 1 >= p_ || count_[kF][stage] < count_[kF][stage + 1] + 2) {
    return true;
  }
  // This stage is two forwards ahead of the next one: skip the F when the next stage's B would
  // arrive before it could finish, unless it costs no bubble.
  const TimeNs next_b_arrival =
      clock_[stage + 1] + Duration(stage + 1, kF) + Duration(stage + 1, kB) + comm_;
  if (clock_[stage] >= next_b_arrival) return false;
  TimeNs w_cost = 0;
  double memory_with_w = memory_[stage] + Delta(stage, kF);
  for (int k = 0;
       !FitsCap(memory_with_w, caps_[stage]) && count_[kW][stage] + k < count_[kB][stage]; ++k) {
    w_cost += Duration(stage, kW);
    memory_with_w += Delta(stage, kW);
  }
  if (clock_[stage] + Duration(stage, kF) + w_cost <= next_b_arrival) return true;
  return next_b_arrival - clock_[stage] > MaxBubble() - bubble_[stage];
}

Status ZbGreedy::Run() {
  auto cannot_fit = [](int stage, const char* what) {
    return Infeasible("zb-auto: cannot fit memory on stage " + std::to_string(stage) +
                      " before its next " + what + " (no W left to free memory)");
  };
  Warmup();
  for (int i = 1; i < m_; ++i) {
    std::vector<int> want(p_, 0);
    for (int stage = 0; stage < p_; ++stage)
      want[stage] = WantsForward(stage) ? 1 : 0;
    // A stage runs its next F only if the next stage does, so it never runs further ahead. A
    // next stage that has run all its forwards does not hold it back (beyond the reference,
    // which would leave this stage's remaining forwards unscheduled).
    for (int stage = p_ - 2; stage >= 0; --stage) {
      if (count_[kF][stage + 1] < m_) want[stage] = std::min(want[stage], want[stage + 1]);
    }
    for (int stage = 0; stage < p_; ++stage) {
      if (!want[stage]) continue;
      if (!FreeMemoryFor(stage, Delta(stage, kF))) return cannot_fit(stage, "F");
      if (stage > 0) FillGap(stage, end_[kF][stage - 1][count_[kF][stage]] + comm_);
      Put(stage, kF);
    }
    for (int stage = p_ - 1; stage >= 0; --stage) {
      if (!FreeMemoryFor(stage, Delta(stage, kB))) return cannot_fit(stage, "B");
      if (stage + 1 < p_) FillGap(stage, end_[kB][stage + 1][i] + comm_);
      if (stage == 0 && count_[kF][stage] == m_) {
        while (count_[kW][stage] < count_[kB][stage])
          Put(stage, kW);
      }
      Put(stage, kB);
    }
  }
  for (int stage = 0; stage < p_; ++stage) {
    while (count_[kW][stage] < m_)
      Put(stage, kW);
  }
  for (int stage = 0; stage < p_; ++stage) {
    cost_ = std::max(cost_, end_[kW][stage][m_ - 1] - end_[kF][stage][0] + Duration(stage, kF));
  }
  return Status::Ok();
}

Schedule ZbGreedy::TakeSchedule() {
  Schedule schedule;
  schedule.ranks = p_;
  schedule.microbatches = m_;
  schedule.chunks = 1;
  schedule.placement = Placement::kLoop;
  schedule.family = "zb-auto";
  schedule.costs.stages = costs_;
  schedule.costs.comm = comm_;
  for (int stage = 0; stage < p_; ++stage) {
    schedule.programs.push_back({{stage}, std::move(order_[stage])});
  }
  return schedule;
}

}  // namespace

Expected<Schedule> ZbManualOrder(const CostProfile& costs, int microbatches,
                                 const std::vector<double>& stage_caps, const ZbKnobs& knobs,
                                 TimeNs* cost) {
  if (microbatches < 1) return UsageError("zb-auto: needs at least 1 microbatch");
  if (!stage_caps.empty() && static_cast<int>(stage_caps.size()) != costs.num_stages()) {
    return InternalError("zb-auto: one cap per stage expected");
  }
  ZbGreedy greedy(costs, microbatches, stage_caps, knobs);
  ZB_RETURN_IF_ERROR(greedy.Run());
  if (cost != nullptr) *cost = greedy.cost();
  return greedy.TakeSchedule();
}

Expected<ZbAutoResult> ZbAuto(const CostProfile& costs, int microbatches,
                              const std::vector<double>& stage_caps) {
  ZbAutoResult result;
  Status last_failure;
  bool found = false;
  for (bool allow : {true, false}) {
    for (bool prioritize : {true, false}) {
      for (bool greedy : {true, false}) {
        TimeNs cost = 0;
        auto schedule =
            ZbManualOrder(costs, microbatches, stage_caps, {allow, prioritize, greedy}, &cost);
        if (!schedule.ok()) {
          // The reference aborts its whole search here; one knob failing to fit should not hide
          // the others, so it is recorded and skipped.
          if (schedule.status().code() != ErrorCode::kInfeasible) return schedule.status();
          last_failure = schedule.status();
          result.knob_costs.push_back(-1);
          continue;
        }
        result.knob_costs.push_back(cost);
        if (!found || cost < result.cost) {  // strictly smaller: the first best setting wins
          found = true;
          result.cost = cost;
          result.schedule = std::move(schedule).value();
        }
      }
    }
  }
  if (!found) return last_failure;
  return result;
}

}  // namespace zb::tuner
