// SPDX-License-Identifier: Apache-2.0
// Aggregation of attributed ops into a cost profile (costs.h).
#include "zbkit/profiler/costs.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

namespace zb::profiler {
namespace {

// p in [0, 1] of sorted values, linear between neighbours.
TimeNs Percentile(const std::vector<TimeNs>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double position = p * static_cast<double>(sorted.size() - 1);
  const size_t low = static_cast<size_t>(std::floor(position));
  const size_t high = std::min(low + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(low);
  const double value =
      static_cast<double>(sorted[low]) + fraction * static_cast<double>(sorted[high] - sorted[low]);
  return static_cast<TimeNs>(std::llround(value));
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

constexpr OpKind kComputeKinds[] = {OpKind::kF, OpKind::kB, OpKind::kW, OpKind::kBW};

}  // namespace

Spread SpreadOf(std::vector<TimeNs> values) {
  Spread spread;
  spread.samples = static_cast<int64_t>(values.size());
  if (values.empty()) return spread;
  std::sort(values.begin(), values.end());
  spread.median = Percentile(values, 0.5);
  spread.p10 = Percentile(values, 0.1);
  spread.p90 = Percentile(values, 0.9);
  return spread;
}

namespace {

using IterationKey = std::pair<int32_t, int32_t>;  // (rank, replica)

// Which iterations of each process the costs use: from its first, after --skip-iters, without a
// last iteration the process did not finish (a job stopped or killed mid-step leaves forwards
// without their backwards, which would skew the medians).
struct IterationWindow {
  std::map<IterationKey, int32_t> first;
  std::map<IterationKey, int32_t> unfinished;  // the process's last iteration, when cut short

  bool Uses(const IterationKey& key, int32_t iteration, const CostOptions& options) const {
    const auto cut = unfinished.find(key);
    if (cut != unfinished.end() && cut->second == iteration) return false;
    const auto it = first.find(key);
    return it != first.end() && iteration - it->second >= options.skip_iters;
  }
  bool Uses(const MeasuredOp& op, const CostOptions& options) const {
    return Uses({op.rank, op.replica}, op.iteration, options);
  }
};

// Iterations are numbered per process; count from each one's first. Sets iterations_seen and
// iterations_used, and a note per process whose last iteration has fewer compute ops than its
// others (all of which have the same number) and is left out.
IterationWindow CountIterations(const Attribution& attribution, const CostOptions& options,
                                CostReport& report) {
  IterationWindow window;
  std::map<IterationKey, std::map<int32_t, int64_t>> compute_ops;  // per iteration
  for (const MeasuredOp& op : attribution.ops) {
    const auto key = std::make_pair(op.rank, op.replica);
    auto [it, inserted] = window.first.emplace(key, op.iteration);
    if (!inserted) it->second = std::min(it->second, op.iteration);
    int64_t& count = compute_ops[key][op.iteration];
    if (op.kind != OpKind::kComm) ++count;
  }
  for (const auto& [key, counts] : compute_ops) {
    if (counts.size() < 2) continue;
    const auto last = std::prev(counts.end());
    std::set<int64_t> others;
    for (auto it = counts.begin(); it != last; ++it)
      others.insert(it->second);
    if (others.size() == 1 && last->second < *others.begin()) {
      window.unfinished[key] = last->first;
      report.notes.push_back("rank " + std::to_string(key.first) + ": the last iteration (" +
                             std::to_string(last->first - window.first[key]) + ") was cut short (" +
                             std::to_string(last->second) + " of " +
                             std::to_string(*others.begin()) + " ops): left out");
    }
  }
  for (const auto& [key, counts] : compute_ops) {
    report.iterations_seen = std::max(report.iterations_seen, static_cast<int>(counts.size()));
    int used = 0;
    for (const auto& [iteration, count] : counts) {
      if (window.Uses(key, iteration, options)) ++used;
    }
    report.iterations_used = std::max(report.iterations_used, used);
  }
  return window;
}

// The samples of the ops left after --skip-iters.
struct Samples {
  std::vector<std::map<OpKind, std::vector<TimeNs>>> per_stage;
  std::vector<std::vector<double>> f_memory;
  std::vector<std::vector<double>> b_memory;
  std::map<std::pair<int32_t, int32_t>, std::vector<TimeNs>> hops;
  // Per rank: (kind, replica, iteration, microbatch) -> sum over the rank's chunks.
  std::vector<std::map<std::tuple<OpKind, int32_t, int32_t, int32_t>, TimeNs>> rank_sums;
};

Samples CollectSamples(const Attribution& attribution, const CostOptions& options,
                       const IterationWindow& window, int num_stages, CostReport& report) {
  Samples samples;
  samples.per_stage.resize(num_stages);
  samples.f_memory.resize(num_stages);
  samples.b_memory.resize(num_stages);
  samples.rank_sums.resize(std::max(report.ranks, 1));
  for (const MeasuredOp& op : attribution.ops) {
    if (!window.Uses(op, options) || op.stage < 0 || op.stage >= num_stages) continue;
    if (!op.timed) continue;  // no device time measured (attribution.h, step 3)
    ++report.ops_used;
    if (op.kind == OpKind::kComm) {
      if (op.peer_stage < 0 || op.peer_stage >= num_stages) continue;
      const bool sender = op.direction == CommDirection::kSendForward ||
                          op.direction == CommDirection::kSendBackward;
      const auto hop = sender ? std::make_pair(op.stage, op.peer_stage)
                              : std::make_pair(op.peer_stage, op.stage);
      samples.hops[hop].push_back(op.busy);
      continue;
    }
    samples.per_stage[op.stage][op.kind].push_back(op.busy);
    if (op.rank >= 0 && op.rank < static_cast<int32_t>(samples.rank_sums.size())) {
      samples.rank_sums[op.rank][{op.kind, op.replica, op.iteration, op.microbatch}] += op.busy;
    }
    if (op.has_memory && op.kind == OpKind::kF) {
      samples.f_memory[op.stage].push_back(std::max<double>(0, static_cast<double>(op.memory_net)));
    }
    if (op.has_memory && op.kind == OpKind::kB) {
      samples.b_memory[op.stage].push_back(static_cast<double>(op.memory_net));
    }
  }
  return samples;
}

// Per rank, the data-parallel collectives of each step used, summed per (replica, iteration).
void BuildCollectiveStats(const Attribution& attribution, const CostOptions& options,
                          const IterationWindow& window, CostReport& report) {
  std::map<std::tuple<int32_t, CollectiveKind, int32_t, int32_t>, TimeNs> sums;
  for (const MeasuredCollective& collective : attribution.collectives) {
    if (!window.Uses({collective.rank, collective.replica}, collective.iteration, options)) {
      continue;
    }
    sums[{collective.rank, collective.kind, collective.replica, collective.iteration}] +=
        collective.busy;
  }
  for (auto [from, field] : {std::pair{&attribution.unsharded_bytes, &StageStats::unsharded},
                             std::pair{&attribution.reduced_bytes, &StageStats::reduced}}) {
    for (const auto& [rank, bytes] : *from) {
      if (rank >= 0 && rank < static_cast<int32_t>(report.per_rank.size())) {
        report.per_rank[rank].*field = static_cast<double>(bytes);
      }
    }
  }
  std::map<std::pair<int32_t, CollectiveKind>, std::vector<TimeNs>> samples;
  for (const auto& [key, total] : sums)
    samples[{std::get<0>(key), std::get<1>(key)}].push_back(total);
  for (auto& [key, values] : samples) {
    const auto [rank, kind] = key;
    if (rank < 0 || rank >= static_cast<int32_t>(report.per_rank.size())) continue;
    StageStats& stats = report.per_rank[rank];
    (kind == CollectiveKind::kReduce ? stats.reduce : stats.unshard) = SpreadOf(std::move(values));
  }
}

// Where M_B and M_W come from: measured allocations, the analytic estimate (returned as
// {M_B, M_W} per stage), or nowhere; with a note for the latter two.
std::pair<double, double> ChooseMemorySource(const Attribution& attribution,
                                             const CostOptions& options, const Samples& samples,
                                             int num_stages, CostReport& report) {
  bool measured_memory = false;
  for (const auto& list : samples.f_memory)
    measured_memory = measured_memory || !list.empty();
  report.memory = measured_memory                            ? MemorySource::kMeasured
                  : options.dims && options.dims->complete() ? MemorySource::kEstimated
                                                             : MemorySource::kNone;
  if (report.memory == MemorySource::kEstimated) {
    const ModelDims& d = *options.dims;
    const double layers_per_stage = static_cast<double>(d.layers) / static_cast<double>(num_stages);
    const double sbh = static_cast<double>(d.seq * d.micro_batch_size * d.hidden);
    const double estimated_m_b =
        layers_per_stage *
        (34.0 * sbh + 5.0 * static_cast<double>(d.heads) * static_cast<double>(d.seq) *
                          static_cast<double>(d.seq * d.micro_batch_size));
    const double estimated_m_w = report.split ? layers_per_stage * 32.0 * sbh : 0;
    report.notes.push_back(
        "memory: estimated from the analytic model (M_B = s*b*(34h+5as), M_W = 32sbh per layer, " +
        std::to_string(d.layers) + " layers over " + std::to_string(num_stages) + " stages)");
    return {estimated_m_b, estimated_m_w};
  }
  if (report.memory == MemorySource::kNone) {
    report.notes.push_back(
        std::string("memory: ") +
        (attribution.has_memory ? "allocation records fell inside no forward"
                                : "no allocation records") +
        " and no model dimensions (--hidden --heads --seq --micro-batch-size --layers); M_B and "
        "M_W are 0");
  }
  return {0, 0};
}

void BuildStageStats(const Samples& samples, std::pair<double, double> estimated, int num_stages,
                     CostReport& report) {
  for (int s = 0; s < num_stages; ++s) {
    StageStats stats;
    stats.stage = s;
    stats.rank = s < report.ranks * report.chunks
                     ? RankOfStage(report.placement, std::max(report.ranks, 1), s)
                     : s % std::max(report.ranks, 1);
    for (OpKind kind : kComputeKinds) {
      auto it = samples.per_stage[s].find(kind);
      stats.Of(kind) =
          SpreadOf(it == samples.per_stage[s].end() ? std::vector<TimeNs>{} : it->second);
    }
    if (report.memory == MemorySource::kMeasured) {
      stats.m_b = Median(samples.f_memory[s]);
      stats.m_w = report.split && !samples.b_memory[s].empty()
                      ? std::max(stats.m_b + Median(samples.b_memory[s]), 0.0)
                      : 0.0;
    } else if (report.memory == MemorySource::kEstimated) {
      stats.m_b = estimated.first;
      stats.m_w = estimated.second;
    }
    report.stages.push_back(stats);
  }
}

// What zb tune consumes: one stage per rank, each rank's chunks summed per (iteration, mb).
void BuildPerRankStats(const Samples& samples, int num_stages, CostReport& report) {
  if (report.chunks <= 1 && num_stages == report.ranks) {
    report.per_rank = report.stages;
  } else {
    for (int r = 0; r < report.ranks; ++r) {
      StageStats stats;
      stats.stage = r;
      stats.rank = r;
      std::map<OpKind, std::vector<TimeNs>> sums;
      for (const auto& [key, total] : samples.rank_sums[r])
        sums[std::get<0>(key)].push_back(total);
      for (OpKind kind : kComputeKinds)
        stats.Of(kind) = SpreadOf(sums[kind]);
      for (const StageStats& stage : report.stages) {
        if (stage.rank != r) continue;
        stats.m_b += stage.m_b;
        stats.m_w += stage.m_w;
      }
      report.per_rank.push_back(stats);
    }
    report.notes.push_back("zb-costs/1 holds one stage per rank: each rank's " +
                           std::to_string(report.chunks) +
                           " chunks are summed per (iteration, microbatch)");
  }
  for (const StageStats& stats : report.per_rank) {
    if (stats.f.samples == 0) {
      report.notes.push_back("rank " + std::to_string(stats.rank) + " has no forward ops");
    }
  }
}

// The measured timeline: every op of the first replica, t = 0 at the first op.
void BuildMeasuredTimeline(const Attribution& attribution, CostReport& report) {
  report.timeline.kind = TimelineKind::kMeasured;
  TimeNs origin = 0;
  bool first = true;
  for (const MeasuredOp& op : attribution.ops) {
    if (op.replica != 0) continue;
    origin = first ? op.start() : std::min(origin, op.start());
    first = false;
  }
  std::map<int32_t, std::vector<std::pair<TimeNs, double>>> memory_changes;
  TimelineNameTable names(report.timeline.names);
  // Iterations are numbered per process (attribution.h); the timeline counts each rank's from 0.
  std::map<int32_t, int32_t> first_iteration;
  for (const MeasuredOp& op : attribution.ops) {
    if (op.replica != 0) continue;
    const auto [it, inserted] = first_iteration.try_emplace(op.rank, op.iteration);
    if (!inserted) it->second = std::min(it->second, op.iteration);
  }
  for (const MeasuredOp& op : attribution.ops) {
    if (op.replica != 0 || op.stage < 0 || op.microbatch < 0) continue;
    TimelineOp timeline_op{op.rank,
                           op.stage,
                           op.kind,
                           op.microbatch,
                           op.start() - origin,
                           std::max(op.end(), op.start()) - origin,
                           std::max(0, op.iteration - first_iteration[op.rank])};
    // With kernels the span is their projection and `busy` their union inside it
    // (docs/zbview.md §6); a CPU-only range is busy for all of its span.
    if (op.kernels > 0 || !op.timed)
      timeline_op.busy = std::clamp<TimeNs>(op.busy, 0, timeline_op.end - timeline_op.start);
    timeline_op.kernels = op.kernels;
    if (!op.name.empty()) timeline_op.name = names.Intern(op.name);
    report.timeline.ops.push_back(timeline_op);
    if (report.memory == MemorySource::kMeasured && op.has_memory && op.kind != OpKind::kComm) {
      memory_changes[op.rank].emplace_back(op.end() - origin, static_cast<double>(op.memory_net));
    }
  }
  for (auto& [rank, changes] : memory_changes) {
    std::stable_sort(changes.begin(), changes.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    double held = 0;
    for (const auto& [time, delta] : changes) {
      held += delta;
      report.timeline.memory.push_back({rank, time, held});
    }
  }
}

}  // namespace

Expected<CostReport> BuildCostReport(const Attribution& attribution, const CostOptions& options) {
  if (options.skip_iters < 0) return UsageError("--skip-iters must be >= 0");
  if (attribution.ops.empty()) return InvalidInput("no pipeline ops recognized");
  CostReport report;
  report.ranks = attribution.ranks;
  report.chunks = attribution.chunks;
  report.num_stages = attribution.num_stages;
  report.placement = attribution.placement;
  report.layout_known = attribution.layout_known;
  report.schedule_class = attribution.schedule_class;
  report.checkpointing = attribution.checkpointing;
  report.data_parallel = attribution.data_parallel;
  report.split = attribution.split;
  report.notes = attribution.notes;

  const IterationWindow window = CountIterations(attribution, options, report);
  if (report.iterations_used == 0) {
    return InvalidInput("--skip-iters " + std::to_string(options.skip_iters) + " drops all " +
                        std::to_string(report.iterations_seen) + " recorded iterations");
  }
  const int num_stages = std::max(report.num_stages, 1);
  const Samples samples = CollectSamples(attribution, options, window, num_stages, report);
  const std::pair<double, double> estimated =
      ChooseMemorySource(attribution, options, samples, num_stages, report);
  BuildStageStats(samples, estimated, num_stages, report);
  BuildPerRankStats(samples, num_stages, report);
  BuildCollectiveStats(attribution, options, window, report);

  // ---- Communication. ----
  std::vector<TimeNs> all_hops;
  for (const auto& [hop, values] : samples.hops) {
    all_hops.insert(all_hops.end(), values.begin(), values.end());
    report.hops.push_back({hop.first, hop.second, SpreadOf(values)});
  }
  report.comm = SpreadOf(all_hops);

  if (!report.split) {
    report.notes.push_back("the profile has no B/W split: zb-costs/1 gets B = BW and W = 0");
  }
  BuildMeasuredTimeline(attribution, report);
  return report;
}

CostProfile CostReport::ToCostProfile() const {
  CostProfile costs;
  for (const StageStats& stats : per_rank) {
    StageCost cost;
    cost.f = stats.f.median;
    if (stats.b.samples > 0) {
      cost.b = stats.b.median;
      cost.w = stats.w.median;
      // A profile that ran some backwards split and some fused measured both ways.
      if (stats.bw.samples > 0) cost.bw = stats.bw.median;
    } else {
      cost.b = stats.bw.median;
      cost.w = stats.w.samples > 0 ? stats.w.median : 0;
    }
    cost.m_b = stats.m_b;
    cost.m_w = stats.m_w;
    if (stats.reduce.samples > 0) cost.reduce = stats.reduce.median;
    if (stats.unshard.samples > 0) cost.unshard = stats.unshard.median;
    cost.unsharded = stats.unsharded;
    cost.reduced = stats.reduced;
    costs.stages.push_back(cost);
  }
  costs.comm = comm.median;
  costs.checkpointing = checkpointing;
  costs.data_parallel = data_parallel;
  if (layout_known) {
    costs.layout = JobLayout{placement, std::max(chunks, 1)};
    costs.schedule_class = schedule_class;
  }
  return costs;
}

CostProfileDetails CostReport::ToDetails() const {
  CostProfileDetails details;
  details.memory_source = memory;
  for (const StageStats& stats : per_rank) {
    for (OpKind kind : kComputeKinds) {
      const Spread& spread = kind == OpKind::kF   ? stats.f
                             : kind == OpKind::kB ? stats.b
                             : kind == OpKind::kW ? stats.w
                                                  : stats.bw;
      if (spread.samples == 0) continue;
      details.spread.push_back({stats.stage, kind, spread});
    }
  }
  details.hops = hops;
  return details;
}

}  // namespace zb::profiler
