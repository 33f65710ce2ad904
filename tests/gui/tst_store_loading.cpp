// SPDX-License-Identifier: Apache-2.0
// Opening stores in the window: broken and empty files give one clear message and never a crash,
// hang or modal box; a real store is listed and shown; a 1M-op timeline loads off the UI thread
// while the event loop keeps running.
#include <QElapsedTimer>
#include <QProgressBar>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <QTreeWidget>

#include "app_test_support.h"
#include "loader.h"
#include "main_window.h"
#include "store_browser.h"
#include "summary_panel.h"
#include "zbkit/gui/memory_track.h"
#include "zbkit/gui/timeline_view.h"

using zb::gui::ItemKind;
using zb::gui::ItemRef;
using zb::gui::MainWindow;

class StoreLoadingTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void brokenFilesOpenWithAClearMessage_data();
  void brokenFilesOpenWithAClearMessage();
  void emptyValidStoreSaysSo();
  void browserListsWhatTheStoreHolds();
  void mostRecentItemIsShownFirst();
  void selectingAScheduleShowsItsMakespan();
  void measuredRunShowsItsSchedulesCostProfile();
  void comparingTwoSelectedItems();
  void unknownItemIsReported();
  void supersededLoadNeverArrives();
  void anotherStoreWithTheSameIdsIsShown();
  void millionOpTimelineKeepsTheEventLoopAlive();
  void failedOpenKeepsTheOpenStore();
  void runWithoutAScheduleShowsUnderItsJob();

 private:
  // Opens `path` and waits until the loader is idle (listing and the first item).
  static bool OpenAndWait(MainWindow& window, const QString& path);

  QTemporaryDir dir_;
  zb::test::TunedStore tuned_;
};

void StoreLoadingTest::initTestCase() {
  zb::test::UseTestSettings("tst_store_loading");
  QVERIFY(dir_.isValid());
  auto tuned = zb::test::MakeTunedStore(dir_.filePath(QStringLiteral("tuned.db")));
  QVERIFY(tuned.has_value());
  tuned_ = *tuned;
}

bool StoreLoadingTest::OpenAndWait(MainWindow& window, const QString& path) {
  window.openStore(path);
  // The listing arrives, then the window asks for the most recent item: wait for both.
  return window.loader()->waitForIdle(30000) && window.loader()->waitForIdle(30000);
}

void StoreLoadingTest::brokenFilesOpenWithAClearMessage_data() {
  QTest::addColumn<QString>("name");
  QTest::addColumn<QByteArray>("content");  // null: do not create the file
  QTest::addColumn<QString>("expected");

  QTest::newRow("corrupt") << "corrupt.db"
                           << QByteArray("this is not a zbkit store, just some text\n").repeated(50)
                           << "file is not a database";
  QTest::newRow("zero bytes") << "zero.db" << QByteArray("") << "the file is empty (0 bytes)";
  QTest::newRow("missing") << "missing.db" << QByteArray() << "no such file";
  QTest::newRow("newer schema") << "newer.db" << QByteArray("newer") << "is newer than this zbkit";
}

void StoreLoadingTest::brokenFilesOpenWithAClearMessage() {
  QFETCH(QString, name);
  QFETCH(QByteArray, content);
  QFETCH(QString, expected);
  const QString path = dir_.filePath(name);
  if (name == QLatin1String("newer.db")) {
    QVERIFY(zb::test::MakeNewerStore(path));
  } else if (!content.isNull()) {
    QVERIFY(zb::test::WriteFile(path, content));
  }
  const bool existed = QFile::exists(path);
  QByteArray before;
  if (existed) {
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    before = file.readAll();
  }

  MainWindow window;
  QSignalSpy failed(window.loader(), &zb::gui::StoreLoader::failed);
  QVERIFY(OpenAndWait(window, path));
  QCOMPARE(failed.count(), 1);
  QVERIFY(window.isBannerShown());
  const QString banner = window.bannerText();
  qInfo().noquote() << "banner:" << banner;
  QVERIFY2(banner.contains(expected), qPrintable(banner));
  QVERIFY2(banner.contains(path), "the message names the file");
  QVERIFY(!banner.contains(u'\n'));
  QVERIFY(window.shownItem() == nullptr);
  QCOMPARE(window.centralView(), nullptr);
  QCOMPARE(window.browser()->tree()->topLevelItemCount(), 0);
  QVERIFY(!window.loader()->isBusy());
  // Read-only: the file is left exactly as it was (and a missing one is not created).
  if (!existed) {
    QVERIFY(!QFile::exists(path));
  } else {
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QCOMPARE(file.readAll(), before);
  }
  // A broken store does not stick: the next good one opens normally and clears the banner.
  QVERIFY(OpenAndWait(window, tuned_.path));
  QVERIFY(!window.isBannerShown());
  QVERIFY(window.shownItem() != nullptr);
}

