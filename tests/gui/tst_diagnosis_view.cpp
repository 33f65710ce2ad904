// SPDX-License-Identifier: Apache-2.0
// zbview's diagnosis view (DiagnosisView): on records of two ranks whose orders cross (rank 0
// 1F1B, rank 1 GPipe), one cell per op of each rank's program at one width, the op each rank is
// in outlined (the culprit's in red), each wait an arrow from the waiting op to the peer's op
// that would send it, and the culprit's last ops before it stopped; the diagnosis zb replay kept
// at the stall is shown over a fresh one; `zbview --diagnosis` draws it headless, and bad input
// is one line.
#include <unistd.h>

#include <QImage>
#include <QTemporaryDir>
#include <QTest>
#include <fstream>

#include "gui_test_support.h"
#include "progress_record_writer.h"
#include "zbkit/gui/diagnosis_view.h"
#include "zbkit/gui/palette.h"

using zb::ActionKind;
using zb::doctor::Phase;
using zb::doctor::ProgramOp;
using zb::doctor::testing::RecordSpec;

namespace {

using Run = zb::gui::testing::ProgramRun;

std::vector<ProgramOp> OneFOneB() {  // stage 0 of 2, 4 microbatches
  return {{ActionKind::kF, 0, 0},  {ActionKind::kF, 0, 1},  {ActionKind::kBW, 0, 0},
          {ActionKind::kF, 0, 2},  {ActionKind::kBW, 0, 1}, {ActionKind::kF, 0, 3},
          {ActionKind::kBW, 0, 2}, {ActionKind::kBW, 0, 3}};
}

std::vector<ProgramOp> GPipe() {  // stage 1 of 2
  return {{ActionKind::kF, 1, 0},  {ActionKind::kF, 1, 1},  {ActionKind::kF, 1, 2},
          {ActionKind::kF, 1, 3},  {ActionKind::kBW, 1, 0}, {ActionKind::kBW, 1, 1},
          {ActionKind::kBW, 1, 2}, {ActionKind::kBW, 1, 3}};
}

}  // namespace

class DiagnosisViewTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void cellsArrowsAndTheCulpritsOutline();
  void theDiagnosisKeptAtTheStallIsShown();
  void zbviewDrawsItHeadlessAndBadInputIsOneLine();

 private:
  QTemporaryDir dir_;
};

void DiagnosisViewTest::initTestCase() {
  QVERIFY(dir_.isValid());
  const int64_t now = zb::doctor::NowNs();
  // Rank 0 in its BW mb 0 (op 2), rank 1 in its F mb 2 (op 2): each waits for the other. Both
  // name this process, alive, as the ranks of a hung job are.
  for (int rank : {0, 1}) {
    RecordSpec spec;
    spec.rank = rank;
    spec.pid = getpid();
    spec.started_ns = now;
    spec.program = rank == 0 ? OneFOneB() : GPipe();
    spec.op_index = 2;
    spec.phase = Phase::kInOp;
    spec.since_ns = now - 40LL * 1000000000LL;
    if (rank == 0) {  // its history: F mb 0 and F mb 1 ended (10 and 12 ms), BW mb 0 running
      const int64_t began = now - 41LL * 1000000000LL, ms = 1000000;
      spec.history_capacity = 4;
      spec.history = {{0, 0, began, began + 10 * ms},
                      {0, 1, began + 20 * ms, began + 32 * ms},
                      {0, 2, spec.since_ns, 0}};
    }
    zb::doctor::testing::WriteRecord(dir_.path().toStdString(), spec);
  }
}

