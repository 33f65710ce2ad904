// SPDX-License-Identifier: Apache-2.0
// The window around the views: menus, recent files, view options, zoom history, keyboard focus,
// the summary panel's figures and the selection summary.
#include <QAction>
#include <QComboBox>
#include <QFile>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>

#include "app_test_support.h"
#include "details_panel.h"
#include "export.h"
#include "find_bar.h"
#include "loader.h"
#include "main_window.h"
#include "store_browser.h"
#include "summary_panel.h"
#include "zbkit/gui/compare_view.h"
#include "zbkit/gui/memory_track.h"
#include "zbkit/gui/timeline_view.h"
#include "zbkit/gui/units.h"
#include "zbkit/gui/view_state.h"

using zb::gui::ItemKind;
using zb::gui::ItemRef;
using zb::gui::MainWindow;

namespace {

QAction* FindAction(QWidget* menu_owner, const QString& menu_title, const QString& text) {
  for (QAction* menu_action : menu_owner->findChild<QMenuBar*>()->actions()) {
    if (menu_action->text().remove(u'&') != menu_title || menu_action->menu() == nullptr) continue;
    for (QAction* action : menu_action->menu()->actions()) {
      if (action->text().remove(u'&') == text) return action;
    }
  }
  return nullptr;
}

}  // namespace

class MainWindowTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void init();
  void menusHaveTheirActions();
  void recentFilesArePersistedNewestFirst();
  void recentFilesKeepAtMostEightAndPruneMissingOnes();
  void loadedItemGetsKeyboardFocus();
  void summaryShowsFiguresWithExplanations();
  void viewOptionsReachTheTimeline();
  void zoomHistoryFromTheMenu();
  void rangeSelectionIsSummarised();
  void findSelectsAndDetailsDescribe();
  void measuredRunIsComparedOneIterationAtATime();
  void memoryIsInBytesWhenTheProfileIs();
  void commandLineSelectionAndComparison();
  void costProfileShowsItsTable();
  void parsesItemSpecs();
  void windowPicturesAsArtefacts();

 private:
  static bool OpenAndWait(MainWindow& window, const QString& path,
                          std::optional<ItemRef> show = std::nullopt,
                          std::optional<ItemRef> compare = std::nullopt);

  QTemporaryDir dir_;
  zb::test::TunedStore tuned_;
};

void MainWindowTest::initTestCase() {
  zb::test::UseTestSettings("tst_main_window");
  QVERIFY(dir_.isValid());
  auto tuned = zb::test::MakeTunedStore(dir_.filePath(QStringLiteral("tuned.db")));
  QVERIFY(tuned.has_value());
  tuned_ = *tuned;
}

void MainWindowTest::init() {
  QSettings().clear();
}

bool MainWindowTest::OpenAndWait(MainWindow& window, const QString& path,
                                 std::optional<ItemRef> show, std::optional<ItemRef> compare) {
  window.openStore(path, show, compare);
  return window.loader()->waitForIdle(30000);
}

void MainWindowTest::menusHaveTheirActions() {
  MainWindow window;
  for (const char* text : {"Open...", "Export PNG...", "Export SVG...", "Export PDF...", "Quit"}) {
    QVERIFY2(FindAction(&window, QStringLiteral("File"), QString::fromLatin1(text)) != nullptr,
             text);
  }
  QAction* recent = FindAction(&window, QStringLiteral("File"), QStringLiteral("Open Recent"));
  QVERIFY(recent != nullptr && recent->menu() != nullptr);
  for (const char* text :
       {"Fit All", "Zoom Back", "Zoom Forward", "Show Stage Lanes", "Show Wait Links"}) {
    QVERIFY2(FindAction(&window, QStringLiteral("View"), QString::fromLatin1(text)) != nullptr,
             text);
  }
  // Nothing to export before anything is shown.
  QVERIFY(
      !FindAction(&window, QStringLiteral("File"), QStringLiteral("Export PNG..."))->isEnabled());
  QVERIFY(OpenAndWait(window, tuned_.path));
  QVERIFY(
      FindAction(&window, QStringLiteral("File"), QStringLiteral("Export PNG..."))->isEnabled());
}

