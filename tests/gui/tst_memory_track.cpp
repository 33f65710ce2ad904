// SPDX-License-Identifier: Apache-2.0
// MemoryTrack, headless: the cap is drawn as a dashed line at the cap's height, the curve's
// value at each step is where the shared y scale puts it, the time axis lines up with the
// TimelineView above it, and tooltips name rank, time, memory and cap.
#include <QPainter>
#include <QtTest>
#include <cmath>

#include "gui_test_support.h"
#include "zbkit/gui/memory_track.h"
#include "zbkit/gui/palette.h"
#include "zbkit/gui/timeline_view.h"
#include "zbkit/gui/units.h"

using namespace zb;
using namespace zb::gui;
using namespace zb::gui::testing;

class MemoryTrackTest : public QObject {
  Q_OBJECT

 private slots:
  // docs/zbview.md §10: bytes with binary prefixes, profile units as bare numbers.
  void memoryUnits() {
    using zb::gui::FormatMemory;
    using zb::gui::MemoryUnit;
    QCOMPARE(FormatMemory(512, MemoryUnit::kBytes), QStringLiteral("512 B"));
    QCOMPARE(FormatMemory(1536, MemoryUnit::kBytes), QStringLiteral("1.50 KiB"));
    QCOMPARE(FormatMemory(12.5 * 1024 * 1024, MemoryUnit::kBytes), QStringLiteral("12.5 MiB"));
    QCOMPARE(FormatMemory(1.5 * 1024 * 1024 * 1024, MemoryUnit::kBytes),
             QStringLiteral("1.50 GiB"));
    QCOMPARE(FormatMemory(300.0 * 1024 * 1024 * 1024 * 1024, MemoryUnit::kBytes),
             QStringLiteral("300 TiB"));
    QCOMPARE(FormatMemory(800, MemoryUnit::kProfileUnits), QStringLiteral("800"));
    QCOMPARE(FormatMemory(40, MemoryUnit::kProfileUnits), QStringLiteral("40.00"));
    QCOMPARE(FormatMemory(std::nan(""), MemoryUnit::kBytes), QStringLiteral("none"));
    QCOMPARE(zb::gui::MemoryUnitName(MemoryUnit::kProfileUnits), QStringLiteral("units of M_B"));
  }

  void initTestCase() {
    FontsAvailable();  // warns when text cannot render; the pixels checked are never text
    const CostProfile costs = UniformCosts(4);
    timeline_ = ScheduleTimeline("zb-h1", 8, costs);
    index_ = MakeIndex(timeline_, costs.comm);
    QVERIFY(index_->has_memory());
  }

  void init() {
    view_ = std::make_unique<TimelineView>();
    view_->resize(1600, 300);
    view_->setTimeline(index_);
    track_ = std::make_unique<MemoryTrack>();
    track_->setViewState(view_->viewState());
    track_->setTimeline(index_);
    track_->setLabelWidth(view_->laneLabelWidth());
    track_->resize(1600, 4 * 48);
  }
  void cleanup() {
    track_.reset();
    view_.reset();
  }

  void sharesTheTimeAxis() {
    QCOMPARE(track_->labelWidth(), view_->laneLabelWidth());
    for (TimeNs t : {index_->begin(), (index_->begin() + index_->end()) / 2, index_->end()}) {
      QCOMPARE(track_->xForTime(t), view_->xForTime(t));
    }
    view_->viewState()->zoomAt(index_->end() / 3, 0.25);
    QCOMPARE(track_->xForTime(index_->end() / 2), view_->xForTime(index_->end() / 2));
  }

