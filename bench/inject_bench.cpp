// SPDX-License-Identifier: Apache-2.0
// NVTX cost with libzbkit_inject.so attached (target: <= 200 ns per push/pop pair) and without a
// tool (NVTX's no-op path), measured through the real NVTX loader.
//
//   zbkit_inject_bench             the tool attached (NVTX_INJECTION64_PATH and ZBKIT_SHARD_DIR
//                                  set by main() before the first NVTX call)
//   zbkit_inject_bench --no-tool   the same loops without a tool
//
// NVTX binds a tool once per process, so the two cases are two runs. With the tool attached the
// writer thread drains the rings into SQLite concurrently (about half a million ranges a second
// here); a tight loop outruns it, so most of its pairs meet a full ring, whose drop path costs
// about what the record path does. BM_NvtxPushPopPaced pauses for the writer instead, so that
// every timed pair is recorded. At exit the program prints how many ranges reached the shard and
// how many were dropped.
#include <benchmark/benchmark.h>
#include <nvtx3/nvToolsExt.h>
#include <stdlib.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "zbkit/profiler/shard.h"

namespace {

bool g_tool = true;
std::string g_shard_dir;

void BM_NvtxPushPopA(benchmark::State& state) {
  for (auto _ : state) {
    nvtxRangePushA("F12.0.0");
    nvtxRangePop();
  }
  state.SetLabel(g_tool ? "tool attached" : "no tool");
}
BENCHMARK(BM_NvtxPushPopA)->Threads(1)->Threads(2);

// Bursts of 4096 pairs (a quarter of a thread's ring) with an untimed pause after each for the
// writer to drain: every timed pair takes the record path, none is dropped.
void BM_NvtxPushPopPaced(benchmark::State& state) {
  int64_t in_burst = 0;
  for (auto _ : state) {
    nvtxRangePushA("F12.0.0");
    nvtxRangePop();
    if (++in_burst == 4096) {
      state.PauseTiming();
      usleep(g_tool ? 8000 : 0);
      in_burst = 0;
      state.ResumeTiming();
    }
  }
  state.SetLabel(g_tool ? "tool attached" : "no tool");
}
BENCHMARK(BM_NvtxPushPopPaced)->Iterations(4096 * 300);

// 64 distinct names rebuilt into one buffer, as Python's f-strings do: content-keyed lookups.
void BM_NvtxPushPopChangingNames(benchmark::State& state) {
  std::array<std::array<char, 16>, 64> names;
  for (size_t i = 0; i < names.size(); ++i)
    std::snprintf(names[i].data(), 16, "B%zu.0.0", i);
  char buffer[16];
  size_t i = 0;
  for (auto _ : state) {
    std::memcpy(buffer, names[i++ & 63].data(), sizeof(buffer));
    nvtxRangePushA(buffer);
    nvtxRangePop();
  }
  state.SetLabel(g_tool ? "tool attached" : "no tool");
}
BENCHMARK(BM_NvtxPushPopChangingNames);

// NCCL's form: a registered string pushed in its own domain.
void BM_NvtxDomainPushPopRegistered(benchmark::State& state) {
  static nvtxDomainHandle_t domain = nvtxDomainCreateA("NCCL");
  static nvtxStringHandle_t name = nvtxDomainRegisterStringA(domain, "ncclSend");
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  attributes.message.registered = name;
  for (auto _ : state) {
    nvtxDomainRangePushEx(domain, &attributes);
    nvtxDomainRangePop(domain);
  }
  state.SetLabel(g_tool ? "tool attached" : "no tool");
}
BENCHMARK(BM_NvtxDomainPushPopRegistered);

void BM_NvtxStartEnd(benchmark::State& state) {
  for (auto _ : state)
    nvtxRangeEnd(nvtxRangeStartA("handoff"));
  state.SetLabel(g_tool ? "tool attached" : "no tool");
}
BENCHMARK(BM_NvtxStartEnd);

// Runs after the library's own exit hook (registered later, so it runs first): the shard is
// complete by then.
void ReportShard() {
  if (g_shard_dir.empty()) return;
  auto shards = zb::profiler::ListShards(g_shard_dir);
  if (shards.ok()) {
    for (const std::string& path : *shards) {
      auto trace = zb::profiler::ReadShard(path);
      if (!trace.ok()) {
        std::fprintf(stderr, "inject_bench: %s\n", trace.status().message().c_str());
        continue;
      }
      std::printf("shard %s: %zu ranges written, %lld dropped (rings full)\n", path.c_str(),
                  trace->ranges.size(), static_cast<long long>(trace->dropped_records));
    }
  }
  std::filesystem::remove_all(g_shard_dir);
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--no-tool") == 0) {
      g_tool = false;
      for (int j = i; j + 1 < argc; ++j)
        argv[j] = argv[j + 1];
      --argc;
      break;
    }
  }
  if (g_tool) {
    // Before the first NVTX call: NVTX looks for a tool exactly once.
    char pattern[] = "/tmp/zbkit_inject_bench_XXXXXX";
    if (mkdtemp(pattern) == nullptr) return 1;
    g_shard_dir = pattern;
    setenv("NVTX_INJECTION64_PATH", ZBKIT_INJECT_LIBRARY, 1);
    setenv("ZBKIT_SHARD_DIR", g_shard_dir.c_str(), 1);
    std::atexit(ReportShard);
  } else {
    unsetenv("NVTX_INJECTION64_PATH");
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
