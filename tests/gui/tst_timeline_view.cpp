// SPDX-License-Identifier: Apache-2.0
// TimelineView, headless: tooltips, wheel/drag/key navigation, zoom history, selection and its
// summary, and screenshots checked for the exact kind colours at block centres and the bubble
// tint in bubbles (docs/zbview.md §4). PNGs go to ZBKIT_TEST_OUTPUT_DIR.
#include <QSignalSpy>
#include <QtTest>

#include "gui_test_support.h"
#include "zbkit/gui/palette.h"
#include "zbkit/gui/timeline_view.h"
#include "zbkit/gui/view_state.h"

using namespace zb;
using namespace zb::gui;
using namespace zb::gui::testing;

namespace {

constexpr TimeNs kMs = kNsPerMs;
constexpr TimeNs kComm = 2 * kMs;

// Two ranks, one stage each, two microbatches, causal with a 2 ms hop: rank 0 idles from 20 to
// 46 ms waiting for rank 1's B of microbatch 0, rank 1 idles before its first F.
Timeline TwoRankTimeline() {
  Timeline timeline;
  timeline.ops = {
      TimedOp(0, 0, OpKind::kF, 0, 0, 10 * kMs),
      TimedOp(0, 0, OpKind::kF, 1, 10 * kMs, 20 * kMs),
      TimedOp(0, 0, OpKind::kB, 0, 46 * kMs, 58 * kMs),
      TimedOp(0, 0, OpKind::kW, 0, 58 * kMs, 66 * kMs),
      TimedOp(0, 0, OpKind::kB, 1, 66 * kMs, 78 * kMs),
      TimedOp(0, 0, OpKind::kW, 1, 78 * kMs, 86 * kMs),
      TimedOp(1, 1, OpKind::kF, 0, 12 * kMs, 22 * kMs),
      TimedOp(1, 1, OpKind::kF, 1, 22 * kMs, 32 * kMs),
      TimedOp(1, 1, OpKind::kB, 0, 32 * kMs, 44 * kMs),
      TimedOp(1, 1, OpKind::kW, 0, 44 * kMs, 52 * kMs),
      TimedOp(1, 1, OpKind::kB, 1, 52 * kMs, 64 * kMs),
      TimedOp(1, 1, OpKind::kW, 1, 64 * kMs, 72 * kMs),
  };
  for (const TimelineOp& op : timeline.ops) {
    const double delta = op.kind == OpKind::kF ? 10 : (op.kind == OpKind::kB ? -6 : -4);
    timeline.memory.push_back({op.rank, op.end, delta});
  }
  return timeline;
}

// Index of the op of `lane` that starts at `start`.
size_t OpStartingAt(const TimelineIndex& index, int lane, TimeNs start) {
  const TimelineLane& l = index.lane(lane);
  for (size_t i = 0; i < l.size(); ++i) {
    if (l.start[i] == start) return i;
  }
  qFatal("no op at %lld", static_cast<long long>(start));
  return 0;
}

QPoint CentreOf(const TimelineView& view, int lane, TimeNs start, TimeNs end) {
  const double x = (view.xForTime(start) + view.xForTime(end)) / 2;
  return QPoint(static_cast<int>(x), view.laneRect(lane).center().y());
}

}  // namespace

class TimelineViewTest : public QObject {
  Q_OBJECT

 private slots:
  // Fonts (docs/zbview.md §4): without fonts the ruler, labels and legend are blank. The
  // other checks sample block and bubble pixels only, so they still run.
  void fontDatabaseHasFamilies() {
    QVERIFY2(FontsAvailable(), "QFontDatabase::families() is empty: no text will render");
  }

  void init() {
    index_ = MakeIndex(TwoRankTimeline(), kComm);
    view_ = std::make_unique<TimelineView>();
    view_->resize(1000, 300);
    view_->setTimeline(index_);
    view_->setTitle(QStringLiteral("two ranks"));
    lane0_ = index_->RankLane(0);
    lane1_ = index_->RankLane(1);
  }
  void cleanup() { view_.reset(); }

