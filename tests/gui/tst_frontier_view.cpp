// SPDX-License-Identifier: Apache-2.0
// Memory-vs-bubble frontiers in zbview: the plot draws both series in their palette colours with
// a gap where a method fits nothing, hovering says a point's figures, the browser lists a recorded
// frontier under its job and opens it, a missing frontier id is one clear message that keeps the
// open store, exports carry the plot, and `zbview --frontier ID --store DB --screenshot` draws it
// headless.
#include <QCheckBox>
#include <QImage>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeWidget>
#include <cmath>
#include <optional>

#include "app_test_support.h"
#include "gui_test_support.h"
#include "loader.h"
#include "main_window.h"
#include "store_browser.h"
#include "summary_panel.h"
#include "zbkit/gui/frontier_view.h"
#include "zbkit/gui/palette.h"

using zb::gui::FrontierView;
using zb::gui::ItemKind;
using zb::gui::ItemRef;
using zb::gui::MainWindow;

namespace {

// What `zb tune --frontier 1x:3x:0.5x` records, with figures shaped like the ZB paper's Figure 7:
// both bubble rates fall as the cap grows, the search stays below the heuristic, and nothing of
// the heuristic fits the smallest cap. Two points name stored schedules.
zb::Frontier SampleFrontier(int64_t profile_id, int64_t search_schedule,
                            int64_t heuristic_schedule) {
  zb::Frontier frontier;
  frontier.cost_profile_id = profile_id;
  frontier.microbatches = 8;
  frontier.objective = "span";
  frontier.placement = "any";
  for (int i = 0; i <= 4; ++i) {
    const double factor = 1.0 + 0.5 * i;
    zb::FrontierPoint search;
    search.method = "search";
    search.cap_factor = factor;
    search.cap = factor * 400;
    search.fits = true;
    search.makespan = zb::MsToNs(300 - 15 * i);
    search.span = search.makespan - zb::MsToNs(20);
    search.paper_bubble_rate = 0.12 / (1 + 1.5 * i);
    search.bubble_rate = search.paper_bubble_rate + 0.05;
    if (i == 2) search.schedule_id = search_schedule;
    frontier.points.push_back(search);

    zb::FrontierPoint heuristic = search;
    heuristic.method = "heuristic";
    heuristic.schedule_id.reset();
    if (i == 0) {
      heuristic.fits = false;
      heuristic.makespan = heuristic.span = -1;
      heuristic.bubble_rate = heuristic.paper_bubble_rate = -1;
    } else {
      heuristic.makespan += zb::MsToNs(12);
      heuristic.span += zb::MsToNs(12);
      heuristic.paper_bubble_rate += 0.03;
      heuristic.bubble_rate += 0.03;
      if (i == 4) heuristic.schedule_id = heuristic_schedule;
    }
    frontier.points.push_back(heuristic);
  }
  return frontier;
}

struct FrontierStore {
  zb::test::TunedStore tuned;
  int64_t profile = 0;
  int64_t frontier = 0;
};

std::optional<FrontierStore> MakeFrontierStore(const QString& path) {
  auto tuned = zb::test::MakeTunedStore(path);
  if (!tuned) return std::nullopt;
  auto store = zb::Store::Open(path.toStdString());
  if (!store.ok()) return std::nullopt;
  auto cluster = store->EnsureCluster({"test-cluster", "", "", "", ""});
  if (!cluster.ok()) return std::nullopt;
  auto job = store->EnsureJob(*cluster, "gpt-4stage");
  if (!job.ok()) return std::nullopt;
  FrontierStore out;
  out.tuned = *tuned;
  auto profile = store->InsertCostProfile(*job, "measured", zb::test::FourStageCosts());
  if (!profile.ok()) return std::nullopt;
  out.profile = *profile;
  QThread::msleep(3);  // created_at has millisecond resolution: the frontier is the latest item
  auto frontier = store->RecordFrontier(SampleFrontier(*profile, tuned->zb_v, tuned->zb_h1));
  if (!frontier.ok()) {
    qWarning("%s", frontier.status().message().c_str());
    return std::nullopt;
  }
  out.frontier = *frontier;
  return out;
}

QRgb Rgb(const QColor& colour) {
  return colour.rgb() | 0xff000000;
}

int CountColour(const QImage& image, const QColor& colour, QRect area = {}) {
  const QImage rgb = image.convertToFormat(QImage::Format_RGB32);
  const QRect rect = area.isNull() ? rgb.rect() : area.intersected(rgb.rect());
  const QRgb wanted = Rgb(colour);
  int count = 0;
  for (int y = rect.top(); y <= rect.bottom(); ++y) {
    const auto* line = reinterpret_cast<const QRgb*>(rgb.constScanLine(y));
    for (int x = rect.left(); x <= rect.right(); ++x)
      count += (line[x] | 0xff000000) == wanted ? 1 : 0;
  }
  return count;
}

QColor SearchColour() {
  return zb::gui::FrontierSeriesColor("search", 0);
}
QColor HeuristicColour() {
  return zb::gui::FrontierSeriesColor("heuristic", 1);
}

using Run = zb::gui::testing::ProgramRun;

Run RunZbview(const QStringList& arguments) {
  return zb::gui::testing::RunProgram(QStringLiteral(ZBKIT_ZBVIEW_BINARY), arguments);
}

}  // namespace

class FrontierViewTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void plotDrawsBothSeriesWithAGapWhereNothingFits();
  void makespanToggleAddsTheOtherConvention();
  void hoverSaysThePointsFigures();
  void doubleClickOnAPointAsksForItsSchedule();
  void browserListsTheFrontierUnderItsJobAndOpensIt();
  void missingFrontierIsOneMessageAndKeepsTheStore();
  void frontiersAreNotCompared();
  void exportCarriesThePlot();
  void screenshotFromTheCommandLine();
  void commandLineErrors_data();
  void commandLineErrors();
  void parsesFrontierSpecs();

 private:
  static bool OpenAndWait(MainWindow& window, const QString& path,
                          std::optional<ItemRef> show = std::nullopt);
  std::shared_ptr<const zb::Frontier> LoadSample() const;

  QTemporaryDir dir_;
  FrontierStore store_;
};

void FrontierViewTest::initTestCase() {
  zb::test::UseTestSettings("tst_frontier_view");
  QVERIFY(dir_.isValid());
  auto store = MakeFrontierStore(dir_.filePath(QStringLiteral("frontier.db")));
  QVERIFY(store.has_value());
  store_ = *store;
  // The two series must be told apart by a pixel test and by a person.
  QVERIFY(Rgb(SearchColour()) != Rgb(HeuristicColour()));
}

bool FrontierViewTest::OpenAndWait(MainWindow& window, const QString& path,
                                   std::optional<ItemRef> show) {
  window.openStore(path, show);
  return window.loader()->waitForIdle(30000) && window.loader()->waitForIdle(30000);
}

std::shared_ptr<const zb::Frontier> FrontierViewTest::LoadSample() const {
  auto store = zb::Store::Open(store_.tuned.path.toStdString(), zb::Store::Mode::kReadOnly);
  if (!store.ok()) return nullptr;
  auto frontier = store->LoadFrontier(store_.frontier);
  if (!frontier.ok()) return nullptr;
  return std::make_shared<const zb::Frontier>(std::move(frontier).value());
}

