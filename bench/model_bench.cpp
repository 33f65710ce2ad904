// SPDX-License-Identifier: Apache-2.0
// Model benchmarks: what a timeline repaint costs (TimelineIndex::BinCoverage over every rank lane
// of a 1M-op timeline at 1600 columns; the GUI's budget is 16 ms for the whole repaint) and what
// loading costs (building the index of 1M ops).
// Run: build-model-rel/bench/zbkit_schemas_bench  (Release build)
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "zbkit/schemas/timeline_index.h"
#include "zbkit/schemas/types.h"

namespace zb {
namespace {

constexpr int kRanks = 16;
constexpr int kOpsPerRank = 62'500;  // 1M ops in all
constexpr int kColumns = 1600;

// A predicted-looking timeline: per rank F, B, W ops of 1-3 us in time order, with a small idle
// gap before about 15% of them (the case where a naive renderer hides idle time), and one memory
// sample per op end as TimelineFromSchedule writes them.
const Timeline& MillionOpTimeline() {
  static const Timeline timeline = [] {
    Timeline t;
    t.ops.reserve(static_cast<size_t>(kRanks) * kOpsPerRank);
    t.memory.reserve(static_cast<size_t>(kRanks) * kOpsPerRank);
    std::mt19937_64 rng(7);
    std::uniform_int_distribution<TimeNs> duration(1000, 3000);
    std::uniform_int_distribution<TimeNs> gap(50, 500);
    std::uniform_int_distribution<int> percent(0, 99);
    const OpKind kinds[] = {OpKind::kF, OpKind::kB, OpKind::kW};
    for (int rank = 0; rank < kRanks; ++rank) {
      TimeNs clock = rank * 2000;  // the pipeline's fill
      double memory = 0;
      for (int i = 0; i < kOpsPerRank; ++i) {
        if (percent(rng) < 15) clock += gap(rng);
        const TimeNs end = clock + duration(rng);
        const OpKind kind = kinds[i % 3];
        t.ops.push_back({rank, rank, kind, i / 3, clock, end});
        memory += kind == OpKind::kF ? 2.0 : (kind == OpKind::kB ? -1.5 : -0.5);
        t.memory.push_back({rank, end, memory});
        clock = end;
      }
    }
    return t;
  }();
  return timeline;
}

const TimelineIndex& MillionOpIndex() {
  static const TimelineIndex index(MillionOpTimeline(), 100, kRanks);
  return index;
}

// One repaint: every rank lane binned into kColumns columns over a range of `permille` of the
// timeline (1000 = fully zoomed out), centred. Coverage buffers are reused across repaints as the
// view does.
void BM_BinCoverageAllRankLanes(benchmark::State& state) {
  const TimelineIndex& index = MillionOpIndex();
  const TimeNs length = index.end() - index.begin();
  const TimeNs width = length * state.range(0) / 1000;
  const TimeNs t0 = index.begin() + (length - width) / 2;
  const TimeNs t1 = t0 + width;
  std::vector<Coverage> coverage(static_cast<size_t>(index.num_ranks()));
  int64_t ops_in_range = 0;
  for (int r = 0; r < index.num_ranks(); ++r) {
    const auto [first, last] = index.Visible(index.RankLane(r), t0, t1);
    ops_in_range += static_cast<int64_t>(last - first);
  }
  for (auto _ : state) {
    for (int r = 0; r < index.num_ranks(); ++r) {
      index.BinCoverage(index.RankLane(r), t0, t1, kColumns, &coverage[r]);
    }
    benchmark::DoNotOptimize(coverage.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * ops_in_range);
  state.counters["lanes"] = index.num_ranks();
  state.counters["ops_in_range"] = static_cast<double>(ops_in_range);
}
BENCHMARK(BM_BinCoverageAllRankLanes)
    ->ArgName("permille")
    ->Arg(1000)  // fully zoomed out: all 1M ops
    ->Arg(10)    // zoomed in to 1%
    ->Unit(benchmark::kMicrosecond);

// The memory track of the same repaint: one envelope per rank.
void BM_BinMemoryAllRanks(benchmark::State& state) {
  const TimelineIndex& index = MillionOpIndex();
  std::vector<MemoryEnvelope> envelopes(static_cast<size_t>(index.num_ranks()));
  for (auto _ : state) {
    for (int r = 0; r < index.num_ranks(); ++r) {
      index.BinMemory(r, index.begin(), index.end(), kColumns, &envelopes[r]);
    }
    benchmark::DoNotOptimize(envelopes.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(kRanks) * kOpsPerRank);
}
BENCHMARK(BM_BinMemoryAllRanks)->Unit(benchmark::kMicrosecond);

// Building the index of 1M ops (+1M memory samples with arg 1), as the GUI's loader does once
// per opened timeline.
void BM_TimelineIndexConstruct(benchmark::State& state) {
  Timeline timeline = MillionOpTimeline();
  if (state.range(0) == 0) timeline.memory.clear();
  for (auto _ : state) {
    TimelineIndex index(timeline, 100, kRanks);
    benchmark::DoNotOptimize(index);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(timeline.ops.size()));
}
BENCHMARK(BM_TimelineIndexConstruct)
    ->ArgName("memory")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace zb

BENCHMARK_MAIN();
