// SPDX-License-Identifier: Apache-2.0
// The store and shards under stress (docs/store.md §3): 16 processes recording replays and merging
// them into one store at once, and writers killed with SIGKILL in the middle of their writes, 100
// times each. Afterwards the store passes PRAGMA integrity_check and holds every record a writer
// saw committed, whole: a run never without its timeline, a profile never without its stages.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "raw_db.h"
#include "zbkit/profiler/shard.h"
#include "zbkit/schemas/store.h"
#include "zbrt.h"

namespace {

namespace fs = std::filesystem;
using zb::testing_support::RawDb;
using zb::testing_support::ReadBytes;

void SleepMicroseconds(int64_t us) {
  timespec pause{static_cast<time_t>(us / 1'000'000), static_cast<long>(us % 1'000'000) * 1000};
  while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {
  }
}

// What a killed writer reports after each commit returned: which record, and its id.
struct Committed {
  int32_t kind = 0;  // 0 cost profile, 1 measured run, 2 shard batch
  int32_t k = 0;     // the writer's k-th record of its trial
  int64_t id = 0;    // the store's id; for shards the records written so far
};

// How a writer reports a commit that returned: false when the report cannot be sent.
using Report = std::function<bool(const Committed&)>;

// Forks a writer process that runs `writer` (it reports each commit and returns only when it
// fails: the child then exits 1), kills it with SIGKILL and returns everything it reported.
// Three trials in four first wait for its first report (a commit has returned) and then kill it up
// to `spread_us` later, so that most kills land among the writes whatever the machine's speed (a
// sanitizer build is several times slower); the fourth kills it at a random point from its start.
std::vector<Committed> ForkAndKill(const std::function<void(const Report&)>& writer, int trial,
                                   unsigned& seed, int64_t spread_us) {
  std::vector<Committed> reported;
  int fds[2];
  if (pipe(fds) != 0) {
    ADD_FAILURE() << "pipe";
    return reported;
  }
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    writer([fd = fds[1]](const Committed& record) {
      return write(fd, &record, sizeof(record)) == sizeof(record);
    });
    _exit(1);
  }
  close(fds[1]);
  const int fd = fds[0];
  if (pid < 0) {
    ADD_FAILURE() << "fork";
    close(fd);
    return reported;
  }
  seed = seed * 1103515245u + 12345u;
  const int64_t delay_us = (seed >> 8) % spread_us;
  if (trial % 4 != 0) {
    pollfd ready{fd, POLLIN, 0};
    Committed first;
    if (poll(&ready, 1, 30000) == 1 && read(fd, &first, sizeof(first)) == sizeof(first)) {
      reported.push_back(first);
    }
  }
  SleepMicroseconds(delay_us);
  EXPECT_EQ(kill(pid, SIGKILL), 0);
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "trial " << trial;
  Committed record;
  while (read(fd, &record, sizeof(record)) == sizeof(record))
    reported.push_back(record);
  close(fd);
  return reported;
}

// What the store holds, by id: each run's command and each cost profile's name.
struct StoredNames {
  std::map<int64_t, std::string> run_command;
  std::map<int64_t, std::string> profile_name;
};

StoredNames ReadNames(const zb::Store& store) {
  StoredNames names;
  auto runs = store.ListRuns();
  EXPECT_TRUE(runs.ok()) << runs.status().message();
  for (const zb::RunInfo& run : runs.ok() ? *runs : std::vector<zb::RunInfo>{})
    names.run_command[run.id] = run.command;
  auto profiles = store.ListCostProfiles();
  EXPECT_TRUE(profiles.ok()) << profiles.status().message();
  for (const zb::CostProfileInfo& info :
       profiles.ok() ? *profiles : std::vector<zb::CostProfileInfo>{})
    names.profile_name[info.id] = info.name;
  return names;
}

