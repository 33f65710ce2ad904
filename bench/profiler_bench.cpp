// SPDX-License-Identifier: Apache-2.0
// Profiler benchmarks: records ingested per second into a shard (the injection library's hot
// path: Add() on the application's threads, Flush() from its writer thread), and reading a
// shard back. Target: ingest >= 1 M records/s
// (docs/benchmarks.md).
#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "zbkit/profiler/attribution.h"
#include "zbkit/profiler/costs.h"
#include "zbkit/profiler/shard.h"

namespace {

using zb::profiler::ActivityKind;
using zb::profiler::DeviceActivity;
using zb::profiler::Launch;
using zb::profiler::ShardWriter;
using zb::profiler::TraceProcess;
using zb::profiler::TraceRange;

std::string TempDir() {
  char pattern[] = "/tmp/zbkit_profiler_bench_XXXXXX";
  if (mkdtemp(pattern) == nullptr) return "/tmp";
  return pattern;
}

// A realistic mix: per range, `kernels_per_range` kernels, each with its launch record, names
// drawn from a few hundred distinct kernels. Flushed every `batch` records, as the injection
// library's writer thread would.
void BM_ShardIngest(benchmark::State& state) {
  const int64_t batch = state.range(0);
  const std::string dir = TempDir();
  std::vector<std::string> kernel_names;
  for (int i = 0; i < 300; ++i) {
    kernel_names.push_back("void at::native::elementwise_kernel<128, 4, " + std::to_string(i) +
                           ">(int, at::native::gpu_kernel_impl_nocast<...>)");
  }
  std::vector<std::string> range_names;
  for (int mb = 0; mb < 32; ++mb)
    range_names.push_back(std::to_string(mb) + ".0.0");
  for (std::string& name : range_names)
    name.insert(0, 1, 'F');
  int64_t records = 0;
  for (auto _ : state) {
    state.PauseTiming();
    TraceProcess process;
    process.rank = 0;
    auto writer = ShardWriter::Create(dir + "/bench.zbshard", process);
    if (!writer.ok()) {
      state.SkipWithError(writer.status().message().c_str());
      return;
    }
    state.ResumeTiming();
    constexpr int64_t kRecords = 1'000'000;
    int64_t pending = 0;
    int64_t correlation = 0;
    zb::TimeNs t = 0;
    for (int64_t n = 0; n < kRecords;) {
      writer->Add(TraceRange{range_names[n % range_names.size()], "", 1234, t, t + 10'000, 0});
      ++n;
      for (int k = 0; k < 4; ++k, ++correlation) {
        writer->Add(DeviceActivity{ActivityKind::kKernel,
                                   kernel_names[correlation % kernel_names.size()], 0, 7,
                                   t + 100 * k, t + 100 * k + 90, correlation, 0});
        writer->Add(Launch{correlation, 1234, t + 10 * k});
        n += 2;
      }
      pending += 9;
      t += 10'000;
      if (pending >= batch) {
        if (!writer->Flush().ok()) state.SkipWithError("flush failed");
        pending = 0;
      }
    }
    if (!writer->Flush().ok()) state.SkipWithError("flush failed");
    records += writer->records_written();
    state.PauseTiming();
    writer = zb::Status(zb::ErrorCode::kInternal, "reset");  // close before the next iteration
    state.ResumeTiming();
  }
  state.counters["records/s"] =
      benchmark::Counter(static_cast<double>(records), benchmark::Counter::kIsRate);
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_ShardIngest)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ShardRead(benchmark::State& state) {
  const std::string dir = TempDir();
  const std::string path = dir + "/read.zbshard";
  {
    TraceProcess process;
    auto writer = ShardWriter::Create(path, process);
    for (int64_t i = 0; i < 1'000'000 / 3; ++i) {
      writer->Add(
          TraceRange{std::to_string(i % 16).append(".0.0").insert(0, 1, 'B'), "", 1, i, i + 5, 0});
      writer->Add(DeviceActivity{ActivityKind::kKernel, "kernel_" + std::to_string(i % 200), 0, 7,
                                 i, i + 3, i, 0});
      writer->Add(Launch{i, 1, i});
    }
    if (!writer->Flush().ok()) state.SkipWithError("flush failed");
  }
  int64_t records = 0;
  for (auto _ : state) {
    auto trace = zb::profiler::ReadShard(path);
    if (!trace.ok()) {
      state.SkipWithError(trace.status().message().c_str());
      break;
    }
    records += static_cast<int64_t>(trace->ranges.size() + trace->activities.size() +
                                    trace->launches.size());
  }
  state.counters["records/s"] =
      benchmark::Counter(static_cast<double>(records), benchmark::Counter::kIsRate);
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_ShardRead)->Unit(benchmark::kMillisecond)->UseRealTime();

// Attribution and aggregation of one rank's trace: 100k op ranges (ZB fork names), 4 kernels
// each with their launches (900k records), as `zb profile` does after the job.
void BM_AttributeAndAggregate(benchmark::State& state) {
  zb::profiler::RawTrace trace;
  trace.process.rank = 0;
  int64_t correlation = 0;
  zb::TimeNs t = 0;
  const char* kinds[] = {"F", "B", "W"};
  for (int op = 0; op < 100'000; ++op) {
    const int mb = (op / 3) % 16;
    trace.ranges.push_back(
        {std::string(kinds[op % 3]) + std::to_string(mb) + ".0.0", "", 1, t, t + 10'000, 0});
    for (int k = 0; k < 4; ++k, ++correlation) {
      trace.launches.push_back({correlation, 1, t + 10 * k + 1});
      trace.activities.push_back({ActivityKind::kKernel, "gemm", 0, 7 + k % 2, t + 100 * k,
                                  t + 100 * k + 150, correlation, 0});
    }
    t += 10'000;
  }
  const zb::profiler::RuleSet rules;
  for (auto _ : state) {
    auto attribution = zb::profiler::Attribute({trace}, rules);
    auto report = zb::profiler::BuildCostReport(*attribution, {});
    benchmark::DoNotOptimize(report);
  }
  state.counters["records/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) *
                             static_cast<double>(trace.ranges.size() + trace.activities.size() +
                                                 trace.launches.size()),
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_AttributeAndAggregate)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
