// SPDX-License-Identifier: Apache-2.0
// Export of the central view to PNG, SVG and PDF, and its errors.
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QXmlStreamReader>

#include "app_test_support.h"
#include "export.h"
#include "main_window.h"
#include "zbkit/gui/palette.h"
#include "zbkit/gui/timeline_view.h"

using zb::gui::ItemKind;
using zb::gui::ItemRef;
using zb::gui::MainWindow;

namespace {

QByteArray ReadAll(const QString& path) {
  QFile file(path);
  return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

bool IsSvg(const QByteArray& bytes) {
  QXmlStreamReader xml(bytes);
  bool saw_svg = false;
  while (!xml.atEnd()) {
    xml.readNext();
    if (xml.isStartElement() && xml.name() == QLatin1String("svg")) saw_svg = true;
  }
  return saw_svg && !xml.hasError();
}

}  // namespace

class ExportTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void exportsTheTimelineInEveryFormat_data();
  void exportsTheTimelineInEveryFormat();
  void exportsAComparison();
  void exportsEveryLaneNotAScreenGrab();
  void reportsErrorsWithoutCrashing();
  void nothingToExportBeforeLoading();
  void formatsByExtension();

 private:
  QTemporaryDir dir_;
  zb::test::TunedStore tuned_;
};

void ExportTest::initTestCase() {
  zb::test::UseTestSettings("tst_export");
  QVERIFY(dir_.isValid());
  auto tuned = zb::test::MakeTunedStore(dir_.filePath(QStringLiteral("tuned.db")));
  QVERIFY(tuned.has_value());
  tuned_ = *tuned;
}

void ExportTest::exportsTheTimelineInEveryFormat_data() {
  QTest::addColumn<QString>("suffix");
  QTest::newRow("png") << "png";
  QTest::newRow("svg") << "svg";
  QTest::newRow("pdf") << "pdf";
  QTest::newRow("upper-case PNG") << "PNG";
}

void ExportTest::exportsTheTimelineInEveryFormat() {
  QFETCH(QString, suffix);
  MainWindow window;
  window.resize(1400, 850);
  window.openStore(tuned_.path, ItemRef{ItemKind::kSchedule, tuned_.zb_h1});
  QVERIFY(window.loader()->waitForIdle(30000));
  QVERIFY(window.centralView() != nullptr);

  const QString path = zb::test::OutputPath(QStringLiteral("export-zb-h1.") + suffix);
  QFile::remove(path);
  const zb::Status status = window.exportView(path);
  QVERIFY2(status.ok(), status.message().c_str());
  const QByteArray bytes = ReadAll(path);
  QVERIFY(!bytes.isEmpty());
  qInfo("%s: %lld bytes", qPrintable(path), static_cast<long long>(bytes.size()));
  if (suffix.toLower() == QLatin1String("png")) {
    QImage image;
    QVERIFY(image.loadFromData(bytes, "PNG"));
    // The whole timeline at a readable lane height, as wide as the view: not a screen grab.
    QCOMPARE(image.width(), std::max(window.centralView()->width(), 800));
    QVERIFY(image.height() >= window.timelineView()->timeline()->num_ranks() * 24);
    // The F colour is in it: the timeline was drawn, not just the frame.
    bool found = false;
    const QRgb forward = zb::gui::ColorOf(zb::OpKind::kF).rgb();
    for (int y = 0; y < image.height() && !found; ++y) {
      const auto* line = reinterpret_cast<const QRgb*>(image.constScanLine(y));
      for (int x = 0; x < image.width() && !found; ++x)
        found = (line[x] | 0xff000000) == forward;
    }
    QVERIFY(found);
  } else if (suffix == QLatin1String("svg")) {
    QVERIFY(IsSvg(bytes));
    QVERIFY(bytes.contains(zb::gui::ColorOf(zb::OpKind::kF).name().toLatin1()));
  } else {
    QVERIFY(bytes.startsWith("%PDF"));
    QVERIFY(bytes.trimmed().endsWith("%%EOF"));
  }
}

void ExportTest::exportsAComparison() {
  MainWindow window;
  window.resize(1400, 850);
  QSignalSpy compared(&window, &MainWindow::comparisonShown);
  window.openStore(tuned_.path, ItemRef{ItemKind::kSchedule, tuned_.zb_h1},
                   ItemRef{ItemKind::kTimeline, tuned_.measured});
  QVERIFY(window.loader()->waitForIdle(30000));
  QCOMPARE(compared.count(), 1);
  for (const QString& suffix :
       {QStringLiteral("png"), QStringLiteral("svg"), QStringLiteral("pdf")}) {
    const QString path =
        zb::test::OutputPath(QStringLiteral("export-predicted-vs-measured.") + suffix);
    const zb::Status status = window.exportView(path);
    QVERIFY2(status.ok(), status.message().c_str());
    QVERIFY(QFileInfo(path).size() > 0);
  }
  QImage image(zb::test::OutputPath(QStringLiteral("export-predicted-vs-measured.png")));
  QCOMPARE(image.width(), std::max(window.centralView()->width(), 800));
  // Both panes whole: every rank lane of both sides at 24 px, whatever the window's height.
  QVERIFY(image.height() >= 2 * 4 * 24);
}