void MainWindowTest::recentFilesArePersistedNewestFirst() {
  const QString other = dir_.filePath(QStringLiteral("other.db"));
  {
    auto store = zb::Store::Open(other.toStdString());
    QVERIFY(store.ok());
  }
  {
    MainWindow window;
    QVERIFY(window.recentFiles().isEmpty());
    QVERIFY(OpenAndWait(window, tuned_.path));
    QVERIFY(OpenAndWait(window, other));
    QVERIFY(OpenAndWait(window, tuned_.path));  // again: moves to the front, not duplicated
  }
  // A new window (a new session) reads them back.
  MainWindow window;
  const QStringList expected = {QFileInfo(tuned_.path).absoluteFilePath(),
                                QFileInfo(other).absoluteFilePath()};
  QCOMPARE(window.recentFiles(), expected);
  // The menu lists them, and a broken file does not enter the list.
  QVERIFY(OpenAndWait(window, dir_.filePath(QStringLiteral("does-not-exist.db"))));
  QCOMPARE(window.recentFiles(), expected);
  QAction* recent = FindAction(&window, QStringLiteral("File"), QStringLiteral("Open Recent"));
  emit recent->menu()->aboutToShow();
  QStringList tips;
  for (QAction* action : recent->menu()->actions()) {
    if (!action->toolTip().isEmpty() && !action->isSeparator()) tips << action->toolTip();
  }
  QVERIFY(tips.contains(expected[0]));
  QVERIFY(tips.contains(expected[1]));
}

void MainWindowTest::recentFilesKeepAtMostEightAndPruneMissingOnes() {
  QStringList paths;
  for (int i = 0; i < 10; ++i) {
    paths << dir_.filePath(QStringLiteral("store-%1.db").arg(i));
    auto store = zb::Store::Open(paths.back().toStdString());
    QVERIFY(store.ok());
  }
  MainWindow window;
  for (const QString& path : paths)
    QVERIFY(OpenAndWait(window, path));
  QStringList recent = window.recentFiles();
  QCOMPARE(recent.size(), MainWindow::kMaxRecentFiles);
  QCOMPARE(recent.front(), QFileInfo(paths[9]).absoluteFilePath());
  QCOMPARE(recent.back(), QFileInfo(paths[2]).absoluteFilePath());
  QVERIFY(QFile::remove(paths[9]));
  recent = window.recentFiles();
  QCOMPARE(recent.size(), MainWindow::kMaxRecentFiles - 1);
  QCOMPARE(recent.front(), QFileInfo(paths[8]).absoluteFilePath());
  // Pruned in the settings too, not only in what was returned.
  QCOMPARE(QSettings().value(QStringLiteral("recentFiles")).toStringList(), recent);
}

void MainWindowTest::loadedItemGetsKeyboardFocus() {
  MainWindow window;
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  QVERIFY(OpenAndWait(window, tuned_.path));
  QCOMPARE(window.focusWidget(), static_cast<QWidget*>(window.timelineView()));
  QSignalSpy compared(&window, &MainWindow::comparisonShown);
  window.compareItems({ItemKind::kSchedule, tuned_.one_f_one_b},
                      {ItemKind::kSchedule, tuned_.zb_v});
  QVERIFY(compared.wait(30000));
  QCOMPARE(window.focusWidget(), static_cast<QWidget*>(window.compareView()->top()));
}

void MainWindowTest::summaryShowsFiguresWithExplanations() {
  MainWindow window;
  QVERIFY(OpenAndWait(window, tuned_.path, ItemRef{ItemKind::kSchedule, tuned_.zb_v}));
  const auto item = window.shownItem();
  QVERIFY(item != nullptr && item->figures.has_value());
  zb::gui::SummaryPanel* summary = window.summary();
  QVERIFY(summary->titleText().contains(QLatin1String("zb-v")));
  // Both bubble conventions, with the tooltip that tells them apart.
  QCOMPARE(summary->bubbleText(), zb::gui::FormatRate(item->figures->bubble_rate));
  QCOMPARE(summary->paperBubbleText(), zb::gui::FormatRate(item->figures->paper_bubble_rate));
  QVERIFY(item->figures->bubble_rate != item->figures->paper_bubble_rate);
  QVERIFY(zb::gui::BubbleRatesExplanation().contains(QLatin1String("first F")));
  // T/LB: at least 1 under the same cap.
  QVERIFY(item->TOverLb().has_value());
  QVERIFY(*item->TOverLb() >= 1.0 - 1e-9);
  QVERIFY(summary->lowerBoundText().startsWith(QString::number(*item->TOverLb(), 'f', 3)));
  // Peak memory per rank against the cap: under it for a schedule that was tuned to fit.
  QTableWidget* memory = summary->memoryTable();
  QCOMPARE(memory->rowCount(), 4);
  for (int r = 0; r < memory->rowCount(); ++r) {
    QCOMPARE(memory->item(r, 2)->text(),
             zb::gui::FormatMemory(item->figures->peak_memory[r], item->memory_unit));
    QCOMPARE(memory->item(r, 3)->text(), zb::gui::FormatMemory(item->caps[r], item->memory_unit));
    QVERIFY(memory->item(r, 4)->text().endsWith(u'%'));
  }
  // The cost profile as scheduled: ZB-V splits each of the 4 stages in two.
  QCOMPARE(summary->costTable()->rowCount(), 8);
  QCOMPARE(summary->costTable()->item(7, 1)->text(), zb::gui::FormatMs(zb::MsToNs(7.0)));
  // The largest bubbles, with what they waited for.
  QVERIFY(!item->bubbles.empty());
  const QStringList lines = zb::gui::SummaryLines(*item);
  QVERIFY(lines.join(u'\n').contains(QLatin1String("largest bubbles")));
}

