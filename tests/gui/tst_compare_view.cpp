// SPDX-License-Identifier: Apache-2.0
// CompareView, headless: the two panes share zoom, scroll, hover and selection; ops matched by
// (stage, kind, microbatch) that differ are highlighted in both panes and counted in the summary
// and the per-rank table.
#include <QSignalSpy>
#include <QTableWidget>
#include <QtTest>

#include "gui_test_support.h"
#include "zbkit/gui/compare_view.h"
#include "zbkit/gui/palette.h"

using namespace zb;
using namespace zb::gui;
using namespace zb::gui::testing;

namespace {

// "Measured": rank 2 runs 10 % slower from its first op on (start and end times scaled).
Timeline Slower(const Timeline& predicted) {
  Timeline measured = predicted;
  measured.kind = TimelineKind::kMeasured;
  for (TimelineOp& op : measured.ops) {
    if (op.rank != 2) continue;
    op.start = op.start * 11 / 10;
    op.end = op.end * 11 / 10;
  }
  return measured;
}

int CountPixels(const QImage& image, QRgb rgb) {
  int count = 0;
  for (int y = 0; y < image.height(); ++y) {
    const auto* line = reinterpret_cast<const QRgb*>(image.constScanLine(y));
    for (int x = 0; x < image.width(); ++x)
      count += line[x] == rgb ? 1 : 0;
  }
  return count;
}

}  // namespace

class CompareViewTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    FontsAvailable();  // warns when text cannot render; the pixels checked are never text
    costs_ = UniformCosts(4);
    predicted_ = ScheduleTimeline("zb-h1", 8, costs_);
  }

  void init() {
    view_ = std::make_unique<CompareView>();
    view_->resize(1400, 900);
    view_->setTimelines(MakeIndex(predicted_, costs_.comm), QStringLiteral("predicted"),
                        MakeIndex(Slower(predicted_), costs_.comm), QStringLiteral("measured"));
    view_->show();
    QVERIFY(QTest::qWaitForWindowExposed(view_.get()));
  }
  void cleanup() { view_.reset(); }

  void panesShareOneWindow() {
    TimelineView* top = view_->top();
    TimelineView* bottom = view_->bottom();
    QCOMPARE(top->viewState(), view_->viewState());
    QCOMPARE(bottom->viewState(), view_->viewState());
    QCOMPARE(top->laneLabelWidth(), bottom->laneLabelWidth());
    QCOMPARE(top->width(), bottom->width());
    // The trace is the union of both (the measured one ends later).
    const TimeRange trace = view_->viewState()->traceRange();
    QVERIFY(trace.t1 >= bottom->timeline()->end());
    QVERIFY(trace.t1 >= top->timeline()->end());
  }

  void zoomAndScrollStayInSync() {
    TimelineView* top = view_->top();
    TimelineView* bottom = view_->bottom();
    const int x = top->laneLabelWidth() + 500;
    const TimeRange before = top->viewState()->visibleRange();
    SendWheel(top, QPoint(x, top->laneRect(0).center().y()), 240);
    const TimeRange zoomed = top->viewState()->visibleRange();
    QVERIFY(zoomed.length() < before.length());
    QCOMPARE(bottom->viewState()->visibleRange(), zoomed);
    // Same time at the same x in both panes.
    for (int px : {x, x - 300, x + 400})
      QCOMPARE(bottom->timeAtX(px), top->timeAtX(px));
    // Drag the bottom pane: the top follows.
    const int y = bottom->laneRect(bottom->timeline()->RankLane(1)).center().y();
    QTest::mousePress(bottom, Qt::LeftButton, Qt::NoModifier, QPoint(700, y));
    QTest::mouseMove(bottom, QPoint(600, y));
    QTest::mouseRelease(bottom, Qt::LeftButton, Qt::NoModifier, QPoint(600, y));
    QVERIFY(top->viewState()->visibleRange().t0 > zoomed.t0);
    QCOMPARE(top->xForTime(zoomed.t0 + zoomed.length() / 2),
             bottom->xForTime(zoomed.t0 + zoomed.length() / 2));
    // Keys on one pane move both.
    QTest::keyClick(top, Qt::Key_Home);
    QCOMPARE(bottom->viewState()->visibleRange(), view_->viewState()->traceRange());
  }

  void hoverAndSelectionStayInSync() {
    TimelineView* top = view_->top();
    TimelineView* bottom = view_->bottom();
    const QPoint p(top->laneLabelWidth() + 321, top->laneRect(0).center().y());
    SendHover(top, p);
    QVERIFY(view_->viewState()->hoverTime().has_value());
    QCOMPARE(*view_->viewState()->hoverTime(), bottom->timeAtX(p.x()));
    QSignalSpy selected(bottom, &TimelineView::rangeSelected);
    const int y = bottom->laneRect(0).center().y();
    QTest::mousePress(bottom, Qt::LeftButton, Qt::ShiftModifier, QPoint(400, y));
    QTest::mouseMove(bottom, QPoint(900, y));
    QTest::mouseRelease(bottom, Qt::LeftButton, Qt::ShiftModifier, QPoint(900, y));
    QCOMPARE(selected.count(), 1);
    QVERIFY(!top->selectionSummaryText().isEmpty());
    QVERIFY(!bottom->selectionSummaryText().isEmpty());
    // The same range, summarised over each pane's own timeline.
    const TimeRange range = *view_->viewState()->selection();
    QCOMPARE(top->selectionSummaryText(),
             FormatRangeSummary(top->timeline()->Summarize(range.t0, range.t1), 4));
  }

  void differencesHighlightedAndSummarised() {
    const TimelineComparison& comparison = view_->comparison();
    QVERIFY(comparison.differing > 0);
    QVERIFY(comparison.only_in_a.empty() && comparison.only_in_b.empty());
    QCOMPARE(static_cast<int64_t>(comparison.matches.size()), view_->top()->timeline()->num_ops());
    const QString summary = view_->summaryText();
    QVERIFY2(summary.startsWith(QStringLiteral("makespan ")) &&
                 summary.contains(QStringLiteral(" ops differ")) &&
                 summary.contains(QStringLiteral("%1 of %2 ops differ")
                                      .arg(comparison.differing)
                                      .arg(comparison.matches.size())),
             qPrintable(summary));
    QCOMPARE(view_->table()->rowCount(), 4);
    // Rank 2 is slower: its busy delta is positive, rank 0's is zero.
    QVERIFY(view_->table()->item(2, 3)->text().startsWith(QLatin1Char('+')));
    QCOMPARE(view_->table()->item(0, 3)->text(), QStringLiteral("0.000"));

    const QImage image = view_->grab().toImage();
    SaveArtifact(image, QStringLiteral("compare_predicted_vs_measured.png"));
    const QImage top = view_->top()->grab().toImage();
    const QImage bottom = view_->bottom()->grab().toImage();
    QVERIFY(view_->top()->lastRenderStats().highlighted > 0);
    QVERIFY(view_->bottom()->lastRenderStats().highlighted > 0);
    QVERIFY(CountPixels(top, HighlightColor().rgb()) > 0);
    QVERIFY(CountPixels(bottom, HighlightColor().rgb()) > 0);
    // Only rank 2's ops (and those they delay) differ: rank 0's first F is not outlined.
    const TimelineIndex& a = *view_->top()->timeline();
    const int lane0 = a.RankLane(0);
    const double x0 = view_->top()->xForTime(a.lane(lane0).start[0]);
    const double x1 = view_->top()->xForTime(a.lane(lane0).end[0]);
    const QRect row = view_->top()->laneRect(lane0);
    int outline = 0;
    for (int x = static_cast<int>(x0); x <= static_cast<int>(x1); ++x) {
      for (int y = row.top(); y <= row.bottom(); ++y) {
        outline += top.pixel(x, y) == HighlightColor().rgb() ? 1 : 0;
      }
    }
    QCOMPARE(outline, 0);
  }

  void identicalTimelinesDoNotDiffer() {
    view_->setTimelines(MakeIndex(predicted_, costs_.comm), QStringLiteral("a"),
                        MakeIndex(predicted_, costs_.comm), QStringLiteral("b"));
    QCOMPARE(view_->comparison().differing, int64_t{0});
    QVERIFY2(view_->summaryText().contains(QStringLiteral(" (0.0%), 0 of ")),
             qPrintable(view_->summaryText()));
    const QImage top = view_->top()->grab().toImage();
    QCOMPARE(view_->top()->lastRenderStats().highlighted, int64_t{0});
    QCOMPARE(CountPixels(top, HighlightColor().rgb()), 0);
  }

  void differentSchedules() {
    // 1F1B (fused BW) against ZB-H1 (B and W): ops only on one side are highlighted too.
    const Timeline one_f_one_b = ScheduleTimeline("1f1b", 8, costs_);
    view_->setTimelines(MakeIndex(one_f_one_b, costs_.comm), QStringLiteral("1F1B"),
                        MakeIndex(predicted_, costs_.comm), QStringLiteral("ZB-H1"));
    const TimelineComparison& comparison = view_->comparison();
    QVERIFY(!comparison.only_in_a.empty());
    QVERIFY(!comparison.only_in_b.empty());
    QVERIFY(view_->summaryText().contains(QStringLiteral("only in ZB-H1")));
    SaveArtifact(view_->grab().toImage(), QStringLiteral("compare_1f1b_vs_zb_h1.png"));
    QVERIFY(view_->top()->lastRenderStats().highlighted > 0);
  }

  void differentStageLayoutsOutlineOnlyMatchedDifferences() {
    // ZB-V cuts the model into 2p chunks, 1F1B into p stages: nearly nothing matches by
    // (stage, kind, microbatch), and outlining all of it would hide the real differences.
    const Timeline zb_v = ScheduleTimeline("zb-v", 8, costs_);
    const Timeline one_f_one_b = ScheduleTimeline("1f1b", 8, costs_);
    view_->setTimelines(MakeIndex(zb_v, costs_.comm), QStringLiteral("ZB-V"),
                        MakeIndex(one_f_one_b, costs_.comm), QStringLiteral("1F1B"));
    QVERIFY(!view_->comparison().only_in_a.empty());
    QVERIFY(view_->summaryText().contains(QStringLiteral("stage layouts differ")));
    view_->grab();
    int64_t matched_differing = 0;
    for (const OpMatch& match : view_->comparison().matches) {
      if (OpsDiffer(match, *view_->top()->timeline(), *view_->bottom()->timeline(), 0.01)) {
        ++matched_differing;
      }
    }
    QVERIFY(view_->top()->lastRenderStats().highlighted <= matched_differing);
    QVERIFY(view_->top()->lastRenderStats().highlighted <
            static_cast<int64_t>(view_->comparison().only_in_a.size()));
  }

 private:
  CostProfile costs_;
  Timeline predicted_;
  std::unique_ptr<CompareView> view_;
};

QTEST_MAIN(CompareViewTest)
#include "tst_compare_view.moc"
