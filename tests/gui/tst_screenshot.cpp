// SPDX-License-Identifier: Apache-2.0
// `zbview --screenshot`, run as the user runs it: a subprocess, headless, on real tuned stores.
// The picture must show the F/B/W blocks and the bubble tint; failures exit 1 with one line on
// stderr, usage errors exit 2.
#include <QImage>
#include <QProcessEnvironment>
#include <QSet>
#include <QTemporaryDir>
#include <QTest>

#include "app_test_support.h"
#include "gui_test_support.h"
#include "zbkit/gui/palette.h"

namespace {

using Run = zb::gui::testing::ProgramRun;

Run RunZbview(const QStringList& arguments, bool without_platform = false) {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  if (without_platform) {
    // As on a bare CI machine: no display and no platform chosen.
    env.remove(QStringLiteral("QT_QPA_PLATFORM"));
    env.remove(QStringLiteral("DISPLAY"));
    env.remove(QStringLiteral("WAYLAND_DISPLAY"));
  }
  return zb::gui::testing::RunProgram(QStringLiteral(ZBKIT_ZBVIEW_BINARY), arguments, env);
}

QSet<QRgb> Colours(const QImage& image) {
  QSet<QRgb> colours;
  const QImage rgb = image.convertToFormat(QImage::Format_RGB32);
  for (int y = 0; y < rgb.height(); ++y) {
    const auto* line = reinterpret_cast<const QRgb*>(rgb.constScanLine(y));
    for (int x = 0; x < rgb.width(); ++x)
      colours.insert(line[x] | 0xff000000);
  }
  return colours;
}

QRgb Rgb(const QColor& colour) {
  return colour.rgb() | 0xff000000;
}

}  // namespace

class ScreenshotTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void drawsTheMostRecentScheduleWithBubbles();
  void drawsTheRequestedScheduleAtTheRequestedSize();
  void comparesTwoSchedules();
  void worksWithoutAnyPlatformSet();
  void failuresExitOneWithOneLine_data();
  void failuresExitOneWithOneLine();
  void usageErrorsExitTwo_data();
  void usageErrorsExitTwo();

 private:
  QTemporaryDir dir_;
  zb::test::TunedStore tuned_;
};

void ScreenshotTest::initTestCase() {
  zb::test::UseTestSettings("tst_screenshot");
  QVERIFY(dir_.isValid());
  QVERIFY(QFile::exists(QStringLiteral(ZBKIT_ZBVIEW_BINARY)));
  auto tuned = zb::test::MakeTunedStore(dir_.filePath(QStringLiteral("tuned.db")));
  QVERIFY(tuned.has_value());
  tuned_ = *tuned;
}

void ScreenshotTest::drawsTheMostRecentScheduleWithBubbles() {
  const QString out = zb::test::OutputPath(QStringLiteral("screenshot-most-recent.png"));
  QFile::remove(out);
  const Run run = RunZbview({QStringLiteral("--screenshot"), out, tuned_.path});
  QVERIFY2(run.exit_code == 0, qPrintable(run.err));
  // The most recent item is ZB-V, tuned last.
  QVERIFY2(run.out.contains(QStringLiteral("schedule %1: zb-v").arg(tuned_.zb_v)),
           qPrintable(run.out));
  QImage image(out);
  QVERIFY(!image.isNull());
  QCOMPARE(image.size(), QSize(1600, 900));
  const QSet<QRgb> colours = Colours(image);
  for (zb::OpKind kind : {zb::OpKind::kF, zb::OpKind::kB, zb::OpKind::kW}) {
    QVERIFY2(colours.contains(Rgb(zb::gui::ColorOf(kind))), zb::OpKindName(kind));
  }
  QVERIFY2(colours.contains(Rgb(zb::gui::BubbleColor())), "the bubbles are tinted");
  QVERIFY2(colours.contains(Rgb(zb::gui::CapColor())), "the memory cap is drawn");

  // Same picture as asking for that schedule by id.
  const QString explicit_out = zb::test::OutputPath(QStringLiteral("screenshot-zb-v.png"));
  const Run again = RunZbview({QStringLiteral("--screenshot"), explicit_out, tuned_.path,
                               QStringLiteral("--schedule"), QString::number(tuned_.zb_v)});
  QVERIFY2(again.exit_code == 0, qPrintable(again.err));
  QCOMPARE(QImage(explicit_out), image);
}