void MainWindowTest::viewOptionsReachTheTimeline() {
  MainWindow window;
  window.resize(1400, 900);
  QVERIFY(OpenAndWait(window, tuned_.path, ItemRef{ItemKind::kSchedule, tuned_.zb_v}));
  const auto& index = window.timelineView()->timeline();
  int stage_lane = -1;
  for (size_t i = 0; i < index->lanes().size(); ++i) {
    if (index->lane(static_cast<int>(i)).kind == zb::LaneKind::kStage)
      stage_lane = static_cast<int>(i);
  }
  QVERIFY2(stage_lane >= 0, "ZB-V holds two stages per rank");
  window.timelineView()->resize(1000, 600);
  QVERIFY(!window.timelineView()->laneRect(stage_lane).isEmpty());
  window.showStageLanesAction()->setChecked(false);
  QVERIFY(window.timelineView()->laneRect(stage_lane).isEmpty());
  window.showStageLanesAction()->setChecked(true);
  QVERIFY(!window.timelineView()->laneRect(stage_lane).isEmpty());

  (void)window.timelineView()->grab();
  const int64_t links = window.timelineView()->lastRenderStats().wait_links;
  QVERIFY(links > 0);
  window.showWaitLinksAction()->setChecked(false);
  (void)window.timelineView()->grab();
  QCOMPARE(window.timelineView()->lastRenderStats().wait_links, int64_t{0});

  // Lane height and folding reach the single view and both compare panes.
  QAction* large = FindAction(&window, QStringLiteral("View"), QStringLiteral("Lane Height"));
  QVERIFY2(large != nullptr && large->menu() != nullptr, "View -> Lane Height");
  QAction* forty = nullptr;
  for (QAction* action : large->menu()->actions()) {
    if (action->data().toInt() == 40) forty = action;
  }
  QVERIFY(forty != nullptr);
  forty->trigger();
  QCOMPARE(window.timelineView()->laneHeight(), 40);
  QCOMPARE(window.compareView()->top()->laneHeight(), 40);
  QCOMPARE(window.compareView()->bottom()->laneHeight(), 40);
  QAction* fold =
      FindAction(&window, QStringLiteral("View"), QStringLiteral("Fold All Stage Lanes"));
  QVERIFY(fold != nullptr);
  fold->setChecked(true);
  QVERIFY(window.timelineView()->laneRect(stage_lane).isEmpty());
  QVERIFY(window.compareView()->bottom()->isRankCollapsed(0));
  fold->setChecked(false);
  QVERIFY(!window.timelineView()->laneRect(stage_lane).isEmpty());
}

void MainWindowTest::zoomHistoryFromTheMenu() {
  MainWindow window;
  QVERIFY(OpenAndWait(window, tuned_.path));
  zb::gui::ViewState* state = window.viewState();
  const zb::gui::TimeRange all = state->visibleRange();
  QAction* back = FindAction(&window, QStringLiteral("View"), QStringLiteral("Zoom Back"));
  QAction* forward = FindAction(&window, QStringLiteral("View"), QStringLiteral("Zoom Forward"));
  QAction* fit = FindAction(&window, QStringLiteral("View"), QStringLiteral("Fit All"));
  QVERIFY(!back->isEnabled());
  state->zoomAt(all.t0 + all.length() / 2, 0.25);
  const zb::gui::TimeRange zoomed = state->visibleRange();
  QVERIFY(zoomed.length() < all.length());
  QVERIFY(back->isEnabled());
  back->trigger();
  QCOMPARE(state->visibleRange(), all);
  QVERIFY(forward->isEnabled());
  forward->trigger();
  QCOMPARE(state->visibleRange(), zoomed);
  fit->trigger();
  QCOMPARE(state->visibleRange(), all);
}