class StoreStress : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/zbkit_stress_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    db_ = dir_ + "/zbkit.db";
    // A two-rank zb-h1 schedule of 8 microbatches, tuned by the real zb.
    const std::string costs = dir_ + "/costs.json";
    std::ofstream(costs) << R"({"format": "zb-costs/1", "comm": 0.01, "stages": [)"
                         << R"({"F": 1, "B": 1, "W": 1, "M_B": 1, "M_W": 0.5},)"
                         << R"({"F": 1, "B": 1, "W": 1, "M_B": 1, "M_W": 0.5}]})";
    const std::string command = "'" + std::string(ZBKIT_ZB_BINARY) + "' tune --costs '" + costs +
                                "' -m 8 --mem-limit 2x --family zb-h1 --store '" + db_ +
                                "' --job stress > '" + dir_ + "/tune.out' 2>&1";
    ASSERT_EQ(std::system(command.c_str()), 0) << ReadBytes(dir_ + "/tune.out");
    auto store = zb::Store::Open(db_);
    ASSERT_TRUE(store.ok()) << store.status().message();
    auto schedules = store->ListSchedules();
    ASSERT_TRUE(schedules.ok());
    ASSERT_EQ(schedules->size(), 1u);
    schedule_id_ = schedules->front().id;
    auto cluster = store->EnsureCluster({"local", "", "", "", ""});
    ASSERT_TRUE(cluster.ok());
    auto job = store->EnsureJob(*cluster, "stress");
    ASSERT_TRUE(job.ok());
    job_id_ = *job;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Waits for `child`; true when it exited 0.
  static bool ExitedCleanly(pid_t child) {
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }

  std::string dir_;
  std::string db_;
  int64_t schedule_id_ = 0;
  int64_t job_id_ = 0;
};

// Records one iteration of every rank of `schedule_id` into `shards` and merges it into `db`.
// Returns the run id, or -1 with the error in `error`.
int64_t ReplayAndMerge(const std::string& db, int64_t schedule_id, const std::string& shards,
                       const std::string& command, std::string& error) {
  fs::create_directories(shards);
  zbrt_schedule* schedule = nullptr;
  if (zbrt_schedule_open_store(db.c_str(), schedule_id, &schedule) != ZBRT_OK) {
    error = zbrt_last_error();
    return -1;
  }
  int32_t ranks = 0;
  zbrt_schedule_ranks(schedule, &ranks);
  for (int32_t rank = 0; rank < ranks; ++rank) {
    const std::string shard = shards + "/rank" + std::to_string(rank) + ".zbshard";
    zbrt_recorder* recorder = nullptr;
    int64_t count = 0;
    bool ok = zbrt_recorder_open(schedule, rank, shard.c_str(), &recorder) == ZBRT_OK &&
              zbrt_rank_op_count(schedule, rank, &count) == ZBRT_OK &&
              zbrt_iteration_begin(recorder, 0) == ZBRT_OK;
    for (int64_t i = 0; ok && i < count; ++i) {
      ok = zbrt_op_begin(recorder, i) == ZBRT_OK && zbrt_op_end(recorder, i) == ZBRT_OK;
    }
    ok = ok && zbrt_iteration_end(recorder) == ZBRT_OK;
    ok = zbrt_recorder_close(recorder) == ZBRT_OK && ok;
    if (!ok) {
      error = zbrt_last_error();
      zbrt_schedule_close(schedule);
      return -1;
    }
  }
  zbrt_schedule_close(schedule);
  int64_t run_id = 0;
  if (zbrt_merge_run(db.c_str(), schedule_id, shards.c_str(), command.c_str(), &run_id) !=
      ZBRT_OK) {
    error = zbrt_last_error();
    return -1;
  }
  return run_id;
}

