// SPDX-License-Identifier: Apache-2.0
// Timeline repaint: QWidget::grab() (paint plus grab) of a 1M-op timeline, 16 ranks, at
// 1600x800, zoomed out (fit-all: every op binned) and zoomed in (few hundred exact blocks with
// labels and wait links). The target is a median <= 16 ms on one core, offscreen.
// Run: build-release/bench/zbkit_gui_bench --benchmark_repetitions=5
//        --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <QApplication>
#include <cstdio>
#include <memory>
#include <random>

#include "zbkit/gui/memory_track.h"
#include "zbkit/gui/timeline_view.h"
#include "zbkit/schemas/timeline_index.h"

namespace zb::gui {
namespace {

constexpr int kRanks = 16;
constexpr int kOpsPerRank = 62'500;  // 1M ops

// F/B/W ops of 0.5-1.5 us with about 20 % idle in small gaps, plus activation memory samples,
// the worst case for binning (every column holds about 40 ops of three kinds).
std::shared_ptr<const TimelineIndex> MillionOps() {
  static std::shared_ptr<const TimelineIndex> index = [] {
    Timeline timeline;
    timeline.ops.reserve(static_cast<size_t>(kRanks) * kOpsPerRank);
    std::mt19937 rng(1);
    std::uniform_int_distribution<TimeNs> duration(500, 1500);
    std::uniform_int_distribution<TimeNs> gap(0, 500);
    std::uniform_int_distribution<int> kind(0, 2);
    for (int r = 0; r < kRanks; ++r) {
      TimeNs t = r * 2000;
      double memory = 0;
      for (int i = 0; i < kOpsPerRank; ++i) {
        const TimeNs d = duration(rng);
        const auto k = static_cast<OpKind>(kind(rng));
        timeline.ops.push_back({r, r, k, i / 3, t, t + d});
        memory = std::max(0.0, memory + (k == OpKind::kF ? 1.0 : -0.5));
        timeline.memory.push_back({r, t + d, memory});
        t += d + gap(rng);
      }
    }
    return std::make_shared<const TimelineIndex>(timeline, 0, kRanks);
  }();
  return index;
}

// Full repaints: the view caches its lanes image while nothing but hover or selection changes,
// so each iteration changes the window by a nanosecond and back (what a pan or zoom step costs).
void Repaint(benchmark::State& state, QWidget& widget, ViewState* view_state) {
  const TimeRange range = view_state->visibleRange();
  bool shifted = false;
  for (auto _ : state) {
    shifted = !shifted;
    view_state->setVisibleRange({range.t0, range.t1 - (shifted ? 1 : 0)}, false);
    QPixmap pixmap = widget.grab();
    benchmark::DoNotOptimize(pixmap);
  }
}

void BM_TimelineRepaint_FitAll(benchmark::State& state) {
  TimelineView view;
  view.resize(1600, 800);
  view.setTimeline(MillionOps());
  Repaint(state, view, view.viewState());
  state.counters["ops_in_view"] = static_cast<double>(view.lastRenderStats().ops_in_view);
  state.counters["primitives"] = static_cast<double>(view.lastRenderStats().primitives);
}
BENCHMARK(BM_TimelineRepaint_FitAll)->Unit(benchmark::kMillisecond)->UseRealTime();

// Zoomed to 1/2000 of the trace: about 500 ops in view, all exact, labelled, wait links on.
void BM_TimelineRepaint_ZoomedIn(benchmark::State& state) {
  TimelineView view;
  view.resize(1600, 800);
  view.setTimeline(MillionOps());
  const TimeRange all = view.viewState()->visibleRange();
  view.viewState()->zoomAt(all.t0 + all.length() / 2, 1.0 / 2000);
  Repaint(state, view, view.viewState());
  state.counters["ops_in_view"] = static_cast<double>(view.lastRenderStats().ops_in_view);
  state.counters["labels"] = static_cast<double>(view.lastRenderStats().labels);
}
BENCHMARK(BM_TimelineRepaint_ZoomedIn)->Unit(benchmark::kMillisecond)->UseRealTime();

// Halfway: about 60 ops per lane-width, mixed exact blocks and binned columns.
void BM_TimelineRepaint_Mid(benchmark::State& state) {
  TimelineView view;
  view.resize(1600, 800);
  view.setTimeline(MillionOps());
  const TimeRange all = view.viewState()->visibleRange();
  view.viewState()->zoomAt(all.t0 + all.length() / 2, 1.0 / 40);
  Repaint(state, view, view.viewState());
  state.counters["ops_in_view"] = static_cast<double>(view.lastRenderStats().ops_in_view);
}
BENCHMARK(BM_TimelineRepaint_Mid)->Unit(benchmark::kMillisecond)->UseRealTime();

// Hovering: only the hover line moves, the lanes image is reused.
void BM_TimelineRepaint_Hover(benchmark::State& state) {
  TimelineView view;
  view.resize(1600, 800);
  view.setTimeline(MillionOps());
  view.grab();
  const TimeRange all = view.viewState()->visibleRange();
  TimeNs t = all.t0;
  for (auto _ : state) {
    t += all.length() / 997;
    view.viewState()->setHoverTime(all.t0 + (t - all.t0) % all.length());
    QPixmap pixmap = view.grab();
    benchmark::DoNotOptimize(pixmap);
  }
}
BENCHMARK(BM_TimelineRepaint_Hover)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_MemoryTrackRepaint_FitAll(benchmark::State& state) {
  MemoryTrack track;
  track.resize(1600, 16 * 40);
  track.setTimeline(MillionOps());
  track.viewState()->setTraceRange({MillionOps()->begin(), MillionOps()->end()});
  Repaint(state, track, track.viewState());
}
BENCHMARK(BM_MemoryTrackRepaint_FitAll)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace zb::gui

int main(int argc, char** argv) {
  // Headless by default, like the tests; a real display can still be chosen explicitly.
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("peak RSS: %.1f MB\n", static_cast<double>(usage.ru_maxrss) / 1024.0);
  return 0;
}