void MainWindowTest::rangeSelectionIsSummarised() {
  MainWindow window;
  QVERIFY(OpenAndWait(window, tuned_.path));
  const auto& index = window.timelineView()->timeline();
  const zb::gui::TimeRange range{index->end() / 4, index->end() / 2};
  emit window.timelineView()->rangeSelected(range);
  const QString text = window.summary()->selectionText();
  QVERIFY2(text.contains(zb::gui::FormatMs(range.t0)), qPrintable(text));
  QVERIFY(text.contains(QLatin1String("busy")));
  window.viewState()->setSelection(range);
  window.viewState()->setSelection(std::nullopt);
  QVERIFY(window.summary()->selectionText().isEmpty());
}

// Item 4 of issue 10: Ctrl+F finds an op by kind/stage/microbatch/name, Enter reveals and selects
// it, and the details panel beside the timeline describes it (busy time and kernels of a measured
// op included); a range selection is summarised there too; a click on nothing clears.
void MainWindowTest::findSelectsAndDetailsDescribe() {
  MainWindow window;
  window.resize(1400, 800);
  QVERIFY(OpenAndWait(window, tuned_.path, ItemRef{ItemKind::kTimeline, tuned_.measured}));
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  zb::gui::FindBar* find = window.findBar();
  QVERIFY(find->isHidden());
  QAction* find_action = FindAction(&window, QStringLiteral("View"), QStringLiteral("Find Op..."));
  QVERIFY(find_action != nullptr);
  find_action->trigger();
  QVERIFY(find->isVisible());

  find->setQuery(QStringLiteral("B stage 1 mb 3"));
  QCOMPARE(find->statusText(), QStringLiteral("1 match"));
  QSignalSpy selected(window.timelineView(), &zb::gui::TimelineView::opSelected);
  find->next();
  QCOMPARE(find->statusText(), QStringLiteral("1 of 1"));
  QCOMPARE(selected.count(), 1);
  const auto op = window.timelineView()->selectedOp();
  QVERIFY(op.has_value());
  const zb::TimelineLane& lane = window.timelineView()->timeline()->lane(op->first);
  QCOMPARE(lane.kind_of[op->second], zb::OpKind::kB);
  QCOMPARE(lane.stage_of[op->second], 1);
  QCOMPARE(lane.microbatch[op->second], 3);
  // Revealed: the op is inside the visible range.
  const zb::gui::TimeRange visible = window.viewState()->visibleRange();
  QVERIFY(visible.t0 <= lane.start[op->second] && visible.t1 >= lane.end[op->second]);
  const QString details = window.details()->opText();
  for (const char* part : {"B stage 1 mb 3  rank 1", "range B_stage_1", "duration", "busy",
                           "(60.0% of its span)", "12 kernels"}) {
    QVERIFY2(details.contains(QLatin1String(part)), qPrintable(details));
  }

  find->setQuery(QStringLiteral("F_stage"));  // a range name: every F
  QCOMPARE(find->statusText(), QStringLiteral("32 matches"));
  find->setQuery(QStringLiteral("mb -2"));
  QVERIFY2(find->statusText().contains(QLatin1String("needs a number")),
           qPrintable(find->statusText()));
  find->setQuery(QStringLiteral("W stage 9"));
  QCOMPARE(find->statusText(), QStringLiteral("no match"));

  const zb::gui::TimeRange range{visible.t0, (visible.t0 + visible.t1) / 2};
  window.viewState()->setSelection(range);
  QVERIFY2(window.details()->rangeText().contains(QLatin1String("busy")),
           qPrintable(window.details()->rangeText()));
  window.timelineView()->selectOp(std::nullopt);
  QVERIFY(window.details()->opText().startsWith(QLatin1String("Click an op")));
}