void ScreenshotTest::drawsTheRequestedScheduleAtTheRequestedSize() {
  const QString out = zb::test::OutputPath(QStringLiteral("screenshot-1f1b-1200x700.png"));
  const Run run = RunZbview({QStringLiteral("--screenshot"), out, QStringLiteral("--schedule"),
                             QString::number(tuned_.one_f_one_b), QStringLiteral("--size"),
                             QStringLiteral("1200x700"), tuned_.path});
  QVERIFY2(run.exit_code == 0, qPrintable(run.err));
  QVERIFY(run.out.contains(QLatin1String("1f1b")));
  const QImage image(out);
  QCOMPARE(image.size(), QSize(1200, 700));
  const QSet<QRgb> colours = Colours(image);
  QVERIFY(colours.contains(Rgb(zb::gui::ColorOf(zb::OpKind::kF))));
  QVERIFY(colours.contains(Rgb(zb::gui::ColorOf(zb::OpKind::kBW))));  // 1F1B fuses B and W
  QVERIFY(colours.contains(Rgb(zb::gui::BubbleColor())));

  // A measured run, by timeline id.
  const QString measured = zb::test::OutputPath(QStringLiteral("screenshot-measured-run.png"));
  const Run timeline =
      RunZbview({QStringLiteral("--screenshot"), measured, tuned_.path,
                 QStringLiteral("--schedule"), QStringLiteral("t%1").arg(tuned_.measured)});
  QVERIFY2(timeline.exit_code == 0, qPrintable(timeline.err));
  QVERIFY(timeline.out.contains(QLatin1String("measured")));
}

void ScreenshotTest::comparesTwoSchedules() {
  const QString out = zb::test::OutputPath(QStringLiteral("screenshot-zb-v-vs-1f1b.png"));
  const Run run = RunZbview({QStringLiteral("--screenshot"), out, tuned_.path,
                             QStringLiteral("--schedule"), QString::number(tuned_.zb_v),
                             QStringLiteral("--compare"), QString::number(tuned_.one_f_one_b)});
  QVERIFY2(run.exit_code == 0, qPrintable(run.err));
  QVERIFY(run.out.contains(QLatin1String("vs")));
  const QImage image(out);
  QCOMPARE(image.size(), QSize(1600, 900));
  const QSet<QRgb> colours = Colours(image);
  QVERIFY(colours.contains(Rgb(zb::gui::ColorOf(zb::OpKind::kW))));   // ZB-V
  QVERIFY(colours.contains(Rgb(zb::gui::ColorOf(zb::OpKind::kBW))));  // 1F1B
  QVERIFY(colours.contains(Rgb(zb::gui::BubbleColor())));

  // Without --schedule, the comparison starts from the most recent item.
  const Run recent =
      RunZbview({QStringLiteral("--screenshot"),
                 zb::test::OutputPath(QStringLiteral("screenshot-recent-vs-h1.png")), tuned_.path,
                 QStringLiteral("--compare"), QString::number(tuned_.zb_h1)});
  QVERIFY2(recent.exit_code == 0, qPrintable(recent.err));
  QVERIFY(recent.out.contains(QStringLiteral("schedule %1: zb-v").arg(tuned_.zb_v)));
}

void ScreenshotTest::worksWithoutAnyPlatformSet() {
  const QString out = zb::test::OutputPath(QStringLiteral("screenshot-no-platform.png"));
  const Run run = RunZbview({QStringLiteral("--screenshot"), out, tuned_.path}, true);
  QVERIFY2(run.exit_code == 0, qPrintable(run.err));
  QCOMPARE(QImage(out).size(), QSize(1600, 900));
  QVERIFY2(run.err.trimmed().isEmpty(), qPrintable(run.err));
  // The window without a display says why instead of aborting in the xcb plugin.
  const Run window = RunZbview({tuned_.path}, true);
  QCOMPARE(window.exit_code, 1);
  QVERIFY(window.err.startsWith(QLatin1String("zbview: no display")));
}

void ScreenshotTest::failuresExitOneWithOneLine_data() {
  QTest::addColumn<QString>("case_name");
  QTest::addColumn<QString>("expected");
  QTest::newRow("corrupt") << "corrupt"
                           << "file is not a database";
  QTest::newRow("zero bytes") << "zero"
                              << "the file is empty";
  QTest::newRow("missing") << "missing"
                           << "no such file";
  QTest::newRow("empty store") << "empty"
                               << "holds no schedules or timelines";
  QTest::newRow("unknown schedule") << "unknown"
                                    << "no schedule 999 in the store";
  QTest::newRow("unknown compare") << "unknown compare"
                                   << "no timeline 999 in the store";
  QTest::newRow("unwritable output") << "unwritable"
                                     << "cannot write";
}