void FrontierViewTest::plotDrawsBothSeriesWithAGapWhereNothingFits() {
  const auto frontier = LoadSample();
  QVERIFY(frontier != nullptr);
  FrontierView view;
  view.resize(900, 520);
  view.setFrontier(frontier);
  QCOMPARE(view.methods(), (std::vector<std::string>{"search", "heuristic"}));
  const QImage image = view.grab().toImage();
  QVERIFY(image.save(zb::test::OutputPath(QStringLiteral("frontier-view.png"))));
  const int search = CountColour(image, SearchColour());
  const int heuristic = CountColour(image, HeuristicColour());
  qInfo("search pixels %d, heuristic pixels %d", search, heuristic);
  QVERIFY2(search > 100, "the search series is drawn");
  QVERIFY2(heuristic > 100, "the heuristic series is drawn");

  // Every point that fits has its marker, in its series' colour, where the view says it is.
  for (size_t i = 0; i < frontier->points.size(); ++i) {
    const zb::FrontierPoint& point = frontier->points[i];
    const std::optional<QPointF> at = view.pointPosition(i);
    QCOMPARE(at.has_value(), point.fits);
    if (!at) continue;
    QVERIFY(view.plotRect().contains(at->toPoint()));
    const QColor expected = point.method == "search" ? SearchColour() : HeuristicColour();
    QCOMPARE(image.pixel(at->toPoint()) | 0xff000000, Rgb(expected));
  }
  // A lower bubble is drawn lower: the search's 3x point under its 1x point.
  QVERIFY(view.pointPosition(8)->y() > view.pointPosition(0)->y());

  // The heuristic fits nothing at 1x: no heuristic line between 1x and 1.5x (a gap), while the
  // search's line crosses that stretch.
  const double x0 = view.pointPosition(0)->x();
  const double x1 = view.pointPosition(2)->x();
  const QRect plot = view.plotRect();
  const QRect between(static_cast<int>(x0 + 8), plot.top(), static_cast<int>(x1 - x0 - 16),
                      plot.height() - 16);
  QCOMPARE(CountColour(image, HeuristicColour(), between), 0);
  QVERIFY(CountColour(image, SearchColour(), between) > 0);
  // ...and the 1x cap has the heuristic's does-not-fit cross at the bottom.
  const QRect cross(static_cast<int>(x0) - 5, plot.bottom() - 12, 11, 12);
  QVERIFY(CountColour(image, HeuristicColour(), cross) > 0);

  // An empty view says so instead of drawing axes.
  view.setFrontier(nullptr);
  const QImage empty = view.grab().toImage();
  QCOMPARE(CountColour(empty, SearchColour()), 0);
}

void FrontierViewTest::makespanToggleAddsTheOtherConvention() {
  const auto frontier = LoadSample();
  QVERIFY(frontier != nullptr);
  FrontierView view;
  view.resize(900, 520);
  view.setFrontier(frontier);
  QVERIFY(!view.showMakespanBubble());
  const int before = CountColour(view.grab().toImage(), SearchColour());
  view.setShowMakespanBubble(true);
  const QImage both = view.grab().toImage();
  QVERIFY(both.save(zb::test::OutputPath(QStringLiteral("frontier-view-both-conventions.png"))));
  QVERIFY2(CountColour(both, SearchColour()) > before, "the dashed series adds pixels");
  // The makespan convention counts the warm-up: its points lie above the paper's.
  QVERIFY(view.pointPosition(0, true)->y() < view.pointPosition(0)->y());
  // And the tooltip is found at either marker.
  QVERIFY(view.tooltipText(view.pointPosition(0, true)->toPoint()).startsWith(u"search at 1x"));
}

void FrontierViewTest::hoverSaysThePointsFigures() {
  const auto frontier = LoadSample();
  QVERIFY(frontier != nullptr);
  FrontierView view;
  view.resize(900, 520);
  view.setFrontier(frontier);
  // Point 4: the search at 2x, with its stored schedule.
  const zb::FrontierPoint& point = frontier->points[4];
  const QPoint at = view.pointPosition(4)->toPoint();
  const QString text = view.tooltipText(at + QPoint(2, -1));
  qInfo().noquote() << text;
  QVERIFY2(text.startsWith(QLatin1String("search at 2x: cap 800 per rank")), qPrintable(text));
  QVERIFY2(text.contains(
               QStringLiteral("paper bubble %1%").arg(point.paper_bubble_rate * 100, 0, 'f', 2)),
           qPrintable(text));
  QVERIFY(text.contains(QStringLiteral("span %1 ms").arg(zb::gui::FormatMs(point.span))));
  QVERIFY(text.contains(QStringLiteral("makespan %1 ms").arg(zb::gui::FormatMs(point.makespan))));
  QVERIFY(text.contains(QStringLiteral("schedule %1").arg(store_.tuned.zb_v)));
  // The heuristic's missing 1x point, at its cross.
  const QPoint cross(static_cast<int>(view.pointPosition(0)->x()), view.plotRect().bottom() - 6);
  const QString unfit = view.tooltipText(cross);
  QVERIFY2(unfit.startsWith(QLatin1String("heuristic at 1x")), qPrintable(unfit));
  QVERIFY(unfit.contains(QLatin1String("no schedule of this method fits this cap")));
  // Nowhere near a point: nothing.
  QVERIFY(view.tooltipText(view.plotRect().topLeft() + QPoint(3, 3)).isEmpty());
  // Hovering rings the point (drawn, not only said).
  const QImage plain = view.grab().toImage();
  zb::gui::testing::SendHover(&view, at);
  QVERIFY(view.grab().toImage() != plain);
}