void StoreLoadingTest::emptyValidStoreSaysSo() {
  const QString path = dir_.filePath(QStringLiteral("empty.db"));
  {
    auto store = zb::Store::Open(path.toStdString());
    QVERIFY(store.ok());
  }
  MainWindow window;
  QVERIFY(OpenAndWait(window, path));
  QVERIFY(window.isBannerShown());
  QVERIFY2(window.bannerText().contains(QLatin1String("holds no schedules or timelines")),
           qPrintable(window.bannerText()));
  QVERIFY(window.shownItem() == nullptr);
  QCOMPARE(window.browser()->rowCount(ItemKind::kSchedule), 0);
  // An empty store is still a store: it goes to the recent files.
  QVERIFY(window.recentFiles().contains(QFileInfo(path).absoluteFilePath()));
}

void StoreLoadingTest::browserListsWhatTheStoreHolds() {
  MainWindow window;
  QVERIFY(OpenAndWait(window, tuned_.path));
  auto store = zb::Store::Open(tuned_.path.toStdString(), zb::Store::Mode::kReadOnly);
  QVERIFY(store.ok());
  auto schedules = store->ListSchedules();
  auto timelines = store->ListTimelines();
  auto profiles = store->ListCostProfiles();
  QVERIFY(schedules.ok() && timelines.ok() && profiles.ok());
  zb::gui::StoreBrowser* browser = window.browser();
  QCOMPARE(browser->rowCount(ItemKind::kSchedule), static_cast<int>(schedules->size()));
  QCOMPARE(browser->rowCount(ItemKind::kTimeline), static_cast<int>(timelines->size()));
  QCOMPARE(browser->rowCount(ItemKind::kCostProfile), static_cast<int>(profiles->size()));
  QCOMPARE(schedules->size(), size_t{3});
  QCOMPARE(timelines->size(), size_t{4});  // three predicted, one measured
  for (const zb::ScheduleInfo& info : *schedules) {
    QTreeWidgetItem* row = browser->rowFor({ItemKind::kSchedule, info.id});
    QVERIFY(row != nullptr);
    QVERIFY(row->text(0).contains(QString::fromStdString(info.family)));
    QCOMPARE(row->text(zb::gui::StoreBrowser::kRanksColumn), QString::number(info.ranks));
    QCOMPARE(row->text(zb::gui::StoreBrowser::kMicrobatchesColumn),
             QString::number(info.microbatches));
    QCOMPARE(row->text(zb::gui::StoreBrowser::kMakespanColumn),
             zb::gui::FormatMs(info.predicted.makespan));
    QCOMPARE(row->text(zb::gui::StoreBrowser::kOpsColumn), QString::number(info.num_ops));
    // Grouped by cluster and job.
    QVERIFY(row->parent() != nullptr && row->parent()->parent() != nullptr);
    QCOMPARE(row->parent()->text(0), QStringLiteral("gpt-4stage"));
    QCOMPARE(row->parent()->parent()->text(0), QStringLiteral("test-cluster"));
  }
  // The measured run hangs under its schedule.
  QTreeWidgetItem* run = browser->rowFor({ItemKind::kTimeline, tuned_.measured});
  QVERIFY(run != nullptr);
  QCOMPARE(run->parent(), browser->rowFor({ItemKind::kSchedule, tuned_.zb_h1}));
  QVERIFY(run->text(0).contains(QLatin1String("measured")));
}

void StoreLoadingTest::mostRecentItemIsShownFirst() {
  MainWindow window;
  QVERIFY(OpenAndWait(window, tuned_.path));
  QVERIFY(window.shownItem() != nullptr);
  QVERIFY((window.shownItem()->ref == ItemRef{ItemKind::kSchedule, tuned_.zb_v}));
  QCOMPARE(window.browser()->selectedRefs().size(), size_t{1});
  QVERIFY((window.browser()->selectedRefs().front() == ItemRef{ItemKind::kSchedule, tuned_.zb_v}));
}