void ScreenshotTest::failuresExitOneWithOneLine() {
  QFETCH(QString, case_name);
  QFETCH(QString, expected);
  QString store = tuned_.path;
  QString out = dir_.filePath(QStringLiteral("out.png"));
  QStringList extra;
  if (case_name == QLatin1String("corrupt")) {
    store = dir_.filePath(QStringLiteral("corrupt.db"));
    QVERIFY(zb::test::WriteFile(store, QByteArray("SQLite format 2\0garbage", 23).repeated(100)));
  } else if (case_name == QLatin1String("zero")) {
    store = dir_.filePath(QStringLiteral("zero.db"));
    QVERIFY(zb::test::WriteFile(store, QByteArray()));
  } else if (case_name == QLatin1String("missing")) {
    store = dir_.filePath(QStringLiteral("missing.db"));
  } else if (case_name == QLatin1String("empty")) {
    store = dir_.filePath(QStringLiteral("empty.db"));
    auto created = zb::Store::Open(store.toStdString());
    QVERIFY(created.ok());
  } else if (case_name == QLatin1String("unknown")) {
    extra = {QStringLiteral("--schedule"), QStringLiteral("999")};
  } else if (case_name == QLatin1String("unknown compare")) {
    extra = {QStringLiteral("--compare"), QStringLiteral("t999")};
  } else if (case_name == QLatin1String("unwritable")) {
    out = dir_.filePath(QStringLiteral("no/such/folder/out.png"));
  }
  QFile::remove(out);
  const Run run = RunZbview(QStringList{QStringLiteral("--screenshot"), out, store} + extra);
  QCOMPARE(run.exit_code, 1);
  QVERIFY2(run.err.startsWith(QLatin1String("zbview: ")), qPrintable(run.err));
  QVERIFY2(run.err.endsWith(u'\n') && run.err.count(u'\n') == 1, qPrintable(run.err));
  QVERIFY2(run.err.contains(expected), qPrintable(run.err));
  QVERIFY(!QFile::exists(out));
}

void ScreenshotTest::usageErrorsExitTwo_data() {
  QTest::addColumn<QStringList>("arguments");
  const QString store = QStringLiteral("store.db");
  QTest::newRow("no store") << QStringList{QStringLiteral("--screenshot"), QStringLiteral("o.png")};
  QTest::newRow("unknown option") << QStringList{QStringLiteral("--frobnicate"), store};
  QTest::newRow("bad size") << QStringList{QStringLiteral("--screenshot"), QStringLiteral("o.png"),
                                           store, QStringLiteral("--size"), QStringLiteral("big")};
  QTest::newRow("tiny size") << QStringList{QStringLiteral("--screenshot"), QStringLiteral("o.png"),
                                            store, QStringLiteral("--size"),
                                            QStringLiteral("10x10")};
  QTest::newRow("bad id") << QStringList{QStringLiteral("--screenshot"), QStringLiteral("o.png"),
                                         store, QStringLiteral("--schedule"),
                                         QStringLiteral("abc")};
  QTest::newRow("two stores") << QStringList{
      QStringLiteral("--screenshot"), QStringLiteral("o.png"), store, QStringLiteral("other.db")};
  QTest::newRow("bad format") << QStringList{QStringLiteral("--screenshot"),
                                             QStringLiteral("o.gif"), store};
  QTest::newRow("missing value") << QStringList{store, QStringLiteral("--screenshot")};
  QTest::newRow("size without screenshot")
      << QStringList{store, QStringLiteral("--size"), QStringLiteral("800x600")};
}

void ScreenshotTest::usageErrorsExitTwo() {
  QFETCH(QStringList, arguments);
  const Run run = RunZbview(arguments);
  QCOMPARE(run.exit_code, 2);
  QVERIFY2(run.err.startsWith(QLatin1String("zbview: ")), qPrintable(run.err));
  QCOMPARE(run.err.count(u'\n'), 1);
  // --help is not an error.
  const Run help = RunZbview({QStringLiteral("--help")});
  QCOMPARE(help.exit_code, 0);
  QVERIFY(help.out.contains(QLatin1String("--screenshot")));
}

QTEST_MAIN(ScreenshotTest)
#include "tst_screenshot.moc"