  void setTimelineShowsEverything() {
    const TimeRange visible = view_->viewState()->visibleRange();
    QVERIFY(visible.t0 <= 0);
    QVERIFY(visible.t1 >= 86 * kMs);
    QCOMPARE(visible, view_->viewState()->traceRange());
    QVERIFY(view_->laneAt(view_->laneRect(lane0_).center().y()) == lane0_);
    QCOMPARE(view_->laneAt(5), -1);  // the ruler
    QVERIFY(view_->laneLabelWidth() >= 90);
  }

  void tooltipOfHoveredBlock() {
    const QPoint centre = CentreOf(*view_, lane0_, 10 * kMs, 20 * kMs);
    QCOMPARE(view_->tooltipText(centre),
             QStringLiteral(
                 "F stage 0 mb 1  rank 0\nstart 10.000 ms  end 20.000 ms  duration 10.000 ms"));
    // Rank 0's B of microbatch 0 started when rank 1's B ended plus the hop: it says so.
    const QString waited = view_->tooltipText(CentreOf(*view_, lane0_, 46 * kMs, 58 * kMs));
    QVERIFY2(waited.startsWith(QStringLiteral("B stage 0 mb 0  rank 0\nstart 46.000 ms  end "
                                              "58.000 ms  duration 12.000 ms")),
             qPrintable(waited));
    QVERIFY2(waited.contains(QStringLiteral("waited for B stage 1 mb 0 (rank 1)")),
             qPrintable(waited));
    // In a bubble: how long, and before what.
    const QString bubble = view_->tooltipText(CentreOf(*view_, lane0_, 20 * kMs, 46 * kMs));
    QVERIFY2(bubble.startsWith(QStringLiteral("idle 26.000 ms before B stage 0 mb 0")),
             qPrintable(bubble));
    // Nothing: before rank 1's first op, in the ruler, over the labels.
    QCOMPARE(view_->tooltipText(CentreOf(*view_, lane1_, 0, 10 * kMs)), QString());
    QCOMPARE(view_->tooltipText(QPoint(500, 5)), QString());
    QCOMPARE(view_->tooltipText(QPoint(5, view_->laneRect(lane0_).center().y())), QString());
  }

  // A measured op's tooltip: range name, iteration, start/end/duration, busy time with its share
  // of the span, kernel count.
  void tooltipOfMeasuredOp() {
    Timeline timeline;
    timeline.kind = TimelineKind::kMeasured;
    timeline.names = {"fwd_stage_0"};
    for (int iteration = 0; iteration < 2; ++iteration) {
      TimelineOp f =
          TimedOp(0, 0, OpKind::kF, 0, iteration * 100 * kMs, iteration * 100 * kMs + 97 * kMs);
      f.busy = 12'900'000;
      f.kernels = 41;
      f.name = 0;
      f.iteration = iteration;
      timeline.ops.push_back(f);
    }
    const auto index = MakeIndex(timeline);
    TimelineView view;
    view.resize(900, 200);
    view.setTimeline(index);
    const QString text = view.tooltipText(CentreOf(view, index->RankLane(0), 100 * kMs, 197 * kMs));
    QCOMPARE(text, QStringLiteral("F stage 0 mb 0  rank 0  iteration 1\nrange fwd_stage_0\n"
                                  "start 100.000 ms  end 197.000 ms  duration 97.000 ms\n"
                                  "busy 12.900 ms (13.3% of its span)  41 kernels"));
    QCOMPARE(OpDetailsText(*index, index->RankLane(0), 1, 0), text);
  }