// 16 processes at once, each recording its shards and merging its replay into the one store,
// three times, and storing a cost profile between merges (as `zb profile` would beside replays).
TEST_F(StoreStress, SixteenProcessesWritingShardsAndMergingAtOnce) {
  constexpr int kProcesses = 16;
  constexpr int kRounds = 3;
  std::vector<pid_t> children;
  for (int child = 0; child < kProcesses; ++child) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const std::string prefix = dir_ + "/child" + std::to_string(child);
      std::ofstream ids(prefix + ".ids");
      auto fail = [&](const std::string& error) {
        std::ofstream(prefix + ".err") << error;
        _exit(1);
      };
      for (int round = 0; round < kRounds; ++round) {
        const std::string name = "c" + std::to_string(child) + "r" + std::to_string(round);
        std::string error;
        const int64_t run =
            ReplayAndMerge(db_, schedule_id_, dir_ + "/shards/" + name, "replay " + name, error);
        if (run <= 0) fail(error);
        auto store = zb::Store::Open(db_);
        if (!store.ok()) fail(store.status().message());
        zb::CostProfile costs;
        costs.stages = {{1000 + child, 2000 + round, 500, 1.0, 0.5},
                        {1000 + child, 2000 + round, 500, 1.0, 0.5}};
        auto profile = store->InsertCostProfile(job_id_, "profile " + name, costs);
        if (!profile.ok()) fail(profile.status().message());
        ids << name << " " << run << " " << *profile << "\n" << std::flush;
      }
      _exit(0);
    }
    children.push_back(pid);
  }
  for (int child = 0; child < kProcesses; ++child) {
    EXPECT_TRUE(ExitedCleanly(children[child]))
        << "child " << child << ": " << ReadBytes(dir_ + "/child" + std::to_string(child) + ".err");
  }

  RawDb raw(db_);
  EXPECT_EQ(raw.Text("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(raw.Int("SELECT count(*) FROM pragma_foreign_key_check"), 0);
  auto store = zb::Store::Open(db_, zb::Store::Mode::kReadOnly);
  ASSERT_TRUE(store.ok()) << store.status().message();
  auto schedule = store->LoadSchedule(schedule_id_);
  ASSERT_TRUE(schedule.ok());
  const StoredNames stored = ReadNames(*store);

  int records = 0;
  for (int child = 0; child < kProcesses; ++child) {
    std::istringstream lines(ReadBytes(dir_ + "/child" + std::to_string(child) + ".ids"));
    std::string name;
    int64_t run_id = 0;
    int64_t profile_id = 0;
    while (lines >> name >> run_id >> profile_id) {
      ++records;
      SCOPED_TRACE(name);
      ASSERT_EQ(stored.run_command.count(run_id), 1u);
      EXPECT_EQ(stored.run_command.at(run_id), "replay " + name);
      auto timelines = store->ListRunTimelines(run_id);
      ASSERT_TRUE(timelines.ok());
      ASSERT_EQ(timelines->size(), 1u);
      auto timeline = store->LoadTimeline(timelines->front().id);
      ASSERT_TRUE(timeline.ok());
      EXPECT_EQ(static_cast<int64_t>(timeline->ops.size()), schedule->num_ops());
      ASSERT_EQ(stored.profile_name.count(profile_id), 1u);
      EXPECT_EQ(stored.profile_name.at(profile_id), "profile " + name);
    }
  }
  EXPECT_EQ(records, kProcesses * kRounds);
  EXPECT_EQ(static_cast<int>(stored.run_command.size()), kProcesses * kRounds);
}

// The k-th record of a trial, so the reader can tell exactly what must be there.
zb::CostProfile KilledProfile(int trial, int k) {
  zb::CostProfile costs;
  for (int stage = 0; stage < 8; ++stage) {
    costs.stages.push_back({1000 + trial, 2000 + k, 300 + stage, 1.0 + stage, 0.5});
  }
  costs.comm = 7;
  return costs;
}

zb::Timeline KilledTimeline(int trial, int k) {
  zb::Timeline timeline;
  timeline.kind = zb::TimelineKind::kMeasured;
  for (int32_t i = 0; i < 600; ++i) {
    const zb::TimeNs start = int64_t{1000} * i + trial;
    timeline.ops.push_back({i % 2, i % 2, zb::OpKind::kF, i / 2, start, start + 500 + k, 0});
    timeline.memory.push_back({i % 2, start + 500 + k, 1.0 * i});
  }
  return timeline;
}

std::string KilledName(int trial, int k) {
  return "killed " + std::to_string(trial) + " " + std::to_string(k);
}

// A writer killed at a random point of its writes, 100 times: cost profiles (a profile and its
// stages) and measured runs (a run, its timeline, 600 ops and 600 samples) alternate, each one
// transaction, and the writer reports each after its commit returned. Every reported record is
// there, whole, equal to what was written; at most the one being committed when the kill came is
// there unreported; a run never lacks its timeline.
TEST_F(StoreStress, KilledWritersLoseNoCommittedRecord) {
  constexpr int kTrials = 100;
  std::vector<std::vector<Committed>> reported(kTrials);
  unsigned seed = 12345;
  int killed_mid_write = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    auto writer = [&](const Report& report) {
      auto store = zb::Store::Open(db_);
      if (!store.ok()) return;
      for (int k = 0;; ++k) {
        const std::string name = KilledName(trial, k);
        Committed record{k % 2, k, 0};
        if (k % 2 == 0) {
          auto id = store->InsertCostProfile(job_id_, name, KilledProfile(trial, k));
          if (!id.ok()) return;
          record.id = *id;
        } else {
          auto id = store->RecordMeasuredRun(job_id_, schedule_id_, name, std::nullopt,
                                             KilledTimeline(trial, k));
          if (!id.ok()) return;
          record.id = *id;
        }
        if (!report(record)) return;
      }
    };
    // Up to 60 ms: a kill during the open, the first commit or the tenth.
    reported[trial] = ForkAndKill(writer, trial, seed, 60000);
    if (!reported[trial].empty()) ++killed_mid_write;
  }
  // Most kills land after some commits, with more to come: the writes really were interrupted.
  EXPECT_GE(killed_mid_write, kTrials / 2);

  RawDb raw(db_);
  EXPECT_EQ(raw.Text("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(raw.Int("SELECT count(*) FROM pragma_foreign_key_check"), 0);
  // Atomic records: every stored profile has its 8 stages, every stored run its one timeline of
  // 600 ops, whether or not its writer lived to report it.
  EXPECT_EQ(raw.Int("SELECT count(*) FROM cost_profiles p WHERE p.name LIKE 'killed %' AND "
                    "(SELECT count(*) FROM cost_profile_stages s WHERE s.profile_id = p.id) "
                    "<> 8"),
            0);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM runs r WHERE r.command LIKE 'killed %' AND "
                    "(SELECT count(*) FROM timelines t WHERE t.run_id = r.id AND t.num_ops = 600) "
                    "<> 1"),
            0);

  auto store = zb::Store::Open(db_, zb::Store::Mode::kReadOnly);
  ASSERT_TRUE(store.ok()) << store.status().message();
  StoredNames names = ReadNames(*store);

  size_t total = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    for (const Committed& record : reported[trial]) {
      ++total;
      const std::string name = KilledName(trial, record.k);
      SCOPED_TRACE(name);
      if (record.kind == 0) {
        ASSERT_EQ(names.profile_name[record.id], name);
        auto costs = store->LoadCostProfile(record.id);
        ASSERT_TRUE(costs.ok()) << costs.status().message();
        EXPECT_TRUE(*costs == KilledProfile(trial, record.k));
      } else {
        ASSERT_EQ(names.run_command[record.id], name);
        auto timelines = store->ListRunTimelines(record.id);
        ASSERT_TRUE(timelines.ok());
        ASSERT_EQ(timelines->size(), 1u);
        auto timeline = store->LoadTimeline(timelines->front().id);
        ASSERT_TRUE(timeline.ok()) << timeline.status().message();
        EXPECT_TRUE(timeline->ops == KilledTimeline(trial, record.k).ops);
        EXPECT_TRUE(timeline->memory == KilledTimeline(trial, record.k).memory);
      }
    }
  }
  // Stored but unreported: at most the record in flight at each kill.
  const int64_t stored = raw.Int("SELECT count(*) FROM cost_profiles WHERE name LIKE 'killed %'") +
                         raw.Int("SELECT count(*) FROM runs WHERE command LIKE 'killed %'");
  EXPECT_GE(stored, static_cast<int64_t>(total));
  EXPECT_LE(stored, static_cast<int64_t>(total) + kTrials);
  std::printf(
      "kill -9 x%d: %zu committed records reported, %lld stored, %d trials killed "
      "after a commit\n",
      kTrials, total, static_cast<long long>(stored), killed_mid_write);
}