  void drawsCapLineAndCurve() {
    std::vector<double> caps;
    for (int rank = 0; rank < 4; ++rank)
      caps.push_back(index_->PeakMemory(0) * 1.25);
    track_->setCaps(caps);
    const QImage image = track_->grab().toImage();
    SaveArtifact(image, QStringLiteral("memory_track_zb_h1.png"));
    // Timeline and memory together, as the app stacks them.
    QImage both(1600, view_->height() + track_->height(), QImage::Format_RGB32);
    {
      QPainter painter(&both);
      painter.drawImage(0, 0, view_->grab().toImage());
      painter.drawImage(0, view_->height(), image);
    }
    SaveArtifact(both, QStringLiteral("timeline_with_memory_zb_h1.png"));

    const int plot_left = track_->labelWidth();
    const int plot_width = image.width() - plot_left;
    const QRgb cap = CapColor().rgb();
    const QRgb curve = MemoryColor().rgb();
    for (int rank = 0; rank < 4; ++rank) {
      const QRect row = track_->rowRect(rank);
      QVERIFY(!row.isEmpty());
      // The scale is shared and starts at 0 at the row's bottom.
      QCOMPARE(track_->yForValue(rank, 0), row.bottom());
      const int y = track_->yForValue(rank, caps[rank]);
      QVERIFY(y > row.top() && y < row.bottom());
      int cap_pixels = 0;
      for (int x = plot_left; x < image.width(); ++x)
        cap_pixels += image.pixel(x, y) == cap;
      // Dashed: most, not all, of the width.
      QVERIFY2(cap_pixels > plot_width / 2 && cap_pixels < plot_width,
               qPrintable(QStringLiteral("rank %1: %2 cap pixels").arg(rank).arg(cap_pixels)));
      // No cap colour on other rows of the plot (the line is one pixel).
      int stray = 0;
      for (int x = plot_left; x < image.width(); ++x)
        stray += image.pixel(x, y - 2) == cap;
      QCOMPARE(stray, 0);
      // The curve: at each memory step held for a few pixels, the value's pixel is the curve's.
      std::vector<std::pair<TimeNs, double>> samples;
      for (const MemorySample& s : timeline_.memory) {
        if (s.rank == rank) samples.emplace_back(s.time, s.memory);
      }
      std::sort(samples.begin(), samples.end());
      int checked = 0;
      for (size_t i = 0; i + 1 < samples.size(); ++i) {
        const double xa = track_->xForTime(samples[i].first);
        const double xb = track_->xForTime(samples[i + 1].first);
        if (xb - xa < 4) continue;
        const int x = static_cast<int>(std::floor(xa)) + 2;
        const int yv = track_->yForValue(rank, samples[i].second);
        QVERIFY2(image.pixel(x, yv) == curve,
                 qPrintable(QStringLiteral("rank %1 sample %2 at (%3,%4): %5")
                                .arg(rank)
                                .arg(i)
                                .arg(x)
                                .arg(yv)
                                .arg(Describe(image.pixel(x, yv)))));
        ++checked;
      }
      QVERIFY(checked > 5);
    }
  }

  void envelopeWhenZoomedOut() {
    // Many samples per pixel: the column shows the whole min..max range, not one value.
    const Timeline dense = SyntheticTimeline(2, 100000, 0.2);
    Timeline with_memory = dense;
    double value = 0;
    for (const TimelineOp& op : dense.ops) {
      value += op.kind == OpKind::kF ? 1.0 : -1.0;
      value = std::max(0.0, value);
      with_memory.memory.push_back({op.rank, op.end, value});
    }
    auto index = MakeIndex(with_memory);
    MemoryTrack track;
    track.resize(800, 120);
    track.setTimeline(index);
    track.viewState()->setTraceRange({index->begin(), index->end()});
    const QImage image = track.grab().toImage();
    SaveArtifact(image, QStringLiteral("memory_track_envelope.png"));
    // In a middle column, the coloured run spans several pixels (min..max), not one.
    const QRect row = track.rowRect(0);
    const int x = track.labelWidth() + 400;
    int coloured = 0;
    for (int y = row.top(); y <= row.bottom(); ++y) {
      coloured += image.pixel(x, y) != BackgroundColor().rgb() ? 1 : 0;
    }
    QVERIFY2(coloured >= 3, qPrintable(QString::number(coloured)));
  }

  void tooltip() {
    track_->setCaps({100, 100, 100, 100});
    const QRect row = track_->rowRect(1);
    const QString text = track_->tooltipText(QPoint(track_->labelWidth() + 700, row.center().y()));
    QVERIFY2(text.startsWith(QStringLiteral("rank 1  at ")) &&
                 text.contains(QStringLiteral("memory ")) &&
                 text.contains(QStringLiteral("peak ")) && text.contains(QStringLiteral("cap 100")),
             qPrintable(text));
    QCOMPARE(track_->tooltipText(QPoint(5, row.center().y())), QString());
  }

  void noMemory() {
    Timeline timeline = timeline_;
    timeline.memory.clear();
    auto index = MakeIndex(timeline);
    MemoryTrack track;
    track.resize(600, 100);
    track.setTimeline(index);
    QCOMPARE(track.grab().size(), QSize(600, 100));
    QCOMPARE(track.tooltipText(QPoint(300, 20)), QString());
  }

 private:
  Timeline timeline_;
  std::shared_ptr<const TimelineIndex> index_;
  std::unique_ptr<TimelineView> view_;
  std::unique_ptr<MemoryTrack> track_;
};

QTEST_MAIN(MemoryTrackTest)
#include "tst_memory_track.moc"