void DiagnosisViewTest::cellsArrowsAndTheCulpritsOutline() {
  auto report = zb::gui::ReadStallReport(dir_.path().toStdString());
  QVERIFY2(report.ok(), report.status().message().c_str());
  QVERIFY(!report->kept);
  QCOMPARE(report->diagnosis.culprit, zb::doctor::Culprit::kDeadlock);
  QCOMPARE(report->diagnosis.culprit_rank, 0);
  zb::gui::DiagnosisView view;
  view.setReport(std::make_shared<const zb::gui::StallReport>(std::move(*report)));
  view.resize(1200, 360);
  // One width per op, the same in both lanes; lane 1 below lane 0.
  const QRect a0 = view.opCell(0, 0), a1 = view.opCell(0, 1), b0 = view.opCell(1, 0);
  QVERIFY(!a0.isEmpty() && !b0.isEmpty());
  QVERIFY(std::abs((a1.left() - a0.left()) - (view.opCell(1, 1).left() - b0.left())) <= 1);
  QCOMPARE(a0.left(), b0.left());
  QVERIFY(b0.top() > a0.bottom());
  QVERIFY(view.opCell(0, 8).isEmpty() && view.opCell(2, 0).isEmpty());
  // Rank 0's BW mb 0 (op 2) waits for rank 1's BW mb 0 (op 4); rank 1's F mb 2 for rank 0's F
  // mb 2 (op 3).
  const auto arrow0 = view.waitArrow(0), arrow1 = view.waitArrow(1);
  QVERIFY(arrow0 && arrow1);
  QCOMPARE(arrow0->p1().x(), view.opCell(0, 2).center().x());
  QCOMPARE(arrow0->p2().x(), view.opCell(1, 4).center().x());
  QCOMPARE(arrow0->p2().y(), view.opCell(1, 4).top());
  QCOMPARE(arrow1->p2().x(), view.opCell(0, 3).center().x());
  QCOMPARE(arrow1->p2().y(), view.opCell(0, 3).bottom());
  // The culprit's op is outlined in the culprit colour, a done op is solid F blue.
  QImage image(view.size(), QImage::Format_ARGB32);
  image.fill(Qt::white);
  view.render(&image);
  const QRect current = view.opCell(0, 2);
  QCOMPARE(image.pixelColor(current.center().x(), current.top() - 3).rgb(),
           zb::gui::OverCapTextColor().rgb());
  QCOMPARE(image.pixelColor(a0.left() + 2, a0.top() + 2).rgb(),
           zb::gui::ColorOf(zb::OpKind::kF).rgb());
  QVERIFY(view.titleText().contains(QStringLiteral("stalled (diagnosed now)")));
  // What the culprit ran before it stopped, from its record's history.
  QVERIFY2(view.culpritHistoryText().startsWith(QStringLiteral(
               "rank 0 before it stopped: F stage 0 mb 0 10.0 ms, F stage 0 mb 1 12.0 ms; the "
               "last ended ")),
           qPrintable(view.culpritHistoryText()));
}

void DiagnosisViewTest::theDiagnosisKeptAtTheStallIsShown() {
  QTemporaryDir kept_dir;
  for (const char* name : {"rank0.progress", "rank1.progress"}) {
    QVERIFY(
        QFile::copy(dir_.filePath(QLatin1String(name)), kept_dir.filePath(QLatin1String(name))));
  }
  auto fresh = zb::gui::ReadStallReport(kept_dir.path().toStdString());
  QVERIFY(fresh.ok());
  zb::doctor::Diagnosis at_stall = fresh->diagnosis;
  at_stall.headline = "what zb replay said at the stall";
  std::ofstream(kept_dir.filePath(QStringLiteral("diagnosis.json")).toStdString())
      << zb::doctor::DiagnosisJson(at_stall);
  auto kept = zb::gui::ReadStallReport(kept_dir.path().toStdString());
  QVERIFY2(kept.ok(), kept.status().message().c_str());
  QVERIFY(kept->kept);
  QCOMPARE(kept->diagnosis.headline, at_stall.headline);
  QCOMPARE(kept->diagnosis.ranks.size(), size_t{2});
  QCOMPARE(kept->diagnosis.ranks[0].waits_for, 1);
  QCOMPARE(kept->diagnosis.ranks[0].producer_index, 4);
  std::ofstream(kept_dir.filePath(QStringLiteral("diagnosis.json")).toStdString()) << "{}";
  auto torn = zb::gui::ReadStallReport(kept_dir.path().toStdString());
  QVERIFY(!torn.ok());
  QVERIFY2(torn.status().message().find("diagnosis.json: format: not zb-diagnosis/1") !=
               std::string::npos,
           torn.status().message().c_str());
}

void DiagnosisViewTest::zbviewDrawsItHeadlessAndBadInputIsOneLine() {
  QTemporaryDir out;
  const QString png = out.filePath(QStringLiteral("diagnosis.png"));
  const Run drawn = zb::gui::testing::RunProgram(
      QStringLiteral(ZBKIT_ZBVIEW_BINARY),
      {QStringLiteral("--screenshot"), png, QStringLiteral("--diagnosis"), dir_.path(),
       QStringLiteral("--size"), QStringLiteral("1000x300")});
  QCOMPARE(drawn.exit_code, 0);
  QVERIFY2(drawn.out.contains(QStringLiteral("2 ranks, stalled")), qPrintable(drawn.out));
  QCOMPARE(QImage(png).size(), QSize(1000, 300));
  const Run missing = zb::gui::testing::RunProgram(
      QStringLiteral(ZBKIT_ZBVIEW_BINARY),
      {QStringLiteral("--screenshot"), png, QStringLiteral("--diagnosis"),
       out.filePath(QStringLiteral("nowhere"))});
  QCOMPARE(missing.exit_code, 1);
  QCOMPARE(missing.err.count(u'\n'), 1);
  QVERIFY2(missing.err.contains(QStringLiteral("no such run directory")), qPrintable(missing.err));
  const Run both = zb::gui::testing::RunProgram(
      QStringLiteral(ZBKIT_ZBVIEW_BINARY),
      {QStringLiteral("some.db"), QStringLiteral("--diagnosis"), dir_.path()});
  QCOMPARE(both.exit_code, 2);
}

QTEST_MAIN(DiagnosisViewTest)
#include "tst_diagnosis_view.moc"
