// SPDX-License-Identifier: Apache-2.0
// Item 3 of issue 10, big pipelines: a 32-rank ZB-V timeline (32 rank lanes and 64 stage lanes)
// scrolls vertically by whole rows, keeps a chosen lane height, folds a rank's stage lanes on a
// click of its label, never overlaps lane labels, reveals an op's lane, and thins wait links by
// level of detail (docs/zbview.md §9).
#include <QSignalSpy>
#include <QTest>
#include <algorithm>

#include "gui_test_support.h"
#include "zbkit/gui/timeline_view.h"

using namespace zb;
using namespace zb::gui;
using namespace zb::gui::testing;

class BigPipelineTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    index_ = MakeIndex(ScheduleTimeline("zb-v", 32, 64), UniformCosts(32).comm);
  }

  void init() {
    view_ = std::make_unique<TimelineView>();
    view_->resize(1000, 600);
    view_->setShowLabels(false);
    view_->setTimeline(index_);
  }
  void cleanup() { view_.reset(); }

  void lanesScrollWhenTheyDoNotFit() {
    QCOMPARE(static_cast<int>(index_->lanes().size()), 96);
    // Fit: 96 lanes at the 8 px floor do not fit in 560 px.
    QVERIFY(view_->maxFirstShownRow() > 0);
    QCOMPARE(view_->firstShownRow(), 0);
    QVERIFY(view_->lanesRight() < view_->width());  // the scroll bar takes the right edge
    QVERIFY(!view_->laneRect(index_->RankLane(0)).isEmpty());
    QVERIFY(view_->laneRect(index_->RankLane(31)).isEmpty());

    view_->setLaneHeight(24);
    const int last = view_->maxFirstShownRow();
    QVERIFY(last > 60);
    QCOMPARE(view_->laneRect(index_->RankLane(0)).height(), 24);
    view_->scrollToRow(last);
    QVERIFY(view_->laneRect(index_->RankLane(0)).isEmpty());
    const QRect bottom = view_->laneRect(index_->RankLane(31));
    QVERIFY(!bottom.isEmpty());
    QVERIFY(bottom.bottom() < view_->height());
    // The wheel over the lane labels scrolls 3 rows a notch, up; over the lanes it zooms.
    SendWheel(view_.get(), QPoint(10, 300), 120);
    QCOMPARE(view_->firstShownRow(), last - 3);
    const TimeRange before = view_->viewState()->visibleRange();
    SendWheel(view_.get(), QPoint(500, 300), 120);
    QCOMPARE(view_->firstShownRow(), last - 3);
    QVERIFY(view_->viewState()->visibleRange().length() < before.length());
    QTest::keyClick(view_.get(), Qt::Key_PageUp);
    QVERIFY(view_->firstShownRow() < last - 3);
    // A picture of the scrolled view: rank lanes keep their colours after scrolling.
    const QImage image = view_->grab().toImage();
    SaveArtifact(image, QStringLiteral("big_pipeline_scrolled.png"));
  }

  void labelsNeverOverlap() {
    for (int height : {0, 6, 10, 24}) {
      view_->setLaneHeight(height);
      view_->grab();
      const auto boxes = view_->laneLabelBoxes();
      QVERIFY(!boxes.empty());
      for (size_t i = 1; i < boxes.size(); ++i) {
        QVERIFY2(
            boxes[i - 1].second <= boxes[i].first,
            qPrintable(QStringLiteral("lane height %1: label %2 ends at %3, the next starts at "
                                      "%4")
                           .arg(height)
                           .arg(i - 1)
                           .arg(boxes[i - 1].second)
                           .arg(boxes[i].first)));
      }
      if (height == 6) {
        // Rows thinner than a line of text: some labels are left out rather than overlapped.
        int shown_rows = 0;
        for (int lane = 0; lane < 96; ++lane)
          shown_rows += view_->laneRect(lane).isEmpty() ? 0 : 1;
        QVERIFY(static_cast<int>(boxes.size()) < shown_rows);
      }
    }
  }

  void aClickOnARankLabelFoldsItsStageLanes() {
    const int rank_lane = index_->RankLane(0);
    int stage_lane = -1;
    for (int lane = 0; lane < 96; ++lane) {
      if (index_->lane(lane).kind == LaneKind::kStage && index_->lane(lane).rank == 0) {
        stage_lane = lane;
      }
    }
    QVERIFY(stage_lane >= 0);
    QVERIFY(!view_->laneRect(stage_lane).isEmpty());
    const QPoint label(20, view_->laneRect(rank_lane).center().y());
    QTest::mouseClick(view_.get(), Qt::LeftButton, Qt::NoModifier, label);
    QVERIFY(view_->isRankCollapsed(0));
    QVERIFY(view_->laneRect(stage_lane).isEmpty());
    QVERIFY(!view_->laneRect(rank_lane).isEmpty());
    QTest::mouseClick(view_.get(), Qt::LeftButton, Qt::NoModifier, label);
    QVERIFY(!view_->isRankCollapsed(0));
    QVERIFY(!view_->laneRect(stage_lane).isEmpty());
    // All folded: 32 rank lanes fit without scrolling.
    view_->setAllRanksCollapsed(true);
    QCOMPARE(view_->maxFirstShownRow(), 0);
    QVERIFY(!view_->laneRect(index_->RankLane(31)).isEmpty());
  }

  void revealingAnOpScrollsToItsLane() {
    view_->setLaneHeight(24);
    const int lane = index_->RankLane(31);
    QVERIFY(view_->laneRect(lane).isEmpty());
    QSignalSpy selected(view_.get(), &TimelineView::opSelected);
    view_->revealOp(lane, 5);
    QVERIFY(!view_->laneRect(lane).isEmpty());
    QCOMPARE(selected.count(), 1);
    const TimeRange visible = view_->viewState()->visibleRange();
    QVERIFY(visible.t0 <= index_->lane(lane).start[5] && visible.t1 >= index_->lane(lane).end[5]);
  }

  void waitLinksAreThinnedByLevelOfDetail() {
    view_->setAllRanksCollapsed(true);
    // The warm-up of 32 ranks: every rank's first ops waited for the rank before.
    const TimeNs end = index_->end();
    view_->viewState()->setVisibleRange({0, end / 6});
    view_->grab();
    const RenderStats& stats = view_->lastRenderStats();
    QVERIFY2(stats.ops_in_view <= 2000, qPrintable(QString::number(stats.ops_in_view)));
    QVERIFY(stats.wait_links > 0);
    QVERIFY(stats.wait_links <= 300);
    // Zoomed out past 2000 ops in view: no links at all (a hairball otherwise).
    view_->viewState()->fitAll();
    view_->grab();
    QCOMPARE(view_->lastRenderStats().wait_links, 0);
  }

 private:
  std::shared_ptr<const TimelineIndex> index_;
  std::unique_ptr<TimelineView> view_;
};

QTEST_MAIN(BigPipelineTest)
#include "tst_big_pipeline.moc"