void StoreLoadingTest::selectingAScheduleShowsItsMakespan() {
  MainWindow window;
  QVERIFY(OpenAndWait(window, tuned_.path));
  const auto info = zb::test::FindScheduleInfo(tuned_.path, tuned_.one_f_one_b);
  QVERIFY(info.has_value());

  QSignalSpy shown(&window, &MainWindow::itemShown);
  window.browser()->selectRefs({{ItemKind::kSchedule, tuned_.one_f_one_b}});
  QVERIFY(shown.wait(30000));
  QVERIFY(window.shownItem() != nullptr);
  QVERIFY((window.shownItem()->ref == ItemRef{ItemKind::kSchedule, tuned_.one_f_one_b}));
  QCOMPARE(window.summary()->makespanText(),
           zb::gui::FormatMs(info->predicted.makespan) + QStringLiteral(" ms"));
  QCOMPARE(window.summary()->bubbleText(), zb::gui::FormatRate(info->predicted.bubble_rate));
  QCOMPARE(window.summary()->paperBubbleText(),
           zb::gui::FormatRate(info->predicted.paper_bubble_rate));
  QVERIFY2(window.summary()->lowerBoundText().contains(QLatin1String("bound")),
           qPrintable(window.summary()->lowerBoundText()));
  QCOMPARE(window.summary()->memoryTable()->rowCount(), info->ranks);
  QCOMPARE(window.summary()->costTable()->rowCount(), 4);
  // The views got the schedule's timeline, every op of it, and the per-rank cap.
  QVERIFY(window.timelineView()->timeline() != nullptr);
  QCOMPARE(window.timelineView()->timeline()->num_ops(), info->num_ops);
  QCOMPARE(window.timelineView()->timeline()->Figures().makespan, info->predicted.makespan);
  QVERIFY(window.shownItem()->caps.size() == static_cast<size_t>(info->ranks));
  QVERIFY(window.shownItem()->caps == info->rank_caps);
  QCOMPARE(*std::max_element(window.shownItem()->caps.begin(), window.shownItem()->caps.end()),
           *info->cap);
  QCOMPARE(window.viewState()->traceRange().t1, info->predicted.makespan);
  QVERIFY(!window.isComparing());
}

void StoreLoadingTest::measuredRunShowsItsSchedulesCostProfile() {
  MainWindow window;
  QVERIFY(OpenAndWait(window, tuned_.path));
  QSignalSpy shown(&window, &MainWindow::itemShown);
  window.browser()->selectRefs({{ItemKind::kTimeline, tuned_.measured}});
  QVERIFY(shown.wait(30000));
  const auto item = window.shownItem();
  QVERIFY(item != nullptr);
  QVERIFY(item->timeline.has_value());
  QCOMPARE(item->timeline->kind, zb::TimelineKind::kMeasured);
  QVERIFY(item->schedule.has_value());
  QCOMPARE(item->schedule->id, tuned_.zb_h1);
  QVERIFY(item->costs.has_value());
  QCOMPARE(window.summary()->costTable()->rowCount(), 4);
  // The measured run is slower than the prediction: its own makespan is shown, not the
  // schedule's.
  QVERIFY(item->figures->makespan > item->schedule->predicted.makespan);
  QCOMPARE(window.summary()->makespanText(),
           zb::gui::FormatMs(item->index->Figures().makespan) + QStringLiteral(" ms"));
  QVERIFY(window.summary()->titleText().contains(QLatin1String("measured")));
}

void StoreLoadingTest::comparingTwoSelectedItems() {
  MainWindow window;
  QVERIFY(OpenAndWait(window, tuned_.path));
  QSignalSpy compared(&window, &MainWindow::comparisonShown);
  window.browser()->selectRefs(
      {{ItemKind::kSchedule, tuned_.zb_v}, {ItemKind::kSchedule, tuned_.one_f_one_b}});
  QCOMPARE(window.browser()->selectedRefs().size(), size_t{2});
  window.browser()->compareSelected();
  QVERIFY(compared.wait(30000));
  QVERIFY(window.isComparing());
  // Older on top: 1F1B was tuned first.
  QVERIFY((window.shownItem()->ref == ItemRef{ItemKind::kSchedule, tuned_.one_f_one_b}));
  QVERIFY(window.summary()->makespanText().contains(QLatin1String("->")));
  QVERIFY(window.centralView() != nullptr);

  // Predicted against measured.
  window.compareItems({ItemKind::kSchedule, tuned_.zb_h1}, {ItemKind::kTimeline, tuned_.measured});
  QVERIFY(compared.wait(30000));
  QVERIFY(window.isComparing());
}