// Big pipelines: in a window too short for its lanes (40 px lanes scroll), the export still
// holds every lane: the bottom rank's ops are in the picture, below what the window shows.
void ExportTest::exportsEveryLaneNotAScreenGrab() {
  MainWindow window;
  window.resize(1200, 420);
  window.openStore(tuned_.path, ItemRef{ItemKind::kSchedule, tuned_.zb_v});
  QVERIFY(window.loader()->waitForIdle(30000));
  window.timelineView()->setLaneHeight(40);
  window.timelineView()->resize(900, 200);
  QVERIFY(window.timelineView()->maxFirstShownRow() > 0);  // the window scrolls
  const QString path = zb::test::OutputPath(QStringLiteral("export-every-lane.png"));
  const zb::Status status = window.exportView(path);
  QVERIFY2(status.ok(), status.message().c_str());
  QImage image(path);
  QVERIFY(!image.isNull());
  // Rows holding op colours: at least every lane's worth (4 rank lanes + 8 stage lanes).
  const QRgb colours[] = {zb::gui::ColorOf(zb::OpKind::kF).rgb(),
                          zb::gui::ColorOf(zb::OpKind::kB).rgb(),
                          zb::gui::ColorOf(zb::OpKind::kW).rgb()};
  int rows_with_ops = 0;
  for (int y = 0; y < image.height(); ++y) {
    const auto* line = reinterpret_cast<const QRgb*>(image.constScanLine(y));
    bool any = false;
    for (int x = 0; x < image.width() && !any; ++x) {
      for (QRgb c : colours)
        any = any || (line[x] | 0xff000000) == c;
    }
    rows_with_ops += any ? 1 : 0;
  }
  QVERIFY2(rows_with_ops >= 4 * 20 + 8 * 10, qPrintable(QString::number(rows_with_ops)));
}

void ExportTest::reportsErrorsWithoutCrashing() {
  MainWindow window;
  window.openStore(tuned_.path);
  QVERIFY(window.loader()->waitForIdle(30000));
  for (const QString& suffix :
       {QStringLiteral("png"), QStringLiteral("svg"), QStringLiteral("pdf")}) {
    const QString path = dir_.filePath(QStringLiteral("no/such/folder/out.") + suffix);
    const zb::Status status = window.exportView(path);
    QVERIFY(!status.ok());
    QCOMPARE(status.code(), zb::ErrorCode::kIo);
    QVERIFY2(QString::fromStdString(status.message()).contains(path), status.message().c_str());
    QVERIFY(!QFile::exists(path));
  }
  const zb::Status unknown = window.exportView(dir_.filePath(QStringLiteral("out.bmp")));
  QCOMPARE(unknown.code(), zb::ErrorCode::kUsage);
  QVERIFY(QString::fromStdString(unknown.message()).contains(QLatin1String(".png, .svg or .pdf")));

  // A read-only folder.
  const QString locked = dir_.filePath(QStringLiteral("locked"));
  QVERIFY(QDir().mkpath(locked));
  QFile::setPermissions(locked, QFileDevice::ReadOwner | QFileDevice::ExeOwner);
  const QString path = locked + QStringLiteral("/out.png");
  const zb::Status denied = window.exportView(path);
  QFile::setPermissions(locked,
                        QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
  if (QFile::exists(path)) QSKIP("running as a user who can write into read-only folders (root)");
  QVERIFY(!denied.ok());
}

void ExportTest::nothingToExportBeforeLoading() {
  MainWindow window;
  const zb::Status status = window.exportView(dir_.filePath(QStringLiteral("empty.png")));
  QVERIFY(!status.ok());
  QVERIFY(!QFile::exists(dir_.filePath(QStringLiteral("empty.png"))));
  // ExportWidget on its own, with a plain widget.
  QLabel label(QStringLiteral("zbview"));
  label.resize(200, 50);
  QVERIFY(zb::gui::ExportWidget(&label, dir_.filePath(QStringLiteral("label.svg"))).ok());
  QVERIFY(IsSvg(ReadAll(dir_.filePath(QStringLiteral("label.svg")))));
}

void ExportTest::formatsByExtension() {
  using zb::gui::ExportFormat;
  using zb::gui::ExportFormatForPath;
  QCOMPARE(ExportFormatForPath(QStringLiteral("a.png")), std::optional(ExportFormat::kPng));
  QCOMPARE(ExportFormatForPath(QStringLiteral("/x/a.b.SVG")), std::optional(ExportFormat::kSvg));
  QCOMPARE(ExportFormatForPath(QStringLiteral("a.pdf")), std::optional(ExportFormat::kPdf));
  QVERIFY(!ExportFormatForPath(QStringLiteral("a.jpg")).has_value());
  QVERIFY(!ExportFormatForPath(QStringLiteral("png")).has_value());
}

QTEST_MAIN(ExportTest)
#include "tst_export.moc"
