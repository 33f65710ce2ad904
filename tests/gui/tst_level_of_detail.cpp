// SPDX-License-Identifier: Apache-2.0
// Level of detail (docs/zbview.md §2): at every zoom, every op in view shows its kind's
// colour in its own pixel columns (no block vanishes, Tracy #1253), idle time stays visible in
// proportion when 1M ops are zoomed out, and the primitive count stays bounded. Counts pixels
// and primitives, never time.
#include <QElapsedTimer>
#include <QtTest>
#include <random>

#include "gui_test_support.h"
#include "zbkit/gui/palette.h"
#include "zbkit/gui/timeline_view.h"

using namespace zb;
using namespace zb::gui;
using namespace zb::gui::testing;

namespace {

// A measured-looking timeline with every lane kind: durations from 100 ns to 1 ms (log-uniform)
// so that every zoom has both sub-pixel and wide blocks, gaps often zero (same-kind neighbours
// that must not fuse), rank 0 holding two stages, and overlapping comm ops on a comm lane.
Timeline MixedTimeline(int ranks, int ops_per_rank, uint32_t seed) {
  Timeline timeline;
  timeline.kind = TimelineKind::kMeasured;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> log_duration(2.0, 6.0);  // 100 ns .. 1 ms
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_int_distribution<int> kind(0, 3);
  for (int r = 0; r < ranks; ++r) {
    TimeNs t = r * 1000;
    for (int i = 0; i < ops_per_rank; ++i) {
      const auto d = static_cast<TimeNs>(std::pow(10.0, log_duration(rng)));
      const int stage = r == 0 && i % 2 == 1 ? ranks : r;
      timeline.ops.push_back(TimedOp(r, stage, static_cast<OpKind>(kind(rng)), i, t, t + d));
      t += d;
      const double g = unit(rng);
      if (g > 0.4) t += static_cast<TimeNs>(std::pow(10.0, 1.0 + 4.0 * unit(rng)));
    }
    // Comm ops overlap each other and the compute ops.
    for (int i = 0; i < ops_per_rank / 4; ++i) {
      const auto start = static_cast<TimeNs>(unit(rng) * static_cast<double>(t));
      const auto d = static_cast<TimeNs>(std::pow(10.0, log_duration(rng)));
      timeline.ops.push_back(TimedOp(r, r, OpKind::kComm, i, start, start + d));
    }
  }
  return timeline;
}

int KindOfPixel(QRgb rgb) {
  for (int k = 0; k < Coverage::kKinds; ++k) {
    if (rgb == ColorOf(static_cast<OpKind>(k)).rgb()) return k;
  }
  return -1;
}

// Ops of any lane in view whose kind colour is missing from every column they cover.
QStringList VanishedOps(const TimelineView& view, const TimelineIndex& index, const QImage& image) {
  QStringList vanished;
  const TimeRange range = view.viewState()->visibleRange();
  const int label_width = view.laneLabelWidth();
  const int columns = image.width() - label_width;
  std::vector<TimeNs> edges(columns + 1);
  for (int c = 0; c <= columns; ++c)
    edges[c] = ColumnEdge(range.t0, range.t1, columns, c);
  const auto column_of = [&](TimeNs t) {
    return static_cast<int>(std::upper_bound(edges.begin(), edges.end(), t) - edges.begin()) - 1;
  };
  std::vector<uint8_t> kinds(columns);  // per column, bit k set when kind k has a pixel
  for (int lane = 0; lane < static_cast<int>(index.lanes().size()); ++lane) {
    const QRect row = view.laneRect(lane);
    if (row.isEmpty()) continue;
    std::fill(kinds.begin(), kinds.end(), 0);
    for (int y = row.top(); y <= row.bottom() && y < image.height(); ++y) {
      const auto* line = reinterpret_cast<const QRgb*>(image.constScanLine(y));
      for (int c = 0; c < columns; ++c) {
        const int k = KindOfPixel(line[label_width + c]);
        if (k >= 0) kinds[c] |= static_cast<uint8_t>(1u << k);
      }
    }
    const TimelineLane& l = index.lane(lane);
    const auto [first, last] = index.Visible(lane, range.t0, range.t1);
    for (size_t i = first; i < last; ++i) {
      const TimeNs s = std::max(l.start[i], range.t0);
      const TimeNs e = std::min(l.end[i], range.t1);
      if (e <= s) continue;  // touches the range without being inside it
      // The columns the op covers, by the index's own column edges.
      const int c0 = std::clamp(column_of(s), 0, columns - 1);
      const int c1 = std::clamp(column_of(e - 1), c0, columns - 1);
      const auto bit = static_cast<uint8_t>(1u << static_cast<int>(l.kind_of[i]));
      bool found = false;
      for (int c = c0; c <= c1 && !found; ++c)
        found = (kinds[c] & bit) != 0;
      if (!found && vanished.size() < 10) {
        vanished << QStringLiteral("lane %1 op %2 (%3 [%4, %5)) columns %6..%7")
                        .arg(lane)
                        .arg(i)
                        .arg(QLatin1String(OpKindName(l.kind_of[i])))
                        .arg(l.start[i])
                        .arg(l.end[i])
                        .arg(c0)
                        .arg(c1);
      }
    }
  }
  return vanished;
}

}  // namespace