void StoreLoadingTest::unknownItemIsReported() {
  MainWindow window;
  window.openStore(tuned_.path, ItemRef{ItemKind::kSchedule, 999});
  QVERIFY(window.loader()->waitForIdle(30000));
  QVERIFY(window.loader()->waitForIdle(30000));
  QVERIFY(window.isBannerShown());
  QVERIFY2(window.bannerText().contains(QLatin1String("no schedule 999")),
           qPrintable(window.bannerText()));
  // ...and the most recent item is shown instead.
  QVERIFY(window.shownItem() != nullptr);
}

void StoreLoadingTest::supersededLoadNeverArrives() {
  MainWindow window;
  QVERIFY(OpenAndWait(window, tuned_.path));
  QSignalSpy shown(&window, &MainWindow::itemShown);
  window.showItem({ItemKind::kSchedule, tuned_.one_f_one_b});
  window.showItem({ItemKind::kSchedule, tuned_.zb_h1});
  QVERIFY(shown.wait(30000));
  QVERIFY(window.loader()->waitForIdle(30000));
  QTest::qWait(50);
  QCOMPARE(shown.count(), 1);
  QVERIFY((window.shownItem()->ref == ItemRef{ItemKind::kSchedule, tuned_.zb_h1}));
}

void StoreLoadingTest::anotherStoreWithTheSameIdsIsShown() {
  auto twin = zb::test::MakeTunedStore(dir_.filePath(QStringLiteral("twin.db")));
  QVERIFY(twin.has_value());
  QCOMPARE(twin->zb_v, tuned_.zb_v);
  MainWindow window;
  QVERIFY(OpenAndWait(window, tuned_.path));
  QSignalSpy shown(&window, &MainWindow::itemShown);
  QVERIFY(OpenAndWait(window, twin->path));
  QCOMPARE(shown.count(), 1);
  QCOMPARE(QString::fromStdString(window.shownItem()->store_path), twin->path);
}

void StoreLoadingTest::millionOpTimelineKeepsTheEventLoopAlive() {
  const QString path = dir_.filePath(QStringLiteral("million.db"));
  QElapsedTimer build;
  build.start();
  const auto id = zb::test::MakeMillionOpStore(path);
  QVERIFY(id.has_value());
  qInfo("built a 1M-op store in %lld ms", static_cast<long long>(build.elapsed()));

  MainWindow window;
  window.resize(1400, 850);
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));

  // A 10 ms timer stands for the user: it must keep firing while the store loads.
  int ticks = 0;
  qint64 longest_gap_ms = 0;
  QElapsedTimer since_tick;
  QTimer heartbeat;
  heartbeat.setInterval(10);
  connect(&heartbeat, &QTimer::timeout, this, [&] {
    if (since_tick.isValid()) longest_gap_ms = std::max(longest_gap_ms, since_tick.elapsed());
    since_tick.restart();
    ++ticks;
  });
  QSignalSpy shown(&window, &MainWindow::itemShown);
  QSignalSpy progress(window.loader(), &zb::gui::StoreLoader::progressChanged);
  bool progress_bar_seen = false;
  connect(window.loader(), &zb::gui::StoreLoader::progressChanged, this,
          [&] { progress_bar_seen |= window.progressBar()->isVisible(); });
  QElapsedTimer load;
  load.start();
  heartbeat.start();
  window.openStore(path);
  QVERIFY(shown.wait(120000));
  const qint64 load_ms = load.elapsed();
  heartbeat.stop();
  qInfo(
      "opened and showed a 1M-op timeline in %lld ms (worker load %.0f ms); event loop ticked "
      "%d times, longest gap %lld ms",
      static_cast<long long>(load_ms), window.shownItem()->load_ms, ticks,
      static_cast<long long>(longest_gap_ms));

  QVERIFY2(ticks >= 2, "the event loop stalled while loading");
  QVERIFY(progress.count() >= 3);
  QVERIFY(progress_bar_seen);
  QVERIFY(!window.progressBar()->isVisible());
  const auto item = window.shownItem();
  QVERIFY((item->ref == ItemRef{ItemKind::kTimeline, *id}));
  QVERIFY(item->index->num_ops() >= 1'000'000);
  QCOMPARE(window.timelineView()->timeline()->num_ops(), item->index->num_ops());
  QCOMPARE(window.summary()->makespanText(),
           zb::gui::FormatMs(item->index->Figures().makespan) + QStringLiteral(" ms"));
  // The window paints it (level of detail keeps this bounded).
  QVERIFY(!window.centralView()->grab().isNull());
  QVERIFY(window.timelineView()->lastRenderStats().ops_in_view > 0);
}

