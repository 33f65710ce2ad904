// SPDX-License-Identifier: Apache-2.0
// Shared by the zbview application tests: real stores made with the real tuner (Tune, as `zb tune
// --store` does it), a million-op store, broken files, and waiting for the loader.
#ifndef ZBKIT_TESTS_GUI_APP_TEST_SUPPORT_H_
#define ZBKIT_TESTS_GUI_APP_TEST_SUPPORT_H_

#include <QByteArray>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QSettings>
#include <QStandardPaths>
#include <QString>
#include <QTest>
#include <QThread>
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "four_stage_costs.h"
#include "zbkit/schemas/store.h"
#include "zbkit/schemas/types.h"
#include "zbkit/tuner/families.h"
#include "zbkit/tuner/memory_limit.h"
#include "zbkit/tuner/simulator.h"
#include "zbkit/tuner/tune.h"

namespace zb::test {

// Settings go to a throw-away test location, never the user's zbview configuration.
inline void UseTestSettings(const char* application) {
  QStandardPaths::setTestModeEnabled(true);
  QCoreApplication::setOrganizationName(QStringLiteral("zbkit-tests"));
  QCoreApplication::setApplicationName(QString::fromLatin1(application));
  QSettings().clear();
}

inline QString OutputPath(const QString& name) {
  QDir().mkpath(QStringLiteral(ZBKIT_TEST_OUTPUT_DIR));
  return QStringLiteral(ZBKIT_TEST_OUTPUT_DIR) + u'/' + name;
}

using testing_support::FourStageCosts;  // four_stage_costs.h

// Tunes `family` as `zb tune --family F --mem-limit 2x --runtime zbkit` would (the paper's cost
// model, whose figures the GUI tests expect) and stores the chosen schedule with its per-rank caps.
// Returns the schedule id, or nullopt (after a QTest failure message).
inline std::optional<int64_t> TuneInto(Store& store, int64_t job, const CostProfile& costs,
                                       int microbatches, const std::string& family) {
  tuner::TuneOptions options;
  options.family = family;
  options.runtime = tuner::ReplayRuntime::kZbkit;
  options.memory_limit = {tuner::MemoryLimit::Kind::kRelative, 2};
  auto result = tuner::Tune(costs, microbatches, options);
  if (!result.ok() || result->best < 0) {
    qWarning("tune %s failed: %s", family.c_str(),
             result.ok() ? "nothing fits" : result.status().message().c_str());
    return std::nullopt;
  }
  const tuner::Candidate& best = result->candidates[static_cast<size_t>(result->best)];
  const double cap = *std::max_element(best.caps.begin(), best.caps.end());
  // Each rank's own cap, as `zb tune --store` keeps them.
  auto id = std::isfinite(cap) ? store.InsertSchedule(job, best.schedule, best.caps)
                               : store.InsertSchedule(job, best.schedule);
  if (!id.ok()) {
    qWarning("insert schedule: %s", id.status().message().c_str());
    return std::nullopt;
  }
  // created_at has millisecond resolution; keep "most recent" unambiguous.
  QThread::msleep(3);
  return *id;
}

struct TunedStore {
  QString path;
  int64_t one_f_one_b = 0;  // 1F1B
  int64_t zb_h1 = 0;        // ZB-H1, with a measured run
  int64_t measured = 0;     // timeline id of the measured run of zb_h1
  int64_t zb_v = 0;         // ZB-V, tuned last: the most recent item
};

// A "measured" run of a schedule: its predicted ops, every op a little slower on the last rank
// (as a real run would differ from the prediction), plus its memory samples. Like a profiled run,
// each op has a range name ("F_stage_2"), kernels, and a device busy for 60 % of its span.
inline Timeline MeasuredRunOf(const Schedule& schedule) {
  Timeline timeline = TimelineFromSchedule(schedule);
  timeline.kind = TimelineKind::kMeasured;
  TimeNs shift = 0;
  for (TimelineOp& op : timeline.ops) {
    if (op.rank == schedule.ranks - 1) {
      const TimeNs extra = (op.end - op.start) / 20;
      op.start += shift;
      shift += extra;
      op.end += shift;
    }
    op.busy = (op.end - op.start) * 6 / 10;
    op.kernels = 12;
    const std::string name =
        std::string(OpKindName(op.kind)) + "_stage_" + std::to_string(op.stage);
    const auto known = std::find(timeline.names.begin(), timeline.names.end(), name);
    op.name = static_cast<int32_t>(known - timeline.names.begin());
    if (known == timeline.names.end()) timeline.names.push_back(name);
  }
  return timeline;
}

// 1F1B, ZB-H1 (+ a measured run of it) and ZB-V, in that order, for p = 4, m = 8.
inline std::optional<TunedStore> MakeTunedStore(const QString& path) {
  QFile::remove(path);
  auto store = Store::Open(path.toStdString());
  if (!store.ok()) {
    qWarning("%s", store.status().message().c_str());
    return std::nullopt;
  }
  auto cluster = store->EnsureCluster({"test-cluster", "", "", "", ""});
  if (!cluster.ok()) return std::nullopt;
  auto job = store->EnsureJob(*cluster, "gpt-4stage");
  if (!job.ok()) return std::nullopt;
  const CostProfile costs = FourStageCosts();
  TunedStore tuned;
  tuned.path = path;
  auto one_f_one_b = TuneInto(*store, *job, costs, 8, "1f1b");
  auto zb_h1 = TuneInto(*store, *job, costs, 8, "zb-h1");
  if (!one_f_one_b || !zb_h1) return std::nullopt;
  tuned.one_f_one_b = *one_f_one_b;
  tuned.zb_h1 = *zb_h1;
  auto schedule = store->LoadSchedule(tuned.zb_h1);
  if (!schedule.ok()) return std::nullopt;
  auto measured = store->InsertTimeline(tuned.zb_h1, MeasuredRunOf(*schedule));
  if (!measured.ok()) {
    qWarning("%s", measured.status().message().c_str());
    return std::nullopt;
  }
  tuned.measured = *measured;
  QThread::msleep(3);
  auto zb_v = TuneInto(*store, *job, costs, 8, "zb-v");
  if (!zb_v) return std::nullopt;
  tuned.zb_v = *zb_v;
  return tuned;
}

inline std::optional<ScheduleInfo> FindScheduleInfo(const QString& path, int64_t id) {
  auto store = Store::Open(path.toStdString(), Store::Mode::kReadOnly);
  if (!store.ok()) return std::nullopt;
  auto schedules = store->ListSchedules();
  if (!schedules.ok()) return std::nullopt;
  for (const ScheduleInfo& info : *schedules) {
    if (info.id == id) return info;
  }
  return std::nullopt;
}

// A store holding one measured timeline of about `ops` ops (ZB-H1 on 8 ranks, enough
// microbatches), with a memory sample per op. Returns the timeline id.
inline std::optional<int64_t> MakeMillionOpStore(const QString& path, int64_t ops = 1'000'000) {
  QFile::remove(path);
  const int ranks = 8;
  const int microbatches = static_cast<int>((ops + 3 * ranks - 1) / (3 * ranks));
  CostProfile costs;
  costs.comm = MsToNs(0.01);
  for (int s = 0; s < ranks; ++s)
    costs.stages.push_back({MsToNs(0.1), MsToNs(0.1), MsToNs(0.05), 1, 0.4});
  auto schedule = tuner::ZbH1(costs, microbatches);
  if (!schedule.ok() || !tuner::Simulate(*schedule).ok()) return std::nullopt;
  Timeline timeline = TimelineFromSchedule(*schedule);
  timeline.kind = TimelineKind::kMeasured;
  auto store = Store::Open(path.toStdString());
  if (!store.ok()) return std::nullopt;
  auto id = store->InsertTimeline(std::nullopt, timeline);
  if (!id.ok()) {
    qWarning("%s", id.status().message().c_str());
    return std::nullopt;
  }
  return *id;
}

inline bool WriteFile(const QString& path, const QByteArray& bytes) {
  QFile file(path);
  if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate)) return false;
  return file.write(bytes) == bytes.size();
}

// A valid store whose header claims schema version 99: SQLite keeps user_version as a big-endian
// 32-bit integer at byte 60 of the file header.
inline bool MakeNewerStore(const QString& path) {
  QFile::remove(path);
  {
    auto store = Store::Open(path.toStdString());
    if (!store.ok()) return false;
  }
  QFile::remove(path + QStringLiteral("-wal"));
  QFile::remove(path + QStringLiteral("-shm"));
  QFile file(path);
  if (!file.open(QIODevice::ReadWrite) || !file.seek(60)) return false;
  const char version[4] = {0, 0, 0, 99};
  return file.write(version, 4) == 4;
}

}  // namespace zb::test

#endif  // ZBKIT_TESTS_GUI_APP_TEST_SUPPORT_H_
