// SPDX-License-Identifier: Apache-2.0
// libzbrt mark cost: one zbrt_op_begin + zbrt_op_end pair on a recorder, through the shared
// library's C ABI as a trainer calls it. Target (docs/benchmarks.md): <= 1 us per op. The
// schedule is ZB-H1 on 8 ranks, 64 microbatches (192 ops on rank 0); each benchmark iteration is
// one training iteration of rank 0 (iteration marks included), so `s_per_op` is the figure.
// Iterations are capped because a recorder keeps every mark until it is closed.
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "zbkit/schemas/json_io.h"
#include "zbkit/tuner/families.h"
#include "zbrt.h"

namespace {

std::string WriteSchedule(const std::string& dir) {
  zb::CostProfile costs;
  costs.stages.assign(8, zb::StageCost{1'000'000, 1'000'000, 1'000'000, 1, 0.5});
  auto schedule = zb::tuner::ZbH1(costs, 64);
  if (!schedule.ok()) return "";
  const std::string path = dir + "/zb-h1.json";
  if (!zb::WriteFileAtomically(path, zb::ScheduleToJson(*schedule)).ok()) return "";
  return path;
}

void BM_MarkPair(benchmark::State& state) {
  char pattern[] = "/tmp/zbkit_zbrt_bench_XXXXXX";
  if (mkdtemp(pattern) == nullptr) {
    state.SkipWithError("mkdtemp failed");
    return;
  }
  const std::string dir = pattern;
  const std::string path = WriteSchedule(dir);
  zbrt_schedule* schedule = nullptr;
  if (path.empty() || zbrt_schedule_open_file(path.c_str(), &schedule) != ZBRT_OK) {
    state.SkipWithError(zbrt_last_error());
    return;
  }
  int64_t ops = 0;
  zbrt_recorder* recorder = nullptr;
  if (zbrt_rank_op_count(schedule, 0, &ops) != ZBRT_OK ||
      zbrt_recorder_open(schedule, 0, (dir + "/rank0.zbshard").c_str(), &recorder) != ZBRT_OK) {
    state.SkipWithError(zbrt_last_error());
    return;
  }
  int64_t iteration = 0;
  bool ok = true;
  for (auto _ : state) {
    ok &= zbrt_iteration_begin(recorder, iteration++) == ZBRT_OK;
    for (int64_t i = 0; i < ops; ++i) {
      ok &= zbrt_op_begin(recorder, i) == ZBRT_OK;
      ok &= zbrt_op_end(recorder, i) == ZBRT_OK;
    }
    ok &= zbrt_iteration_end(recorder) == ZBRT_OK;
  }
  if (!ok) state.SkipWithError(zbrt_last_error());
  state.counters["s_per_op"] =
      benchmark::Counter(static_cast<double>(ops), benchmark::Counter::kIsIterationInvariantRate |
                                                       benchmark::Counter::kInvert);
  state.SetItemsProcessed(state.iterations() * ops);
  zbrt_recorder_close(recorder);  // writes the shard, outside the timed loop
  zbrt_schedule_close(schedule);
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_MarkPair)->Iterations(5000)->Repetitions(3)->DisplayAggregatesOnly(true);

}  // namespace

BENCHMARK_MAIN();