// Item 2 of issue 10: a measured run of three iterations (the second one slow) compared with its
// prediction is cut to its median iteration by default; the chooser offers each iteration and the
// whole run. The single view of the run draws a boundary per iteration.
void MainWindowTest::measuredRunIsComparedOneIterationAtATime() {
  const QString path = dir_.filePath(QStringLiteral("iterations.db"));
  QFile::remove(path);
  QVERIFY(QFile::copy(tuned_.path, path));
  int64_t run = 0;
  size_t ops_per_iteration = 0;
  {
    auto store = zb::Store::Open(path.toStdString());
    QVERIFY(store.ok());
    auto schedule = store->LoadSchedule(tuned_.zb_h1);
    QVERIFY(schedule.ok());
    const zb::Timeline one = zb::test::MeasuredRunOf(*schedule);
    ops_per_iteration = one.ops.size();
    zb::Timeline three = one;
    three.ops.clear();
    three.memory.clear();
    zb::TimeNs offset = 0;
    for (int iteration = 0; iteration < 3; ++iteration) {
      const zb::TimeNs stretch = iteration == 1 ? 2 : 1;  // iteration 1 takes twice as long
      zb::TimeNs end = 0;
      for (zb::TimelineOp op : one.ops) {
        op.start = offset + op.start * stretch;
        op.end = offset + op.end * stretch;
        op.busy *= stretch;
        op.iteration = iteration;
        end = std::max(end, op.end);
        three.ops.push_back(op);
      }
      offset = end + 1'000'000;
    }
    auto id = store->InsertTimeline(tuned_.zb_h1, three);
    QVERIFY(id.ok());
    run = *id;
  }
  MainWindow window;
  window.resize(1400, 800);
  QVERIFY(OpenAndWait(window, path, ItemRef{ItemKind::kSchedule, tuned_.zb_h1},
                      ItemRef{ItemKind::kTimeline, run}));
  QVERIFY(window.isComparing());
  QComboBox* choice = window.iterationChoice();
  QVERIFY(!choice->isHidden());
  QCOMPARE(choice->count(), 5);  // median, iterations 0-2, whole run
  QVERIFY2(choice->currentText().startsWith(QLatin1String("median: iteration")),
           qPrintable(choice->currentText()));
  auto measured_ops = [&] { return window.compareView()->bottom()->timeline()->num_ops(); };
  QCOMPARE(measured_ops(), static_cast<int64_t>(ops_per_iteration));
  const zb::TimeNs median_makespan = window.compareView()->bottom()->timeline()->makespan();
  choice->setCurrentIndex(2);  // iteration 1, the slow one
  QCOMPARE(measured_ops(), static_cast<int64_t>(ops_per_iteration));
  QVERIFY(window.compareView()->bottom()->timeline()->makespan() > median_makespan * 3 / 2);
  choice->setCurrentIndex(choice->count() - 1);  // the whole run
  QCOMPARE(measured_ops(), static_cast<int64_t>(3 * ops_per_iteration));

  // Shown alone, the run draws its iteration boundaries.
  window.showItem(ItemRef{ItemKind::kTimeline, run});
  QVERIFY(window.loader()->waitForIdle(30000));
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  window.timelineView()->grab();
  QCOMPARE(window.timelineView()->lastRenderStats().iteration_lines, 3);
}

// Item 5 of issue 10: the tuned store's hand-made profile counts in units of M_B; once the job has
// a measured profile, its schedules' memory is bytes with binary prefixes, in the summary, the
// memory track and the export titles alike. View -> Show Memory Track hides the track.
void MainWindowTest::memoryIsInBytesWhenTheProfileIs() {
  {
    MainWindow window;
    QVERIFY(OpenAndWait(window, tuned_.path, ItemRef{ItemKind::kSchedule, tuned_.zb_h1}));
    QCOMPARE(window.shownItem()->memory_unit, zb::gui::MemoryUnit::kProfileUnits);
    QVERIFY(window.summary()->findChild<QLabel*>() != nullptr);
  }
  const QString path = dir_.filePath(QStringLiteral("bytes.db"));
  QFile::remove(path);
  QVERIFY(QFile::copy(tuned_.path, path));
  {
    auto store = zb::Store::Open(path.toStdString());
    QVERIFY(store.ok());
    auto cluster = store->EnsureCluster({"test-cluster", "", "", "", ""});
    QVERIFY(cluster.ok());
    auto job = store->EnsureJob(*cluster, "gpt-4stage");
    QVERIFY(job.ok());
    zb::CostProfileDetails details;
    details.memory_source = zb::MemorySource::kMeasured;
    auto profile = store->InsertCostProfile(*job, "profiled", zb::test::FourStageCosts(), details);
    QVERIFY2(profile.ok(), profile.status().message().c_str());
  }
  MainWindow window;
  window.resize(1400, 800);
  QVERIFY(OpenAndWait(window, path, ItemRef{ItemKind::kSchedule, tuned_.zb_h1}));
  QCOMPARE(window.shownItem()->memory_unit, zb::gui::MemoryUnit::kBytes);
  bool caption = false;
  for (QLabel* label : window.summary()->findChildren<QLabel*>()) {
    caption =
        caption || label->text().contains(QLatin1String("peak activation memory, cap (bytes)"));
  }
  QVERIFY(caption);
  auto* table = window.summary()->findChildren<QTableWidget*>().value(0);
  QVERIFY(table != nullptr);
  // The caps of the tuned store, 800, are now bytes: "800 B".
  QCOMPARE(table->item(0, 3)->text(), QStringLiteral("800 B"));
  QVERIFY(window.showMemoryTrackAction() != nullptr);
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  QVERIFY(window.memoryTrack()->isVisible());
  window.showMemoryTrackAction()->setChecked(false);
  QVERIFY(!window.memoryTrack()->isVisible());
  window.showMemoryTrackAction()->setChecked(true);
  QVERIFY(window.memoryTrack()->isVisible());
}

