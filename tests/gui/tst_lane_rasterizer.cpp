// SPDX-License-Identifier: Apache-2.0
// LaneRasterizer without a widget: small hand-made lanes rasterised into a QImage, every pixel
// that matters checked against the palette: exact blocks and the separator between abutting wide
// blocks, the stacked columns of sub-pixel ops (idle on top, at least one pixel per kind), the
// bubble tint inside a rank's activity and plain background outside it, the strip that marks
// highlighted sub-pixel ops, and rows outside the lane left alone.
#include <QtTest>
#include <algorithm>

#include "gui_test_support.h"
#include "zbkit/gui/lane_rasterizer.h"
#include "zbkit/gui/palette.h"

using namespace zb;
using namespace zb::gui;
using namespace zb::gui::testing;

namespace {

constexpr QRgb kUntouched = 0xFF010203;  // what the image holds outside the rasterised rows

QRgb Kind(OpKind kind) {
  return ColorOf(kind).rgb();
}

// The colours of column `c`, rows [y0, y0 + h), top to bottom.
std::vector<QRgb> Column(const QImage& image, int c, int y0, int h) {
  std::vector<QRgb> colours;
  for (int y = y0; y < y0 + h; ++y)
    colours.push_back(image.pixel(c, y));
  return colours;
}

QString Describe(const std::vector<QRgb>& colours) {
  QStringList parts;
  for (QRgb rgb : colours)
    parts << zb::gui::testing::Describe(rgb);
  return parts.join(u' ');
}

LaneRasterizer::Lane RankLane(const TimelineIndex& index, int rank) {
  LaneRasterizer::Lane lane;
  lane.lane = index.RankLane(rank);
  const TimelineLane& ops = index.lane(lane.lane);
  lane.active0 = ops.start.front();
  lane.active1 = *std::max_element(ops.end.begin(), ops.end.end());
  lane.tint_bubbles = true;
  return lane;
}

}  // namespace

class TestLaneRasterizer : public QObject {
  Q_OBJECT

 private slots:
  // One column per nanosecond-block: F [0,10) and B [10,20) abut, idle [20,30), W [30,40).
  void exactBlocksSeparatorAndBubble() {
    Timeline timeline;
    timeline.ops = {TimedOp(0, 0, OpKind::kF, 0, 0, 10), TimedOp(0, 0, OpKind::kB, 0, 10, 20),
                    TimedOp(0, 0, OpKind::kW, 0, 30, 40)};
    const TimelineIndex index(timeline);
    LaneRasterizer rasterizer;
    rasterizer.SetFrame(0, 40, 40);
    QCOMPARE(rasterizer.columns(), 40);
    QCOMPARE(rasterizer.ColumnOf(15), 15);
    QCOMPARE(rasterizer.ColumnOf(-1), -1);
    QCOMPARE(rasterizer.ColumnOf(40), 40);

    QImage image(40, 20, QImage::Format_RGB32);
    image.fill(kUntouched);
    LaneRasterizer::LaneResult result;
    RenderStats stats;
    rasterizer.Rasterize(index, RankLane(index, 0), &image, 5, 10, &result, &stats);
    SaveArtifact(image, QStringLiteral("lane_rasterizer_exact.png"));

    QCOMPARE(result.first, size_t{0});
    QCOMPARE(result.last, size_t{3});
    QCOMPARE(result.exact, (std::vector<size_t>{0, 1, 2}));
    QVERIFY(result.outlined.empty());
    QCOMPARE(stats.ops_in_view, int64_t{3});
    QCOMPARE(stats.exact_blocks, int64_t{3});
    QCOMPARE(stats.primitives, int64_t{4});  // F, B, W rectangles and one separator

    const std::vector<QRgb> f(10, Kind(OpKind::kF));
    const std::vector<QRgb> b(10, Kind(OpKind::kB));
    const std::vector<QRgb> w(10, Kind(OpKind::kW));
    const std::vector<QRgb> bubble(10, BubbleColor().rgb());
    const std::vector<QRgb> separator(10, SeparatorColor(OpKind::kB).rgb());
    for (int c = 0; c < 10; ++c)
      QCOMPARE(Column(image, c, 5, 10), f);
    QCOMPARE(Column(image, 10, 5, 10), separator);  // B's first column, against F
    for (int c = 11; c < 20; ++c)
      QCOMPARE(Column(image, c, 5, 10), b);
    for (int c = 20; c < 30; ++c)
      QCOMPARE(Column(image, c, 5, 10), bubble);
    // W follows idle, not a block: no separator.
    for (int c = 30; c < 40; ++c)
      QCOMPARE(Column(image, c, 5, 10), w);
    // Rows above and below the lane are not the rasteriser's.
    for (int y : {0, 4, 15, 19}) {
      for (int c = 0; c < 40; ++c)
        QCOMPARE(image.pixel(c, y), kUntouched);
    }
  }