void FrontierViewTest::doubleClickOnAPointAsksForItsSchedule() {
  const auto frontier = LoadSample();
  QVERIFY(frontier != nullptr);
  FrontierView view;
  view.resize(900, 520);
  view.setFrontier(frontier);
  QSignalSpy activated(&view, &FrontierView::scheduleActivated);
  QTest::mouseDClick(&view, Qt::LeftButton, Qt::NoModifier, view.pointPosition(2)->toPoint());
  QCOMPARE(activated.count(), 0);  // the search at 1.5x has no stored schedule
  QTest::mouseDClick(&view, Qt::LeftButton, Qt::NoModifier, view.pointPosition(9)->toPoint());
  QCOMPARE(activated.count(), 1);
  QCOMPARE(activated.front().front().toLongLong(), store_.tuned.zb_h1);
}

void FrontierViewTest::browserListsTheFrontierUnderItsJobAndOpensIt() {
  MainWindow window;
  QVERIFY(OpenAndWait(window, store_.tuned.path));
  zb::gui::StoreBrowser* browser = window.browser();
  QCOMPARE(browser->rowCount(ItemKind::kFrontier), 1);
  QTreeWidgetItem* row = browser->rowFor({ItemKind::kFrontier, store_.frontier});
  QVERIFY(row != nullptr);
  QVERIFY2(row->text(0).contains(QLatin1String("frontier 1x-3x by span")),
           qPrintable(row->text(0)));
  QCOMPARE(row->text(zb::gui::StoreBrowser::kMicrobatchesColumn), QStringLiteral("8"));
  QCOMPARE(row->text(zb::gui::StoreBrowser::kOpsColumn), QStringLiteral("10"));
  QVERIFY(row->parent() != nullptr && row->parent()->parent() != nullptr);
  QCOMPARE(row->parent()->text(0), QStringLiteral("frontiers"));
  QCOMPARE(row->parent()->parent()->text(0), QStringLiteral("gpt-4stage"));
  QCOMPARE(row->parent()->parent()->parent()->text(0), QStringLiteral("test-cluster"));

  // Recorded last, it is what the window opens on.
  QVERIFY(window.shownItem() != nullptr);
  QVERIFY((window.shownItem()->ref == ItemRef{ItemKind::kFrontier, store_.frontier}));
  QVERIFY(window.isShowingFrontier());
  QVERIFY(window.frontierView()->frontier() != nullptr);
  QCOMPARE(window.frontierView()->frontier()->points.size(), size_t{10});
  QVERIFY2(window.summary()->frontierText().contains(QLatin1String("search: fits 5 of 5 caps")),
           qPrintable(window.summary()->frontierText()));
  QVERIFY(window.summary()->frontierText().contains(QLatin1String("heuristic: fits 4 of 5 caps")));
  QCOMPARE(window.summary()->costTable()->rowCount(), 4);  // the profile it was computed from
  QVERIFY(window.summary()->titleText().startsWith(
      QStringLiteral("frontier %1: search vs heuristic, m=8, by span").arg(store_.frontier)));

  // The window's toggle reaches the plot.
  window.makespanBubbleToggle()->setChecked(true);
  QVERIFY(window.frontierView()->showMakespanBubble());

  // Another item and back, through the browser.
  QSignalSpy shown(&window, &MainWindow::itemShown);
  browser->selectRefs({{ItemKind::kSchedule, store_.tuned.one_f_one_b}});
  QVERIFY(shown.wait(30000));
  QVERIFY(!window.isShowingFrontier());
  browser->selectRefs({{ItemKind::kFrontier, store_.frontier}});
  QVERIFY(shown.wait(30000));
  QVERIFY(window.isShowingFrontier());

  // A point with a stored schedule opens it.
  emit window.frontierView()->scheduleActivated(store_.tuned.zb_v);
  QVERIFY(shown.wait(30000));
  QVERIFY((window.shownItem()->ref == ItemRef{ItemKind::kSchedule, store_.tuned.zb_v}));
}