void MainWindowTest::commandLineSelectionAndComparison() {
  MainWindow window;
  QSignalSpy compared(&window, &MainWindow::comparisonShown);
  QVERIFY(OpenAndWait(window, tuned_.path, ItemRef{ItemKind::kSchedule, tuned_.zb_v},
                      ItemRef{ItemKind::kSchedule, tuned_.one_f_one_b}));
  QCOMPARE(compared.count(), 1);
  QVERIFY(window.isComparing());
  QVERIFY((window.shownItem()->ref == ItemRef{ItemKind::kSchedule, tuned_.zb_v}));
  QCOMPARE(window.compareView()->top()->timeline()->num_ops(),
           window.shownItem()->index->num_ops());
  // Both panes share one time window.
  QCOMPARE(window.compareView()->top()->viewState(), window.compareView()->bottom()->viewState());
  QVERIFY(!window.compareView()->summaryText().isEmpty());
}

void MainWindowTest::costProfileShowsItsTable() {
  MainWindow window;
  QVERIFY(OpenAndWait(window, tuned_.path));
  auto listing = window.loader()->listing();
  QVERIFY(listing != nullptr && !listing->profiles.empty());
  QSignalSpy shown(&window, &MainWindow::itemShown);
  const zb::CostProfileInfo& profile = listing->profiles.front();
  window.browser()->selectRefs({{ItemKind::kCostProfile, profile.id}});
  QVERIFY(shown.wait(30000));
  QCOMPARE(window.summary()->costTable()->rowCount(), profile.num_stages);
  QCOMPARE(window.centralView(), nullptr);  // no timeline to draw or export
}

void MainWindowTest::parsesItemSpecs() {
  using zb::gui::ParseItemSpec;
  QVERIFY((ParseItemSpec(QStringLiteral("3")) == ItemRef{ItemKind::kSchedule, 3}));
  QVERIFY((ParseItemSpec(QStringLiteral("s12")) == ItemRef{ItemKind::kSchedule, 12}));
  QVERIFY((ParseItemSpec(QStringLiteral("t7")) == ItemRef{ItemKind::kTimeline, 7}));
  QVERIFY((ParseItemSpec(QStringLiteral("timeline:7")) == ItemRef{ItemKind::kTimeline, 7}));
  for (const char* bad : {"", "x", "0", "-1", "t", "3.5", "+3", "s-2"}) {
    QVERIFY2(!ParseItemSpec(QString::fromLatin1(bad)).has_value(), bad);
  }
}

// Not an assertion on pixels: pictures of the whole window for a person to look at (CI keeps
// test-output/).
void MainWindowTest::windowPicturesAsArtefacts() {
  MainWindow window;
  window.resize(1600, 950);
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  QVERIFY(OpenAndWait(window, tuned_.path, ItemRef{ItemKind::kSchedule, tuned_.zb_h1}));
  emit window.timelineView()->rangeSelected({zb::MsToNs(40), zb::MsToNs(120)});
  QVERIFY(window.grab().save(zb::test::OutputPath(QStringLiteral("main-window-zb-h1.png"))));
  QSignalSpy compared(&window, &MainWindow::comparisonShown);
  window.compareItems({ItemKind::kSchedule, tuned_.zb_h1}, {ItemKind::kTimeline, tuned_.measured});
  QVERIFY(compared.wait(30000));
  QVERIFY(window.grab().save(
      zb::test::OutputPath(QStringLiteral("main-window-predicted-vs-measured.png"))));
}

QTEST_MAIN(MainWindowTest)
#include "tst_main_window.moc"