// A shard writer killed between or during its flushes, 100 times: every batch whose Flush()
// returned is read back, in order.
TEST_F(StoreStress, KilledShardWritersKeepEveryFlushedBatch) {
  constexpr int kTrials = 100;
  constexpr int kBatch = 200;
  unsigned seed = 777;
  int killed_mid_write = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    const std::string path = dir_ + "/trial" + std::to_string(trial) + ".zbshard";
    auto writer = [&](const Report& report) {
      zb::profiler::TraceProcess process;
      process.rank = trial;
      auto shard = zb::profiler::ShardWriter::Create(path, process, "stress");
      if (!shard.ok()) return;
      for (int k = 0;; ++k) {
        for (int i = 0; i < kBatch; ++i) {
          const int64_t n = int64_t{k} * kBatch + i;
          shard->Add(zb::profiler::TraceRange{"r" + std::to_string(n), "", 1, n, n + 1, 0});
        }
        if (!shard->Flush().ok() || !report({2, k, shard->records_written()})) return;
      }
    };
    const std::vector<Committed> flushes = ForkAndKill(writer, trial, seed, 30000);
    const int64_t written = flushes.empty() ? 0 : flushes.back().id;
    if (written > 0) ++killed_mid_write;
    if (!fs::exists(path)) continue;  // killed before the shard was created
    auto trace = zb::profiler::ReadShard(path);
    if (!trace.ok()) {
      // Only a shard killed before its first commit (schema and process row) may be unreadable.
      EXPECT_EQ(written, 0) << trace.status().message();
      continue;
    }
    ASSERT_GE(static_cast<int64_t>(trace->ranges.size()), written) << "trial " << trial;
    EXPECT_EQ(trace->ranges.size() % kBatch, 0u) << "a batch is written whole or not at all";
    for (size_t n = 0; n < trace->ranges.size(); ++n) {
      ASSERT_EQ(trace->ranges[n].name, "r" + std::to_string(n)) << "trial " << trial;
    }
  }
  EXPECT_GE(killed_mid_write, kTrials / 2);
}

}  // namespace
