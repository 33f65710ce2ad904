// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the QTest programs of tests/gui: timelines to draw (hand-made, synthetic, or
// real schedules through the tuner), input events QTest 6.4 lacks, pixel helpers and artefacts.
#ifndef ZBKIT_TESTS_GUI_GUI_TEST_SUPPORT_H_
#define ZBKIT_TESTS_GUI_GUI_TEST_SUPPORT_H_

#include <QApplication>
#include <QDir>
#include <QFontDatabase>
#include <QImage>
#include <QMouseEvent>
#include <QProcess>
#include <QProcessEnvironment>
#include <QWheelEvent>
#include <QtTest>
#include <cstdio>
#include <memory>
#include <random>
#include <string>

#include "zbkit/schemas/timeline_index.h"
#include "zbkit/schemas/types.h"
#include "zbkit/tuner/families.h"
#include "zbkit/tuner/simulator.h"

namespace zb::gui::testing {

// A program run to its end (two minutes at most): its exit code (-1 when it crashed or timed
// out) and what it printed.
struct ProgramRun {
  int exit_code = -1;
  QString out;
  QString err;
};

inline ProgramRun RunProgram(
    const QString& program, const QStringList& arguments,
    const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
  QProcess process;
  process.setProcessEnvironment(env);
  process.start(program, arguments);
  ProgramRun run;
  if (!process.waitForFinished(120000)) {
    process.kill();
    process.waitForFinished();
    run.err = QStringLiteral("timed out");
    return run;
  }
  run.exit_code = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
  run.out = QString::fromLocal8Bit(process.readAllStandardOutput());
  run.err = QString::fromLocal8Bit(process.readAllStandardError());
  return run;
}

inline std::shared_ptr<const TimelineIndex> MakeIndex(const Timeline& timeline, TimeNs comm = 0) {
  return std::make_shared<TimelineIndex>(timeline, comm);
}

inline TimelineOp TimedOp(int rank, int stage, OpKind kind, int microbatch, TimeNs start,
                          TimeNs end) {
  return TimelineOp{rank, stage, kind, microbatch, start, end};
}

// Per-rank costs in ns, uniform over `ranks`; B a little longer than F, W shorter, like the ZB
// paper's profiles. Memory in the paper's relative units.
inline CostProfile UniformCosts(int ranks, TimeNs f = 1'000'000, TimeNs b = 1'100'000,
                                TimeNs w = 700'000, TimeNs comm = 50'000) {
  CostProfile costs;
  costs.comm = comm;
  costs.stages.assign(ranks, StageCost{f, b, w, 10.0, 4.0});
  return costs;
}

// A real schedule of `family`, simulated, as the timeline the GUI would load.
inline Timeline ScheduleTimeline(const std::string& family, int microbatches,
                                 const CostProfile& costs) {
  tuner::FamilyRequest request;
  request.rank_costs = costs;
  request.microbatches = microbatches;
  auto schedule = tuner::GenerateFamily(family, request);
  if (!schedule.ok())
    qFatal("GenerateFamily(%s): %s", family.c_str(), schedule.status().message().c_str());
  const Status status = tuner::Simulate(*schedule);
  if (!status.ok()) qFatal("Simulate(%s): %s", family.c_str(), status.message().c_str());
  return TimelineFromSchedule(*schedule);
}
inline Timeline ScheduleTimeline(const std::string& family, int ranks, int microbatches) {
  return ScheduleTimeline(family, microbatches, UniformCosts(ranks));
}

// `ranks` lanes of `ops_per_rank` F/B/W ops each (random kinds and durations), with idle gaps
// between ops making up about `idle_fraction` of each rank's active span, and no large bubble:
// the case where a naive renderer hides idle time when zoomed out.
inline Timeline SyntheticTimeline(int ranks, int ops_per_rank, double idle_fraction,
                                  uint32_t seed = 1) {
  Timeline timeline;
  timeline.ops.reserve(static_cast<size_t>(ranks) * ops_per_rank);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<TimeNs> duration(500, 1500);  // mean 1000
  // Gaps uniform in [0, 2g] have mean g; idle / (busy + idle) = f gives g = 1000 f / (1 - f).
  const double mean_gap = 1000.0 * idle_fraction / (1.0 - idle_fraction);
  std::uniform_int_distribution<TimeNs> gap(0, static_cast<TimeNs>(2 * mean_gap));
  std::uniform_int_distribution<int> kind(0, 2);
  for (int r = 0; r < ranks; ++r) {
    TimeNs t = 0;
    for (int i = 0; i < ops_per_rank; ++i) {
      const TimeNs d = duration(rng);
      timeline.ops.push_back(TimedOp(r, r, static_cast<OpKind>(kind(rng)), i / 3, t, t + d));
      t += d + (i + 1 < ops_per_rank ? gap(rng) : 0);
    }
  }
  return timeline;
}

// QTest 6.4 has no wheel helper (docs/zbview.md §4).
inline void SendWheel(QWidget* widget, QPoint pos, int delta_y,
                      Qt::KeyboardModifiers modifiers = Qt::NoModifier) {
  QWheelEvent event(QPointF(pos), QPointF(widget->mapToGlobal(pos)), QPoint(), QPoint(0, delta_y),
                    Qt::NoButton, modifiers, Qt::NoScrollPhase, false);
  QApplication::sendEvent(widget, &event);
}

// A hover move without buttons; QTest::mouseMove without buttons only moves the cursor.
inline void SendHover(QWidget* widget, QPoint pos) {
  QMouseEvent event(QEvent::MouseMove, QPointF(pos), QPointF(widget->mapToGlobal(pos)),
                    Qt::NoButton, Qt::NoButton, Qt::NoModifier);
  QApplication::sendEvent(widget, &event);
}

inline QString OutputPath(const QString& name) {
  QDir().mkpath(QStringLiteral(ZBKIT_TEST_OUTPUT_DIR));
  return QStringLiteral(ZBKIT_TEST_OUTPUT_DIR "/") + name;
}

inline void SaveArtifact(const QImage& image, const QString& name) {
  const QString path = OutputPath(name);
  if (!image.save(path)) qWarning("could not save %s", qPrintable(path));
}

inline QString Describe(QRgb rgb) {
  return QStringLiteral("#%1").arg(rgb & 0xFFFFFF, 6, 16, QLatin1Char('0'));
}

// Fonts (docs/zbview.md §4): some offscreen builds have no fonts, and then no text.
inline bool FontsAvailable() {
  if (!QFontDatabase::families().isEmpty()) return true;
  std::fprintf(stderr,
               "No font families found (QFontDatabase::families() is empty): labels and "
               "ruler text will not render. Install fontconfig and fonts-dejavu-core.\n");
  return false;
}

}  // namespace zb::gui::testing

#endif  // ZBKIT_TESTS_GUI_GUI_TEST_SUPPORT_H_