void FrontierViewTest::missingFrontierIsOneMessageAndKeepsTheStore() {
  // Asked for on opening: said, and the most recent item is shown instead.
  {
    MainWindow window;
    QVERIFY(OpenAndWait(window, store_.tuned.path, ItemRef{ItemKind::kFrontier, 999}));
    QVERIFY(window.isBannerShown());
    QVERIFY2(window.bannerText().contains(QLatin1String("no frontier 999 in the store")),
             qPrintable(window.bannerText()));
    QVERIFY(window.bannerText().contains(store_.tuned.path));
    QVERIFY(window.shownItem() != nullptr);
  }
  // Asked for with the store open (a stale id): the store, its listing and what is shown stay.
  MainWindow window;
  QVERIFY(OpenAndWait(window, store_.tuned.path));
  const auto shown = window.shownItem();
  QVERIFY(shown != nullptr);
  QSignalSpy failed(window.loader(), &zb::gui::StoreLoader::failed);
  window.showItem({ItemKind::kFrontier, 999});
  QVERIFY(window.loader()->waitForIdle(30000));
  QCOMPARE(failed.count(), 1);
  const QString banner = window.bannerText();
  QVERIFY2(banner.contains(QLatin1String("no frontier 999 in the store")), qPrintable(banner));
  QVERIFY(!banner.contains(u'\n'));
  QCOMPARE(window.storePath(), store_.tuned.path);
  QCOMPARE(window.browser()->rowCount(ItemKind::kFrontier), 1);
  QVERIFY(window.shownItem() == shown);
  QVERIFY(window.isShowingFrontier());
}

void FrontierViewTest::frontiersAreNotCompared() {
  MainWindow window;
  QVERIFY(OpenAndWait(window, store_.tuned.path));
  window.browser()->selectRefs(
      {{ItemKind::kFrontier, store_.frontier}, {ItemKind::kSchedule, store_.tuned.zb_v}});
  const auto buttons = window.browser()->findChildren<QPushButton*>();
  QVERIFY(!buttons.isEmpty());
  QVERIFY(!buttons.front()->isEnabled());
  window.compareItems({ItemKind::kFrontier, store_.frontier},
                      {ItemKind::kSchedule, store_.tuned.zb_v});
  QVERIFY(window.isBannerShown());
  QVERIFY(window.bannerText().contains(QLatin1String("not frontiers")));
  QVERIFY(!window.isComparing());
}

void FrontierViewTest::exportCarriesThePlot() {
  MainWindow window;
  window.resize(1400, 850);
  QVERIFY(OpenAndWait(window, store_.tuned.path));
  QVERIFY(window.isShowingFrontier());
  const QString png = zb::test::OutputPath(QStringLiteral("frontier-export.png"));
  const QString svg = zb::test::OutputPath(QStringLiteral("frontier-export.svg"));
  QFile::remove(png);
  QFile::remove(svg);
  const zb::Status png_status = window.exportView(png);
  QVERIFY2(png_status.ok(), png_status.message().c_str());
  const QImage image(png);
  QVERIFY(!image.isNull());
  QVERIFY(CountColour(image, SearchColour()) > 100);
  QVERIFY(CountColour(image, HeuristicColour()) > 100);
  const zb::Status svg_status = window.exportView(svg);
  QVERIFY2(svg_status.ok(), svg_status.message().c_str());
  QFile file(svg);
  QVERIFY(file.open(QIODevice::ReadOnly));
  const QByteArray text = file.readAll();
  QVERIFY(text.contains("<svg"));
  QVERIFY(text.contains(SearchColour().name().toLatin1()));
  QVERIFY(text.contains(HeuristicColour().name().toLatin1()));
}