QTEST_MAIN(StoreLoadingTest)
// Item 6 of issue 10: File -> Open of a broken file keeps the store that was open (its browser,
// its view), says so in the banner, and the window still works.
void StoreLoadingTest::failedOpenKeepsTheOpenStore() {
  MainWindow window;
  QVERIFY(OpenAndWait(window, tuned_.path));
  const auto shown = window.shownItem();
  QVERIFY(shown != nullptr);
  const int rows = window.browser()->tree()->topLevelItemCount();
  QVERIFY(rows > 0);
  const QString broken = dir_.filePath(QStringLiteral("not-a-store.db"));
  QVERIFY(zb::test::WriteFile(broken, QByteArray("not a database\n").repeated(40)));
  QVERIFY(OpenAndWait(window, broken));
  QVERIFY(window.isBannerShown());
  QVERIFY2(window.bannerText().contains(broken), qPrintable(window.bannerText()));
  QVERIFY2(window.bannerText().contains(QLatin1String("still showing")),
           qPrintable(window.bannerText()));
  QCOMPARE(window.storePath(), tuned_.path);
  QCOMPARE(window.shownItem(), shown);
  QVERIFY(window.centralView() != nullptr);
  QCOMPARE(window.browser()->tree()->topLevelItemCount(), rows);
  // The kept store still answers: another of its items loads.
  window.showItem({ItemKind::kSchedule, tuned_.one_f_one_b});
  QVERIFY(window.loader()->waitForIdle(30000));
  QCOMPARE(window.shownItem()->ref, (ItemRef{ItemKind::kSchedule, tuned_.one_f_one_b}));
}

// A profiled or imported run has no schedule: its measured timeline shows under its job.
void StoreLoadingTest::runWithoutAScheduleShowsUnderItsJob() {
  const QString path = dir_.filePath(QStringLiteral("profiled.db"));
  QFile::remove(path);
  QVERIFY(QFile::copy(tuned_.path, path));
  int64_t timeline = 0;
  {
    auto store = zb::Store::Open(path.toStdString());
    QVERIFY(store.ok());
    auto cluster = store->EnsureCluster({"lab", "", "", "", ""});
    QVERIFY(cluster.ok());
    auto job = store->EnsureJob(*cluster, "llama-profiled");
    QVERIFY(job.ok());
    auto run = store->InsertRun(*job, zb::RunKind::kProfile, "torchrun train.py");
    QVERIFY(run.ok());
    zb::Timeline measured;
    measured.kind = zb::TimelineKind::kMeasured;
    measured.ops = {{0, 0, zb::OpKind::kF, 0, 0, 1000}, {1, 1, zb::OpKind::kF, 0, 1000, 2000}};
    auto id = store->InsertRunTimeline(*run, measured);
    QVERIFY(id.ok());
    timeline = *id;
  }
  MainWindow window;
  QVERIFY(OpenAndWait(window, path));
  QTreeWidgetItem* row = window.browser()->rowFor({ItemKind::kTimeline, timeline});
  QVERIFY(row != nullptr);
  QVERIFY(row->parent() != nullptr && row->parent()->parent() != nullptr);
  QCOMPARE(row->parent()->text(0), QStringLiteral("llama-profiled"));
  QCOMPARE(row->parent()->parent()->text(0), QStringLiteral("lab"));
}

#include "tst_store_loading.moc"
