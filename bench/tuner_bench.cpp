// SPDX-License-Identifier: Apache-2.0
// Tuner benchmarks: simulator throughput and tuning time at (p, m) = (8, 24), (32, 256), (64, 512):
// the paper's and two of a large job's sizes. Run: build-release/bench/zbkit_tuner_bench  (figures
// in README.md "Benchmarks")
#include <benchmark/benchmark.h>

#include "zbkit/tuner/families.h"
#include "zbkit/tuner/simulator.h"
#include "zbkit/tuner/tune.h"

namespace zb::tuner {
namespace {

// The 1.5B model's Table 6 costs with a slightly heavier last stage (the loss head), so the
// heterogeneous code paths run.
CostProfile BenchCosts(int p) {
  CostProfile costs;
  costs.comm = 601'000;
  costs.stages.assign(p, StageCost{18'522'000, 18'086'000, 9'337'000, 201216, 73728});
  costs.stages.back().f += 4'000'000;
  costs.stages.back().b += 5'000'000;
  return costs;
}

void BM_Simulate(benchmark::State& state) {
  const int p = static_cast<int>(state.range(0));
  const int m = static_cast<int>(state.range(1));
  auto result = ZbAuto(BenchCosts(p), m, std::vector<double>(p, 2.0 * p * 201216));
  if (!result.ok()) {
    state.SkipWithError(result.status().message().c_str());
    return;
  }
  Schedule schedule = result->schedule;
  Simulator simulator;
  for (auto _ : state) {
    Status status = simulator.Run(schedule);
    benchmark::DoNotOptimize(status);
  }
  state.SetItemsProcessed(state.iterations() * schedule.num_ops());
  state.counters["ops"] = static_cast<double>(schedule.num_ops());
}
BENCHMARK(BM_Simulate)
    ->Args({8, 24})
    ->Args({32, 256})
    ->Args({64, 512})
    ->Unit(benchmark::kMicrosecond);

void BM_ZbAuto(benchmark::State& state) {
  const int p = static_cast<int>(state.range(0));
  const int m = static_cast<int>(state.range(1));
  const CostProfile costs = BenchCosts(p);
  const std::vector<double> caps(p, 2.0 * p * 201216);
  for (auto _ : state) {
    auto result = ZbAuto(costs, m, caps);
    benchmark::DoNotOptimize(result);
  }
}
BENCHMARK(BM_ZbAuto)->Args({8, 24})->Args({32, 256})->Args({64, 512})->Unit(
    benchmark::kMillisecond);

// What `zb tune --family best` does: every family generated, simulated, bounded, checked.
void BM_TuneAllFamilies(benchmark::State& state) {
  const int p = static_cast<int>(state.range(0));
  const int m = static_cast<int>(state.range(1));
  const CostProfile costs = BenchCosts(p);
  TuneOptions options;
  options.memory_limit = {MemoryLimit::Kind::kRelative, 2};
  for (auto _ : state) {
    auto result = Tune(costs, m, options);
    benchmark::DoNotOptimize(result);
  }
}
BENCHMARK(BM_TuneAllFamilies)
    ->Args({8, 24})
    ->Args({32, 256})
    ->Args({64, 512})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace zb::tuner

BENCHMARK_MAIN();