void FrontierViewTest::screenshotFromTheCommandLine() {
  const QString out = zb::test::OutputPath(QStringLiteral("screenshot-frontier.png"));
  QFile::remove(out);
  const Run run = RunZbview({QStringLiteral("--frontier"), QString::number(store_.frontier),
                             QStringLiteral("--store"), store_.tuned.path,
                             QStringLiteral("--screenshot"), out});
  QVERIFY2(run.exit_code == 0, qPrintable(run.err));
  QVERIFY2(
      run.out.contains(QStringLiteral("frontier %1: search vs heuristic").arg(store_.frontier)),
      qPrintable(run.out));
  const QImage image(out);
  QCOMPARE(image.size(), QSize(1600, 900));
  QVERIFY(CountColour(image, SearchColour()) > 100);
  QVERIFY(CountColour(image, HeuristicColour()) > 100);

  // The most recent item of this store is the frontier; the positional store works as before.
  const QString recent = zb::test::OutputPath(QStringLiteral("screenshot-frontier-recent.png"));
  const Run again = RunZbview({QStringLiteral("--screenshot"), recent, store_.tuned.path});
  QVERIFY2(again.exit_code == 0, qPrintable(again.err));
  QVERIFY(again.out.contains(QStringLiteral("frontier %1").arg(store_.frontier)));
  // ...but a comparison still starts from the most recent schedule or run.
  const Run compare = RunZbview(
      {QStringLiteral("--screenshot"),
       zb::test::OutputPath(QStringLiteral("screenshot-frontier-store-compare.png")),
       store_.tuned.path, QStringLiteral("--compare"), QString::number(store_.tuned.one_f_one_b)});
  QVERIFY2(compare.exit_code == 0, qPrintable(compare.err));
  QVERIFY(compare.out.contains(QStringLiteral("schedule %1: zb-v").arg(store_.tuned.zb_v)));
}

void FrontierViewTest::commandLineErrors_data() {
  QTest::addColumn<QStringList>("arguments");
  QTest::addColumn<int>("exit_code");
  QTest::addColumn<QString>("expected");
  const QString out = QStringLiteral("unused.png");
  QTest::newRow("missing frontier")
      << QStringList{QStringLiteral("--frontier"),   QStringLiteral("999"),
                     QStringLiteral("--store"),      QStringLiteral("STORE"),
                     QStringLiteral("--screenshot"), out}
      << 1 << "no frontier 999 in the store";
  QTest::newRow("not an id") << QStringList{QStringLiteral("--frontier"), QStringLiteral("x"),
                                            QStringLiteral("STORE"), QStringLiteral("--screenshot"),
                                            out}
                             << 2 << "is not a frontier id";
  QTest::newRow("with --schedule")
      << QStringList{QStringLiteral("--frontier"), QStringLiteral("1"),
                     QStringLiteral("--schedule"), QStringLiteral("2"), QStringLiteral("STORE")}
      << 2 << "give one";
  QTest::newRow("compared") << QStringList{QStringLiteral("--frontier"), QStringLiteral("1"),
                                           QStringLiteral("--compare"), QStringLiteral("2"),
                                           QStringLiteral("STORE")}
                            << 2 << "a frontier cannot be compared";
  QTest::newRow("two stores") << QStringList{QStringLiteral("--store"), QStringLiteral("STORE"),
                                             QStringLiteral("other.db"),
                                             QStringLiteral("--screenshot"), out}
                              << 2 << "two stores";
  QTest::newRow("no store") << QStringList{QStringLiteral("--frontier"), QStringLiteral("1")} << 2
                            << "need a STORE";
}

void FrontierViewTest::commandLineErrors() {
  QFETCH(QStringList, arguments);
  QFETCH(int, exit_code);
  QFETCH(QString, expected);
  arguments.replaceInStrings(QStringLiteral("STORE"), store_.tuned.path);
  arguments.replaceInStrings(QStringLiteral("unused.png"), dir_.filePath(QStringLiteral("o.png")));
  const Run run = RunZbview(arguments);
  QCOMPARE(run.exit_code, exit_code);
  QVERIFY2(run.err.startsWith(QLatin1String("zbview: ")), qPrintable(run.err));
  QCOMPARE(run.err.count(u'\n'), 1);
  QVERIFY2(run.err.contains(expected), qPrintable(run.err));
  QVERIFY(!QFile::exists(dir_.filePath(QStringLiteral("o.png"))));
}

void FrontierViewTest::parsesFrontierSpecs() {
  using zb::gui::ParseItemSpec;
  QVERIFY((ParseItemSpec(QStringLiteral("f4")) == ItemRef{ItemKind::kFrontier, 4}));
  QVERIFY((ParseItemSpec(QStringLiteral("frontier:12")) == ItemRef{ItemKind::kFrontier, 12}));
  QVERIFY(!ParseItemSpec(QStringLiteral("f")).has_value());
  QVERIFY(!ParseItemSpec(QStringLiteral("f-1")).has_value());
  QCOMPARE(zb::gui::DescribeRef({ItemKind::kFrontier, 4}), QStringLiteral("frontier 4"));
}

QTEST_MAIN(FrontierViewTest)
#include "tst_frontier_view.moc"
