// SPDX-License-Identifier: Apache-2.0
// zbview's load path for a 1M-op timeline from the store: Store::LoadTimeline, TimelineIndex
// construction, and the whole worker load of the window (zb::gui::LoadItem: open, read, index,
// figures, per-rank busy time, largest bubbles), plus the peak RSS of the loads.
// Targets (docs/benchmarks.md): load <= 1 s, memory <= 300 MB.
//
// Run: build-release/bench/zbkit_gui_load_bench [--store FILE] [--ops N] [benchmark flags]
// Without --store a store holding one N-op measured timeline (ZB-H1 on 8 ranks, a memory sample
// per op; N = 1,000,000) is built in a temporary folder first. Peak RSS: the build's memory is
// returned (malloc_trim) and the kernel's high-water mark reset (/proc/self/clear_refs, 5)
// before the benchmarks run, so getrusage's ru_maxrss afterwards is the loads' own peak.
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "loader.h"
#include "zbkit/schemas/store.h"
#include "zbkit/schemas/timeline_index.h"
#include "zbkit/tuner/families.h"
#include "zbkit/tuner/simulator.h"

namespace {

std::string g_store;
int64_t g_timeline_id = 0;
int64_t g_ops = 0;

double PeakRssMb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // KiB on Linux
}

double CurrentRssMb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024.0;
  }
  return 0;
}

bool ResetPeakRss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

// One measured timeline of about `ops` ops; returns its id or 0.
int64_t BuildStore(const std::string& path, int64_t ops) {
  const int ranks = 8;
  const int microbatches = static_cast<int>((ops + 3 * ranks - 1) / (3 * ranks));
  zb::CostProfile costs;
  costs.comm = 10'000;
  costs.stages.assign(ranks, zb::StageCost{100'000, 100'000, 50'000, 1, 0.4});
  costs.stages.back().f += 20'000;  // a slower last stage, so the lanes hold real bubbles
  auto schedule = zb::tuner::ZbH1(costs, microbatches);
  if (!schedule.ok() || !zb::tuner::Simulate(*schedule).ok()) return 0;
  zb::Timeline timeline = zb::TimelineFromSchedule(*schedule);
  timeline.kind = zb::TimelineKind::kMeasured;
  auto store = zb::Store::Open(path);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().message().c_str());
    return 0;
  }
  auto id = store->InsertTimeline(std::nullopt, timeline);
  if (!id.ok()) {
    std::fprintf(stderr, "%s\n", id.status().message().c_str());
    return 0;
  }
  return *id;
}

void Report(benchmark::State& state) {
  state.counters["ops"] = static_cast<double>(g_ops);
  state.counters["peak_rss_MB"] = PeakRssMb();
}

void BM_StoreLoadTimeline(benchmark::State& state) {
  auto store = zb::Store::Open(g_store, zb::Store::Mode::kReadOnly);
  if (!store.ok()) {
    state.SkipWithError(store.status().message().c_str());
    return;
  }
  for (auto _ : state) {
    auto timeline = store->LoadTimeline(g_timeline_id);
    if (!timeline.ok()) state.SkipWithError(timeline.status().message().c_str());
    benchmark::DoNotOptimize(timeline);
  }
  Report(state);
}

void BM_BuildTimelineIndex(benchmark::State& state) {
  auto store = zb::Store::Open(g_store, zb::Store::Mode::kReadOnly);
  if (!store.ok()) {
    state.SkipWithError(store.status().message().c_str());
    return;
  }
  auto timeline = store->LoadTimeline(g_timeline_id);
  if (!timeline.ok()) {
    state.SkipWithError(timeline.status().message().c_str());
    return;
  }
  for (auto _ : state) {
    zb::TimelineIndex index(*timeline, 10'000, 8);
    benchmark::DoNotOptimize(index.num_ops());
  }
  Report(state);
}

// The acceptance figure: what "loading a 1M-op timeline" costs, from the file to a drawable index.
void BM_LoadTimelineAndIndex(benchmark::State& state) {
  for (auto _ : state) {
    auto store = zb::Store::Open(g_store, zb::Store::Mode::kReadOnly);
    if (!store.ok()) {
      state.SkipWithError(store.status().message().c_str());
      break;
    }
    auto timeline = store->LoadTimeline(g_timeline_id);
    if (!timeline.ok()) {
      state.SkipWithError(timeline.status().message().c_str());
      break;
    }
    auto index = std::make_shared<const zb::TimelineIndex>(*timeline, 10'000, 8);
    benchmark::DoNotOptimize(index->num_ops());
  }
  Report(state);
}

// What the window's worker does for the same item (zb::gui::LoadItem).
void BM_GuiLoadItem(benchmark::State& state) {
  auto listing = zb::gui::ReadListing(g_store);
  if (!listing.ok()) {
    state.SkipWithError(listing.status().message().c_str());
    return;
  }
  for (auto _ : state) {
    auto item = zb::gui::LoadItem(*listing, {zb::gui::ItemKind::kTimeline, g_timeline_id});
    if (!item.ok()) {
      state.SkipWithError(item.status().message().c_str());
      break;
    }
    benchmark::DoNotOptimize(item->index->num_ops());
  }
  Report(state);
}

BENCHMARK(BM_StoreLoadTimeline)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_BuildTimelineIndex)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LoadTimelineAndIndex)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_GuiLoadItem)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  // Our flags first; the rest go to Google Benchmark.
  std::vector<char*> rest = {argv[0]};
  int64_t ops = 1'000'000;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--store") == 0 && i + 1 < argc) {
      g_store = argv[++i];
    } else if (std::strcmp(argv[i], "--ops") == 0 && i + 1 < argc) {
      ops = std::strtoll(argv[++i], nullptr, 10);
    } else {
      rest.push_back(argv[i]);
    }
  }
  std::filesystem::path temporary;
  if (g_store.empty()) {
    temporary = std::filesystem::temp_directory_path() /
                ("zbkit_gui_load_bench." + std::to_string(::getpid()));
    std::filesystem::create_directories(temporary);
    g_store = (temporary / "million.db").string();
    std::fprintf(stderr, "building a %lld-op store in %s ...\n", static_cast<long long>(ops),
                 g_store.c_str());
    if (BuildStore(g_store, ops) == 0) return 1;
  }
  {
    // The timeline to load: the largest in the store.
    auto listing = zb::gui::ReadListing(g_store);
    if (!listing.ok() || listing->timelines.empty()) {
      std::fprintf(stderr, "%s: no timeline to load\n", g_store.c_str());
      return 1;
    }
    for (const zb::TimelineInfo& info : listing->timelines) {
      if (info.num_ops > g_ops) {
        g_ops = info.num_ops;
        g_timeline_id = info.id;
      }
    }
  }
  malloc_trim(0);
  const bool reset = ResetPeakRss();
  std::fprintf(stderr, "timeline %lld: %lld ops; RSS before loading %.1f MB%s\n",
               static_cast<long long>(g_timeline_id), static_cast<long long>(g_ops), CurrentRssMb(),
               reset ? " (peak reset)" : " (could not reset the peak: it includes the build)");

  int bench_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&bench_argc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(bench_argc, rest.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::fprintf(stderr, "peak RSS of the loads (getrusage ru_maxrss): %.1f MB\n", PeakRssMb());
  if (!temporary.empty()) {
    std::error_code error;
    std::filesystem::remove_all(temporary, error);
  }
  return 0;
}