class LevelOfDetailTest : public QObject {
  Q_OBJECT

 private slots:
  // Warns when text cannot render; the pixels checked here are never text.
  void initTestCase() { FontsAvailable(); }

  // Zoom in and out in many steps, around several anchors, down to the span floor and back:
  // after every step every op in view is in the picture, and primitives stay bounded.
  void noBlockVanishesAtAnyZoom() {
    auto index = MakeIndex(MixedTimeline(4, 3000, 7));
    TimelineView view;
    view.resize(900, 420);
    view.setShowLabels(false);
    view.setShowWaitLinks(false);
    view.setTimeline(index);
    ViewState* state = view.viewState();
    const int lanes = static_cast<int>(index->lanes().size());
    QVERIFY(lanes > 8);  // rank, stage and comm lanes
    std::mt19937 rng(3);
    int steps = 0;
    int64_t max_exact = 0;
    for (int round = 0; round < 3; ++round) {
      state->fitAll();
      const TimeRange all = state->visibleRange();
      std::uniform_int_distribution<TimeNs> anchor_dist(all.t0, all.t1);
      const TimeNs anchor = anchor_dist(rng);
      for (int zoom = 0; zoom < 40; ++zoom) {
        const double factor = zoom < 25 ? 0.5 : 1.0 / 0.5;
        state->zoomAt(anchor, factor);
        if (zoom % 5 == 4) state->pan(state->visibleRange().length() / 3);
        const QImage image = view.grab().toImage();
        if (round == 0 && zoom % 8 == 0) {
          SaveArtifact(image,
                       QStringLiteral("lod_mixed_zoom_%1.png").arg(zoom, 2, 10, QLatin1Char('0')));
        }
        const QStringList vanished = VanishedOps(view, *index, image);
        if (!vanished.isEmpty()) {
          SaveArtifact(image, QStringLiteral("lod_vanished.png"));
          QFAIL(qPrintable(QStringLiteral("step %1, range [%2, %3): ")
                               .arg(steps)
                               .arg(state->visibleRange().t0)
                               .arg(state->visibleRange().t1) +
                           vanished.join(QStringLiteral("; "))));
        }
        const RenderStats& stats = view.lastRenderStats();
        const int64_t columns = view.width() - view.laneLabelWidth();
        // Pixel spans of the binned columns plus separators and outlines of blocks.
        QVERIFY2(stats.primitives <= lanes * columns * Coverage::kKinds,
                 qPrintable(QString::number(stats.primitives)));
        max_exact = std::max(max_exact, stats.exact_blocks);
        ++steps;
      }
    }
    QVERIFY(state->visibleRange().length() >= ViewState::kMinimumSpan);
    QVERIFY(max_exact > 0);
    qInfo("%d zoom steps checked, up to %lld exact blocks", steps,
          static_cast<long long>(max_exact));
  }

  // Zooming in and then back through the history returns exactly, and the span floor holds.
  void zoomRoundTripAndFloor() {
    auto index = MakeIndex(MixedTimeline(2, 2000, 11));
    TimelineView view;
    view.resize(800, 300);
    view.setTimeline(index);
    ViewState* state = view.viewState();
    const TimeRange start = state->visibleRange();
    const TimeNs anchor = (index->begin() + index->end()) / 3;
    std::vector<TimeRange> seen;
    for (int i = 0; i < 60; ++i) {
      seen.push_back(state->visibleRange());
      state->zoomAt(anchor, 0.6);
      view.grab();  // painting at the floor must not hang
    }
    QCOMPARE(state->visibleRange().length(), ViewState::kMinimumSpan);
    const QImage deep = view.grab().toImage();
    QVERIFY(VanishedOps(view, *index, deep).isEmpty());
    // Back through the history: every recorded step in reverse, ending where it started.
    int back = 0;
    while (state->canZoomBack()) {
      state->zoomBack();
      ++back;
    }
    QCOMPARE(state->visibleRange(), start);
    QVERIFY(back > 10);
    QVERIFY(VanishedOps(view, *index, view.grab().toImage()).isEmpty());
  }