  // 100 ns per column, 10 rows: ops far below a column's width stack in proportion.
  void subPixelOpsStackInProportion() {
    Timeline timeline;
    timeline.ops = {TimedOp(0, 0, OpKind::kF, 0, 0, 30), TimedOp(0, 0, OpKind::kB, 0, 30, 40),
                    TimedOp(0, 0, OpKind::kF, 1, 250, 251),  // 1 ns: must not vanish
                    TimedOp(0, 0, OpKind::kW, 0, 500, 600)};
    const TimelineIndex index(timeline);
    LaneRasterizer rasterizer;
    rasterizer.SetFrame(0, 1000, 10);
    QImage image(10, 10, QImage::Format_RGB32);
    image.fill(kUntouched);
    LaneRasterizer::LaneResult result;
    RenderStats stats;
    rasterizer.Rasterize(index, RankLane(index, 0), &image, 0, 10, &result, &stats);
    SaveArtifact(image.scaled(100, 100), QStringLiteral("lane_rasterizer_binned.png"));

    const QRgb bubble = BubbleColor().rgb();
    const QRgb background = BackgroundColor().rgb();
    const QRgb f = Kind(OpKind::kF);
    const QRgb b = Kind(OpKind::kB);
    // Column 0: 40% busy = 4 rows (F 3, B 1, B above F), idle on top tinted as a bubble.
    const std::vector<QRgb> column0 = {bubble, bubble, bubble, bubble, bubble, bubble, b, f, f, f};
    QVERIFY2(Column(image, 0, 0, 10) == column0, qPrintable(Describe(Column(image, 0, 0, 10))));
    // Column 2: one nanosecond of F still gets a pixel.
    std::vector<QRgb> column2(10, bubble);
    column2[9] = f;
    QVERIFY2(Column(image, 2, 0, 10) == column2, qPrintable(Describe(Column(image, 2, 0, 10))));
    // Column 3: idle inside the rank's activity.
    QCOMPARE(Column(image, 3, 0, 10), std::vector<QRgb>(10, bubble));
    // Column 5: W fills it exactly.
    QCOMPARE(Column(image, 5, 0, 10), std::vector<QRgb>(10, Kind(OpKind::kW)));
    // Column 7: after the rank's last op, plain background.
    QCOMPARE(Column(image, 7, 0, 10), std::vector<QRgb>(10, background));
    QCOMPARE(stats.ops_in_view, int64_t{4});
    QCOMPARE(stats.binned_columns, int64_t{2});     // columns 0 and 2
    QCOMPARE(result.exact, std::vector<size_t>{});  // the W is one column, not three
  }

  void highlightedOpsAreMarkedOrOutlined() {
    Timeline timeline;
    timeline.ops = {TimedOp(0, 0, OpKind::kF, 0, 0, 50),      // sub-pixel at 100 ns/column
                    TimedOp(0, 0, OpKind::kB, 0, 100, 900)};  // 8 columns: an exact block
    const TimelineIndex index(timeline);
    LaneRasterizer rasterizer;
    rasterizer.SetFrame(0, 1000, 10);
    QImage image(10, 12, QImage::Format_RGB32);
    const std::vector<size_t> highlighted = {0, 1};
    LaneRasterizer::Lane lane = RankLane(index, 0);
    lane.highlighted = &highlighted;
    LaneRasterizer::LaneResult result;
    RenderStats stats;
    rasterizer.Rasterize(index, lane, &image, 0, 12, &result, &stats);

    QCOMPARE(stats.highlighted, int64_t{2});
    QCOMPARE(result.outlined, std::vector<size_t>{1});  // the overlay outlines the wide one
    // The sub-pixel one: a strip of max(2, 12 / 6) rows along the lane's top of its column.
    const QRgb highlight = HighlightColor().rgb();
    QCOMPARE(image.pixel(0, 0), highlight);
    QCOMPARE(image.pixel(0, 1), highlight);
    QVERIFY(image.pixel(0, 2) != highlight);
    QCOMPARE(image.pixel(0, 11), Kind(OpKind::kF));
    for (int c = 1; c < 10; ++c)
      QVERIFY(image.pixel(c, 0) != highlight);
  }

  void laneWithNothingInViewIsBubbleInsideTheActivity() {
    Timeline timeline;
    timeline.ops = {TimedOp(0, 0, OpKind::kF, 0, 0, 100), TimedOp(0, 0, OpKind::kB, 0, 900, 1000)};
    const TimelineIndex index(timeline);
    LaneRasterizer rasterizer;
    rasterizer.SetFrame(200, 800, 6);  // between the two ops
    QImage image(6, 4, QImage::Format_RGB32);
    image.fill(kUntouched);
    LaneRasterizer::LaneResult result;
    RenderStats stats;
    rasterizer.Rasterize(index, RankLane(index, 0), &image, 0, 4, &result, &stats);
    QCOMPARE(result.first, result.last);
    QCOMPARE(stats.ops_in_view, int64_t{0});
    for (int c = 0; c < 6; ++c)
      QCOMPARE(Column(image, c, 0, 4), std::vector<QRgb>(4, BubbleColor().rgb()));

    // Without the tint (a stage or comm lane), the same idle is background.
    LaneRasterizer::Lane plain = RankLane(index, 0);
    plain.tint_bubbles = false;
    rasterizer.Rasterize(index, plain, &image, 0, 4, &result, &stats);
    for (int c = 0; c < 6; ++c)
      QCOMPARE(Column(image, c, 0, 4), std::vector<QRgb>(4, BackgroundColor().rgb()));
  }
};

QTEST_MAIN(TestLaneRasterizer)
#include "tst_lane_rasterizer.moc"