  // A click selects the op under the cursor (outlined in the selection colour, opSelected); a
  // click on a bubble clears; a drag pans without selecting.
  void clickSelectsAnOp() {
    QSignalSpy spy(view_.get(), &TimelineView::opSelected);
    const QPoint centre = CentreOf(*view_, lane1_, 32 * kMs, 44 * kMs);
    QTest::mouseClick(view_.get(), Qt::LeftButton, Qt::NoModifier, centre);
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.at(0).at(0).toInt(), lane1_);
    const size_t b = OpStartingAt(*index_, lane1_, 32 * kMs);
    QCOMPARE(view_->selectedOp(), std::make_optional(std::make_pair(lane1_, b)));
    const QImage image = view_->grab().toImage();
    const QRect row = view_->laneRect(lane1_);
    const int left = static_cast<int>(std::lround(view_->xForTime(32 * kMs)));
    bool outlined = false;
    for (int x = left - 1; x <= left + 2; ++x) {
      const QColor got = image.pixelColor(x, row.center().y());
      outlined = outlined || (got.blue() > 150 && got.red() < 120 && got != ColorOf(OpKind::kB));
    }
    QVERIFY2(outlined, "no selection outline at the op's left edge");
    QTest::mouseClick(view_.get(), Qt::LeftButton, Qt::NoModifier,
                      CentreOf(*view_, lane0_, 20 * kMs, 46 * kMs));
    QCOMPARE(spy.count(), 2);
    QCOMPARE(spy.at(1).at(0).toInt(), -1);
    QVERIFY(!view_->selectedOp().has_value());
  }

  void hoverEmitsOpHoveredAndSetsHoverTime() {
    QSignalSpy spy(view_.get(), &TimelineView::opHovered);
    const QPoint centre = CentreOf(*view_, lane1_, 32 * kMs, 44 * kMs);
    SendHover(view_.get(), centre);
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.at(0).at(0).toInt(), lane1_);
    QCOMPARE(spy.at(0).at(1).toLongLong(),
             static_cast<qint64>(OpStartingAt(*index_, lane1_, 32 * kMs)));
    QVERIFY(view_->viewState()->hoverTime().has_value());
    QVERIFY(std::abs(*view_->viewState()->hoverTime() - view_->timeAtX(centre.x())) <= 1);
    SendHover(view_.get(), CentreOf(*view_, lane0_, 20 * kMs, 46 * kMs));  // a bubble
    QCOMPARE(spy.count(), 2);
    QCOMPARE(spy.at(1).at(0).toInt(), -1);
  }

  void wheelZoomsAtTheCursor() {
    ViewState* state = view_->viewState();
    const TimeRange before = state->visibleRange();
    const int x = view_->laneLabelWidth() + 300;
    const TimeNs anchor = view_->timeAtX(x);
    SendWheel(view_.get(), QPoint(x, 100), 120);
    const TimeRange zoomed = state->visibleRange();
    QVERIFY(zoomed.length() < before.length());
    QVERIFY(std::abs(zoomed.length() - static_cast<TimeNs>(before.length() * 0.8)) <= 2);
    const double ns_per_px =
        static_cast<double>(zoomed.length()) / (view_->width() - view_->laneLabelWidth());
    QVERIFY2(std::abs(view_->timeAtX(x) - anchor) <= ns_per_px,
             qPrintable(QStringLiteral("anchor moved by %1 ns").arg(view_->timeAtX(x) - anchor)));
    SendWheel(view_.get(), QPoint(x, 100), 120);
    QVERIFY(state->visibleRange().length() < zoomed.length());
    QVERIFY(std::abs(view_->timeAtX(x) - anchor) <= ns_per_px);
    // Zooming out stops at the whole trace.
    for (int i = 0; i < 20; ++i)
      SendWheel(view_.get(), QPoint(x, 100), -120);
    QCOMPARE(state->visibleRange(), state->traceRange());
    // A burst of wheel steps is one history step.
    QVERIFY(state->canZoomBack());
    state->zoomBack();
    QCOMPARE(state->visibleRange(), before);
  }

  void dragPans() {
    ViewState* state = view_->viewState();
    state->setVisibleRange({20 * kMs, 40 * kMs});
    const TimeRange before = state->visibleRange();
    const int y = view_->laneRect(lane0_).center().y();
    QTest::mousePress(view_.get(), Qt::LeftButton, Qt::NoModifier, QPoint(600, y));
    QTest::mouseMove(view_.get(), QPoint(550, y));
    QTest::mouseMove(view_.get(), QPoint(500, y));
    QTest::mouseRelease(view_.get(), Qt::LeftButton, Qt::NoModifier, QPoint(500, y));
    const TimeRange after = state->visibleRange();
    const double ns_per_px =
        static_cast<double>(before.length()) / (view_->width() - view_->laneLabelWidth());
    QCOMPARE(after.length(), before.length());
    QVERIFY2(std::abs(after.t0 - before.t0 - 100 * ns_per_px) <= 1,
             qPrintable(QStringLiteral("moved %1 ns").arg(after.t0 - before.t0)));
    // The whole drag is one history step.
    state->zoomBack();
    QCOMPARE(state->visibleRange(), before);
    QVERIFY(state->canZoomForward());
    state->zoomForward();
    QCOMPARE(state->visibleRange(), after);
  }

  void keysNavigate() {
    ViewState* state = view_->viewState();
    const TimeRange all = state->visibleRange();
    QTest::keyClick(view_.get(), Qt::Key_W);
    const TimeRange in = state->visibleRange();
    QVERIFY(in.length() < all.length());
    QTest::keyClick(view_.get(), Qt::Key_D);
    QVERIFY(state->visibleRange().t0 > in.t0);
    QCOMPARE(state->visibleRange().length(), in.length());
    QTest::keyClick(view_.get(), Qt::Key_A);
    QCOMPARE(state->visibleRange(), in);
    QTest::keyClick(view_.get(), Qt::Key_Right);
    QTest::keyClick(view_.get(), Qt::Key_Left);
    QCOMPARE(state->visibleRange(), in);
    QTest::keyClick(view_.get(), Qt::Key_W);
    const TimeRange deeper = state->visibleRange();
    QVERIFY(deeper.length() < in.length());
    QTest::keyClick(view_.get(), Qt::Key_S);
    QVERIFY(state->visibleRange().length() > deeper.length());
    QTest::keyClick(view_.get(), Qt::Key_Home);
    QCOMPARE(state->visibleRange(), all);
    QTest::keyClick(view_.get(), Qt::Key_Backspace);  // back to before Home
    QVERIFY(state->visibleRange().length() < all.length());
    QTest::keyClick(view_.get(), Qt::Key_Backspace, Qt::ShiftModifier);  // forward again
    QCOMPARE(state->visibleRange(), all);
    QTest::keyClick(view_.get(), Qt::Key_W);
    QTest::keyClick(view_.get(), Qt::Key_F);  // F fits all too
    QCOMPARE(state->visibleRange(), all);
  }

  void zoomHistoryFitAllAndFloor() {
    ViewState state;
    QSignalSpy history(&state, &ViewState::historyChanged);
    state.setTraceRange({0, 100 * kMs});
    QVERIFY(!state.canZoomBack());
    const TimeRange a{10 * kMs, 50 * kMs};
    const TimeRange b{20 * kMs, 30 * kMs};
    state.setVisibleRange(a);
    state.setVisibleRange(b);
    QCOMPARE(state.visibleRange(), b);
    state.zoomBack();
    QCOMPARE(state.visibleRange(), a);
    state.zoomBack();
    QCOMPARE(state.visibleRange(), (TimeRange{0, 100 * kMs}));
    QVERIFY(!state.canZoomBack());
    state.zoomForward();
    state.zoomForward();
    QCOMPARE(state.visibleRange(), b);
    QVERIFY(!state.canZoomForward());
    // A new zoom after going back drops the forward history.
    state.zoomBack();
    state.zoomAt(25 * kMs, 0.5);
    QVERIFY(!state.canZoomForward());
    state.fitAll();
    QCOMPARE(state.visibleRange(), state.traceRange());
    QVERIFY(history.count() > 0);
    // Unrecorded changes (panning) leave the history alone.
    const bool could_go_back = state.canZoomBack();
    state.setVisibleRange({0, 10 * kMs}, false);
    state.pan(kMs);
    QCOMPARE(state.visibleRange(), (TimeRange{kMs, 11 * kMs}));
    QCOMPARE(state.canZoomBack(), could_go_back);
    // The span never goes below the floor, and zooming at the floor is harmless (Tracy #1281).
    for (int i = 0; i < 100; ++i)
      state.zoomAt(5 * kMs, 0.1);
    QCOMPARE(state.visibleRange().length(), ViewState::kMinimumSpan);
    state.zoomAt(5 * kMs, 0.0);  // ignored
    QCOMPARE(state.visibleRange().length(), ViewState::kMinimumSpan);
    // Clamping: never past the trace, never wider than it.
    state.setVisibleRange({-50 * kMs, -40 * kMs});
    QCOMPARE(state.visibleRange(), (TimeRange{0, 10 * kMs}));
    state.setVisibleRange({95 * kMs, 130 * kMs});
    QCOMPARE(state.visibleRange(), (TimeRange{65 * kMs, 100 * kMs}));
    state.setVisibleRange({-1000 * kMs, 1000 * kMs});
    QCOMPARE(state.visibleRange(), state.traceRange());
    // A zero-length trace still has a drawable window.
    state.setTraceRange({5, 5});
    QCOMPARE(state.visibleRange().length(), ViewState::kMinimumSpan);
  }

  void dragSelectsAndSummarises() {
    ViewState* state = view_->viewState();
    QSignalSpy selected(view_.get(), &TimelineView::rangeSelected);
    const int y = view_->laneRect(lane1_).center().y();
    const QPoint p1(static_cast<int>(view_->xForTime(15 * kMs)), y);
    const QPoint p2(static_cast<int>(view_->xForTime(50 * kMs)), y);
    QTest::mousePress(view_.get(), Qt::LeftButton, Qt::ShiftModifier, p1);
    QTest::mouseMove(view_.get(), p2);
    QTest::mouseRelease(view_.get(), Qt::LeftButton, Qt::ShiftModifier, p2);
    QCOMPARE(selected.count(), 1);
    const auto range = selected.at(0).at(0).value<TimeRange>();
    QCOMPARE(range.t0, view_->timeAtX(p1.x()));
    QCOMPARE(range.t1, view_->timeAtX(p2.x()));
    QVERIFY(state->selection().has_value());
    QCOMPARE(*state->selection(), range);
    const QString text = view_->selectionSummaryText();
    QCOMPARE(text, FormatRangeSummary(index_->Summarize(range.t0, range.t1), 2));
    QVERIFY2(text.contains(QStringLiteral("busy ")) && text.contains(QStringLiteral("F ")) &&
                 text.contains(QStringLiteral("B ")),
             qPrintable(text));
    // The selection is drawn: the summary box in the ruler has the selection colour.
    const QImage image = view_->grab().toImage();
    SaveArtifact(image, QStringLiteral("timeline_selection.png"));
    QCOMPARE(view_->lastRenderStats().ops_in_view, 12);
    // Right drag selects as well; Esc clears.
    QTest::mousePress(view_.get(), Qt::RightButton, Qt::NoModifier, p2);
    QTest::mouseMove(view_.get(), p1 + QPoint(40, 0));
    QTest::mouseRelease(view_.get(), Qt::RightButton, Qt::NoModifier, p1 + QPoint(40, 0));
    QCOMPARE(selected.count(), 2);
    QTest::keyClick(view_.get(), Qt::Key_Escape);
    QVERIFY(!state->selection().has_value());
    QCOMPARE(view_->selectionSummaryText(), QString());
  }

  void doubleClickZoomsToBlock() {
    const QPoint centre = CentreOf(*view_, lane0_, 58 * kMs, 66 * kMs);
    QTest::mouseDClick(view_.get(), Qt::LeftButton, Qt::NoModifier, centre);
    const TimeRange visible = view_->viewState()->visibleRange();
    QVERIFY(visible.t0 <= 58 * kMs && visible.t1 >= 66 * kMs);
    QVERIFY(visible.length() <= 3 * 8 * kMs);
  }

  void screenshotColours() {
    view_->setShowLabels(false);
    view_->setShowWaitLinks(false);
    const QImage image = view_->grab().toImage();
    SaveArtifact(image, QStringLiteral("timeline_colours.png"));
    QCOMPARE(image.size(), view_->size());
    struct Expect {
      int lane;
      TimeNs t0, t1;
      QColor color;
      const char* what;
    };
    const Expect expects[] = {
        {lane0_, 0, 10 * kMs, ColorOf(OpKind::kF), "F r0 mb0"},
        {lane0_, 10 * kMs, 20 * kMs, ColorOf(OpKind::kF), "F r0 mb1"},
        {lane0_, 46 * kMs, 58 * kMs, ColorOf(OpKind::kB), "B r0 mb0"},
        {lane0_, 58 * kMs, 66 * kMs, ColorOf(OpKind::kW), "W r0 mb0"},
        {lane1_, 12 * kMs, 22 * kMs, ColorOf(OpKind::kF), "F r1 mb0"},
        {lane1_, 32 * kMs, 44 * kMs, ColorOf(OpKind::kB), "B r1 mb0"},
        {lane1_, 64 * kMs, 72 * kMs, ColorOf(OpKind::kW), "W r1 mb1"},
        {lane0_, 20 * kMs, 46 * kMs, BubbleColor(), "bubble r0"},
        {lane1_, 0, 12 * kMs, BackgroundColor(), "before r1's first op"},
        {lane1_, 72 * kMs, 86 * kMs, BackgroundColor(), "after r1's last op"},
    };
    for (const Expect& e : expects) {
      const QPoint p = CentreOf(*view_, e.lane, e.t0, e.t1);
      const QRgb got = image.pixel(p);
      QVERIFY2(got == e.color.rgb(), qPrintable(QStringLiteral("%1 at (%2,%3): %4, want %5")
                                                    .arg(QLatin1String(e.what))
                                                    .arg(p.x())
                                                    .arg(p.y())
                                                    .arg(Describe(got), Describe(e.color.rgb()))));
    }
    // Abutting blocks of one kind stay apart: a darker separator column where F1 starts.
    const int x = static_cast<int>(std::floor(view_->xForTime(10 * kMs)));
    const int y = view_->laneRect(lane0_).center().y();
    QVERIFY(image.pixel(x, y) != ColorOf(OpKind::kF).rgb());
    QVERIFY(image.pixel(x + 3, y) == ColorOf(OpKind::kF).rgb());
    const RenderStats& stats = view_->lastRenderStats();
    QCOMPARE(stats.ops_in_view, 12);
    QCOMPARE(stats.exact_blocks, 12);
    QCOMPARE(stats.labels, 0);
  }

  // docs/zbview.md §6: a measured F busy for 12.9 ms of its 97 ms span is a pale F block filled
  // to about 13 % from the bottom, drawn exactly when it is wide and in binned columns when a
  // thousand of them share the view; a fully busy B beside it is solid.
  void measuredOpIsShadedAsAFillLevel_data() {
    QTest::addColumn<int>("repeats");
    QTest::newRow("exact block") << 1;
    QTest::newRow("binned, 1000 steps") << 1000;
  }
  void measuredOpIsShadedAsAFillLevel() {
    QFETCH(int, repeats);
    Timeline timeline;
    timeline.kind = TimelineKind::kMeasured;
    for (int i = 0; i < repeats; ++i) {
      const TimeNs t = i * 130 * kMs;
      TimelineOp f = TimedOp(0, 0, OpKind::kF, 0, t, t + 97 * kMs);
      f.busy = 12'900'000;
      f.kernels = 41;
      TimelineOp b = TimedOp(0, 0, OpKind::kB, 0, t + 97 * kMs, t + 130 * kMs);
      b.busy = 33 * kMs;
      b.kernels = 3;
      timeline.ops.push_back(f);
      timeline.ops.push_back(b);
    }
    const auto index = MakeIndex(timeline);
    TimelineView view;
    view.resize(900, 200);
    view.setShowLabels(false);
    view.setTimeline(index);
    const int lane = index->RankLane(0);
    const QImage image = view.grab().toImage();
    SaveArtifact(image, QStringLiteral("timeline_measured_busy_%1.png").arg(repeats));
    const QRect row = view.laneRect(lane);
    // A column inside the first F (one op) or anywhere (binned: every column holds F and B).
    const int x = static_cast<int>(view.xForTime(repeats == 1 ? 40 * kMs : 60'000 * kMs));
    int pale = 0, solid = 0;
    for (int y = row.top(); y <= row.bottom(); ++y) {
      const QRgb got = image.pixel(x, y);
      if (got == WaitingColor(OpKind::kF).rgb()) ++pale;
      if (got == ColorOf(OpKind::kF).rgb()) ++solid;
    }
    QVERIFY2(pale > 0 && solid > 0,
             qPrintable(QStringLiteral("%1 pale, %2 solid rows").arg(pale).arg(solid)));
    const double filled = static_cast<double>(solid) / (pale + solid);
    QVERIFY2(std::abs(filled - 12.9 / 97) < 0.08,
             qPrintable(QStringLiteral("F filled to %1").arg(filled)));
    // The solid part is at the bottom of the column.
    QCOMPARE(image.pixel(x, row.bottom()), ColorOf(OpKind::kF).rgb());
    if (repeats == 1) {
      QVERIFY(pale + solid >= row.height() - 1);  // the whole block is F, pale or solid
      QCOMPARE(image.pixel(x, row.top()), WaitingColor(OpKind::kF).rgb());
      const QPoint b_centre = CentreOf(view, lane, 97 * kMs, 130 * kMs);
      QCOMPARE(image.pixel(b_centre.x(), row.top()), ColorOf(OpKind::kB).rgb());
    } else {
      QVERIFY(view.lastRenderStats().binned_columns > 0);
    }
  }

  void labelsAndWaitLinksAreDrawn() {
    const QImage image = view_->grab().toImage();
    SaveArtifact(image, QStringLiteral("timeline_two_ranks.png"));
    const RenderStats& stats = view_->lastRenderStats();
    QCOMPARE(stats.labels, 12);
    // Rank 1's first F waited for rank 0's; rank 0's first B for rank 1's.
    QVERIFY2(stats.wait_links >= 2, qPrintable(QString::number(stats.wait_links)));
    view_->setShowWaitLinks(false);
    view_->grab();
    QCOMPARE(view_->lastRenderStats().wait_links, 0);
  }

  void realScheduleScreenshots_data() {
    QTest::addColumn<QString>("family");
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("microbatches");
    QTest::newRow("1f1b") << QStringLiteral("1f1b") << 4 << 8;
    QTest::newRow("zb-h1") << QStringLiteral("zb-h1") << 4 << 8;
    QTest::newRow("zb-v") << QStringLiteral("zb-v") << 4 << 8;
  }
  void realScheduleScreenshots() {
    QFETCH(QString, family);
    QFETCH(int, ranks);
    QFETCH(int, microbatches);
    const CostProfile costs = UniformCosts(ranks);
    auto index = MakeIndex(ScheduleTimeline(family.toStdString(), microbatches, costs), costs.comm);
    TimelineView view;
    view.resize(1600, family == QStringLiteral("zb-v") ? 520 : 360);
    view.setTimeline(index);
    view.setTitle(family);
    const QImage image = view.grab().toImage();
    SaveArtifact(image, QStringLiteral("timeline_%1.png").arg(family));
    const RenderStats& stats = view.lastRenderStats();
    QVERIFY(stats.labels > 0);
    QVERIFY(stats.wait_links > 0);
    // Every op shows its colour somewhere in its block (labels and links drawn on top).
    for (int rank = 0; rank < index->num_ranks(); ++rank) {
      const int lane = index->RankLane(rank);
      const QRect row = view.laneRect(lane);
      const TimelineLane& l = index->lane(lane);
      for (size_t i = 0; i < l.size(); ++i) {
        const QRgb want = ColorOf(l.kind_of[i]).rgb();
        bool found = false;
        const int x0 = static_cast<int>(std::ceil(view.xForTime(l.start[i])));
        const int x1 = static_cast<int>(std::floor(view.xForTime(l.end[i])));
        for (int x = x0 + 1; x < x1 && !found; ++x) {
          for (int y = row.top(); y <= row.bottom() && !found; ++y)
            found = image.pixel(x, y) == want;
        }
        QVERIFY2(found, qPrintable(QStringLiteral("rank %1 op %2 not drawn").arg(rank).arg(i)));
      }
    }
    if (family == QStringLiteral("zb-v")) {
      // Two stages per rank: extra lanes, which can be hidden.
      QVERIFY(index->lanes().size() > static_cast<size_t>(index->num_ranks()));
      int stage_lane = -1;
      for (int i = 0; i < static_cast<int>(index->lanes().size()); ++i) {
        if (index->lane(i).kind == LaneKind::kStage) stage_lane = i;
      }
      QVERIFY(stage_lane >= 0);
      QVERIFY(!view.laneRect(stage_lane).isEmpty());
      view.setShowStageLanes(false);
      QVERIFY(view.laneRect(stage_lane).isEmpty());
      QVERIFY(!view.laneRect(index->RankLane(0)).isEmpty());
    }
  }

  void binnedTooltipWhenZoomedOut() {
    auto index = MakeIndex(SyntheticTimeline(2, 20000, 0.2));
    TimelineView view;
    view.resize(800, 200);
    view.setTimeline(index);
    const QPoint p(view.laneLabelWidth() + 400, view.laneRect(index->RankLane(0)).center().y());
    const QString text = view.tooltipText(p);
    QVERIFY2(text.contains(QStringLiteral("ops in this column")) &&
                 text.contains(QStringLiteral("busy ")),
             qPrintable(text));
    // Zoomed in, the same point names one op.
    view.viewState()->zoomAt(view.timeAtX(p.x()), 1e-4);
    const QString one = view.tooltipText(p);
    QVERIFY2(one.contains(QStringLiteral("stage 0")) && one.contains(QStringLiteral("duration")),
             qPrintable(one));
  }

  void emptyView() {
    TimelineView view;
    view.resize(400, 200);
    const QImage image = view.grab().toImage();
    QCOMPARE(image.size(), QSize(400, 200));
    QCOMPARE(view.tooltipText(QPoint(200, 100)), QString());
    QCOMPARE(view.laneAt(100), -1);
    SendWheel(&view, QPoint(200, 100), 120);  // no crash without a timeline
    QTest::keyClick(&view, Qt::Key_W);
  }

  void formatTime() {
    QCOMPARE(FormatTime(12'345'678), QStringLiteral("12.346 ms"));
    QCOMPARE(FormatTime(3'250), QStringLiteral("3.250 us"));
    QCOMPARE(FormatTime(850), QStringLiteral("850 ns"));
  }

 private:
  std::shared_ptr<const TimelineIndex> index_;
  std::unique_ptr<TimelineView> view_;
  int lane0_ = 0;
  int lane1_ = 0;
};

QTEST_MAIN(TimelineViewTest)
#include "tst_timeline_view.moc"