  // 1M ops, fit-all at 1600x800: each rank lane reads as a utilisation chart whose idle share
  // matches the data's 20 % idle (spread in small gaps, the case a naive renderer hides).
  void idleVisibleWithOneMillionOpsZoomedOut() {
    const int ranks = 16;
    const int per_rank = 62500;
    const double idle = 0.2;
    const Timeline timeline = SyntheticTimeline(ranks, per_rank, idle);
    auto index = MakeIndex(timeline);
    QCOMPARE(index->num_ops(), int64_t{ranks} * per_rank);
    TimelineView view;
    view.resize(1600, 800);
    view.setTimeline(index);
    QElapsedTimer timer;
    timer.start();
    const QImage image = view.grab().toImage();
    qInfo("1M ops fit-all grab: %lld ms (informative; timing is the benchmark's job)",
          static_cast<long long>(timer.elapsed()));
    SaveArtifact(image, QStringLiteral("lod_1m_ops_fit_all.png"));
    const RenderStats& stats = view.lastRenderStats();
    QCOMPARE(stats.ops_in_view, int64_t{ranks} * per_rank);
    QCOMPARE(stats.exact_blocks, 0);
    const int64_t columns = view.width() - view.laneLabelWidth();
    QVERIFY2(stats.primitives <= ranks * columns * Coverage::kKinds,
             qPrintable(QString::number(stats.primitives)));
    QVERIFY(stats.binned_columns > 0);

    const QRgb bubble = BubbleColor().rgb();
    const QRgb background = BackgroundColor().rgb();
    for (int rank = 0; rank < ranks; ++rank) {
      const int lane = index->RankLane(rank);
      const TimelineLane& l = index->lane(lane);
      // This rank's true idle share over its active span.
      TimeNs busy = 0;
      for (size_t i = 0; i < l.size(); ++i)
        busy += l.end[i] - l.start[i];
      const TimeNs span = l.end.back() - l.start.front();
      const double truth = 1.0 - static_cast<double>(busy) / static_cast<double>(span);
      // Pixels in the columns well inside the active span.
      const QRect row = view.laneRect(lane);
      const int x0 = static_cast<int>(std::ceil(view.xForTime(l.start.front()))) + 1;
      const int x1 = static_cast<int>(std::floor(view.xForTime(l.end.back()))) - 1;
      int64_t op_pixels = 0;
      int64_t idle_pixels = 0;
      int64_t other = 0;
      std::array<int64_t, Coverage::kKinds> per_kind{};
      for (int y = row.top(); y <= row.bottom(); ++y) {
        const auto* line = reinterpret_cast<const QRgb*>(image.constScanLine(y));
        for (int x = x0; x < x1; ++x) {
          const int k = KindOfPixel(line[x]);
          if (k >= 0) {
            ++op_pixels;
            ++per_kind[k];
          } else if (line[x] == bubble || line[x] == background) {
            ++idle_pixels;
          } else {
            ++other;
          }
        }
      }
      QCOMPARE(other, int64_t{0});
      const double shown = static_cast<double>(idle_pixels) / (idle_pixels + op_pixels);
      QVERIFY2(std::abs(shown - truth) < 0.03,
               qPrintable(QStringLiteral("rank %1: %2 idle pixels, %3 idle in the data")
                              .arg(rank)
                              .arg(shown, 0, 'f', 3)
                              .arg(truth, 0, 'f', 3)));
      QVERIFY(truth > idle - 0.03 && truth < idle + 0.03);
      // The three kinds share the busy pixels about equally (random kinds): no moire, no bias.
      for (int k = 0; k < 3; ++k) {
        const double share = static_cast<double>(per_kind[k]) / op_pixels;
        QVERIFY2(share > 0.25 && share < 0.42, qPrintable(QString::number(share)));
      }
      // Inside the active span idle is the bubble tint.
      QVERIFY(idle_pixels > 0);
    }
  }
};

QTEST_MAIN(LevelOfDetailTest)
#include "tst_level_of_detail.moc"
