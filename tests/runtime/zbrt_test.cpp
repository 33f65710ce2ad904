// SPDX-License-Identifier: Apache-2.0
// libzbrt through its C ABI, as a trainer uses it: schedules tuned by the real `zb tune` (the
// paper's 1.5B profile, zb-h1 and zb-v), queries against what zb::Store and the JSON reader give,
// error codes and messages for bad input, a recorded fake replay merged into the store and read
// back, and `zb import --format shards` on the replay shards.
#include "zbrt.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "zbkit/profiler/shard.h"
#include "zbkit/schemas/json_io.h"
#include "zbkit/schemas/store.h"

namespace {

namespace fs = std::filesystem;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

struct Result {
  int code = -1;
  std::string out;
  std::string err;
};

Result RunZb(const std::string& dir, const std::string& args) {
  const std::string out = dir + "/stdout";
  const std::string err = dir + "/stderr";
  const std::string command =
      "'" + std::string(ZBKIT_ZB_BINARY) + "' " + args + " > '" + out + "' 2> '" + err + "'";
  const int status = std::system(command.c_str());
  Result result;
  result.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = ReadFile(out);
  result.err = ReadFile(err);
  return result;
}

std::string PaperCosts(const char* name) {
  return (fs::path(ZBKIT_PAPER_TABLES).parent_path() / "paper" / name).string();
}

// Busy-waits so that a fake op takes at least `ns` on the clock the recorder reads.
void Spin(int64_t ns) {
  const int64_t until = zbrt_now_ns() + ns;
  while (zbrt_now_ns() < until) {
  }
}

// The shared fixture: one store with two tuned schedules (zb-h1 loop, zb-v), and the zb-h1 one
// also as a zb-schedule/1 file. Tuned once for the whole suite.
class Zbrt : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char pattern[] = "/tmp/zbkit_zbrt_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    suite_dir_ = pattern;
    const std::string costs = PaperCosts("1.5B-p8-m24.json");
    for (const char* family : {"zb-h1", "zb-v"}) {
      const std::string out = suite_dir_ + "/" + family + ".json";
      Result tune =
          RunZb(suite_dir_, "tune --costs '" + costs + "' -m 24 --mem-limit 2x --family " + family +
                                " --store '" + store() + "' --job replay" + " --out '" + out + "'");
      ASSERT_EQ(tune.code, 0) << tune.err;
    }
    auto store = zb::Store::Open(Zbrt::store(), zb::Store::Mode::kReadOnly);
    ASSERT_TRUE(store.ok()) << store.status().message();
    auto infos = store->ListSchedules();
    ASSERT_TRUE(infos.ok());
    for (const zb::ScheduleInfo& info : *infos) {
      (info.family == "zb-h1" ? h1_id_ : v_id_) = info.id;
    }
    ASSERT_GT(h1_id_, 0);
    ASSERT_GT(v_id_, 0);
  }
  static void TearDownTestSuite() { fs::remove_all(suite_dir_); }

  void SetUp() override {
    ASSERT_FALSE(suite_dir_.empty());
    char pattern[] = "/tmp/zbkit_zbrt_case_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string store() { return suite_dir_ + "/zbkit.db"; }
  static std::string h1_file() { return suite_dir_ + "/zb-h1.json"; }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  // A copy of the suite's store for tests that write into it.
  std::string StoreCopy() const {
    const std::string copy = Path("copy.db");
    fs::copy_file(store(), copy);
    return copy;
  }

  static zbrt_schedule* OpenStore(int64_t id) {
    zbrt_schedule* schedule = nullptr;
    EXPECT_EQ(zbrt_schedule_open_store(store().c_str(), id, &schedule), ZBRT_OK)
        << zbrt_last_error();
    return schedule;
  }

  // Records `iterations` iterations of every rank's ops in schedule order, each op spinning
  // `F`, `B`, `W` or `BW` ns by kind, with a memory sample after each op; one shard per rank.
  static void Replay(const zbrt_schedule* schedule, const std::string& dir, int iterations,
                     const int64_t (&spin_by_kind)[4]) {
    int32_t ranks = 0;
    ASSERT_EQ(zbrt_schedule_ranks(schedule, &ranks), ZBRT_OK);
    for (int32_t rank = 0; rank < ranks; ++rank) {
      const std::string shard = dir + "/rank" + std::to_string(rank) + ".zbshard";
      zbrt_recorder* recorder = nullptr;
      ASSERT_EQ(zbrt_recorder_open(schedule, rank, shard.c_str(), &recorder), ZBRT_OK)
          << zbrt_last_error();
      int64_t count = 0;
      ASSERT_EQ(zbrt_rank_op_count(schedule, rank, &count), ZBRT_OK);
      int64_t held = 0;
      for (int iteration = 0; iteration < iterations; ++iteration) {
        ASSERT_EQ(zbrt_iteration_begin(recorder, iteration), ZBRT_OK) << zbrt_last_error();
        for (int64_t i = 0; i < count; ++i) {
          zbrt_op op{};
          ASSERT_EQ(zbrt_rank_op(schedule, rank, i, &op), ZBRT_OK);
          ASSERT_EQ(zbrt_op_begin(recorder, i), ZBRT_OK) << zbrt_last_error();
          Spin(spin_by_kind[op.kind]);
          ASSERT_EQ(zbrt_op_end(recorder, i), ZBRT_OK) << zbrt_last_error();
          held += op.kind == ZBRT_OP_F ? 1000 : op.kind == ZBRT_OP_B ? -600 : -400;
          if (op.kind == ZBRT_OP_BW) held -= 600;
          ASSERT_EQ(zbrt_record_memory(recorder, std::max<int64_t>(held, 0)), ZBRT_OK);
        }
        ASSERT_EQ(zbrt_iteration_end(recorder), ZBRT_OK) << zbrt_last_error();
      }
      ASSERT_EQ(zbrt_recorder_close(recorder), ZBRT_OK) << zbrt_last_error();
    }
  }

  static std::string suite_dir_;
  static int64_t h1_id_;
  static int64_t v_id_;
  std::string dir_;
};

std::string Zbrt::suite_dir_;
int64_t Zbrt::h1_id_ = 0;
int64_t Zbrt::v_id_ = 0;

// Every query of `handle` against the schedule zbkit itself reads.
void ExpectMatches(const zbrt_schedule* handle, const zb::Schedule& expected) {
  int32_t ranks = 0, microbatches = 0, chunks = 0, placement = -1;
  ASSERT_EQ(zbrt_schedule_ranks(handle, &ranks), ZBRT_OK);
  ASSERT_EQ(zbrt_schedule_microbatches(handle, &microbatches), ZBRT_OK);
  ASSERT_EQ(zbrt_schedule_chunks(handle, &chunks), ZBRT_OK);
  ASSERT_EQ(zbrt_schedule_placement(handle, &placement), ZBRT_OK);
  EXPECT_EQ(ranks, expected.ranks);
  EXPECT_EQ(microbatches, expected.microbatches);
  EXPECT_EQ(chunks, expected.chunks);
  EXPECT_EQ(placement,
            expected.placement == zb::Placement::kV ? ZBRT_PLACEMENT_V : ZBRT_PLACEMENT_LOOP);
  const char* family = nullptr;
  ASSERT_EQ(zbrt_schedule_family(handle, &family), ZBRT_OK);
  EXPECT_EQ(std::string(family), expected.family);
  int64_t makespan = -1;
  int32_t has_prediction = -1;
  ASSERT_EQ(zbrt_schedule_makespan_ns(handle, &makespan, &has_prediction), ZBRT_OK);
  ASSERT_TRUE(expected.predicted.has_value());
  EXPECT_EQ(has_prediction, 1);
  EXPECT_EQ(makespan, expected.predicted->makespan);
  EXPECT_GT(makespan, 0);
  for (int32_t rank = 0; rank < ranks; ++rank) {
    const zb::RankProgram& program = expected.programs[rank];
    int32_t stages[4] = {-1, -1, -1, -1};
    int32_t count = 0;
    ASSERT_EQ(zbrt_rank_stages(handle, rank, stages, 4, &count), ZBRT_OK);
    ASSERT_EQ(count, chunks);
    for (int32_t c = 0; c < count; ++c) {
      EXPECT_EQ(stages[c], program.stages[c]);
      EXPECT_EQ(stages[c], zb::StageOfChunk(expected.placement, ranks, rank, c));
    }
    int64_t ops = 0;
    ASSERT_EQ(zbrt_rank_op_count(handle, rank, &ops), ZBRT_OK);
    ASSERT_EQ(ops, static_cast<int64_t>(program.ops.size()));
    for (int64_t i = 0; i < ops; ++i) {
      zbrt_op op{};
      ASSERT_EQ(zbrt_rank_op(handle, rank, i, &op), ZBRT_OK);
      const zb::Op& want = program.ops[i];
      EXPECT_EQ(op.kind, static_cast<int32_t>(want.kind));
      EXPECT_EQ(op.chunk, want.chunk);
      EXPECT_EQ(op.stage, program.stages[want.chunk]);
      EXPECT_EQ(op.microbatch, want.microbatch);
      EXPECT_EQ(op.start_ns, want.start);
      EXPECT_EQ(op.end_ns, want.end);
      EXPECT_LE(op.start_ns, op.end_ns);
    }
  }
}

TEST(ZbrtAbi, VersionAndStatusNames) {
  EXPECT_EQ(zbrt_abi_version(), ZBRT_ABI_VERSION);
  EXPECT_STREQ(zbrt_status_name(ZBRT_OK), "ZBRT_OK");
  EXPECT_STREQ(zbrt_status_name(ZBRT_ERROR_OUT_OF_RANGE), "ZBRT_ERROR_OUT_OF_RANGE");
  EXPECT_STREQ(zbrt_status_name(99), "ZBRT_ERROR_UNKNOWN");
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  const int64_t realtime = static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  EXPECT_LT(std::llabs(zbrt_now_ns() - realtime), 1'000'000'000);
}

TEST_F(Zbrt, OpenFromFileMatchesTheJsonReader) {
  auto expected = zb::ReadScheduleFile(h1_file());
  ASSERT_TRUE(expected.ok()) << expected.status().message();
  zbrt_schedule* handle = nullptr;
  ASSERT_EQ(zbrt_schedule_open_file(h1_file().c_str(), &handle), ZBRT_OK) << zbrt_last_error();
  ExpectMatches(handle, *expected);
  int64_t id = 0;
  ASSERT_EQ(zbrt_schedule_id(handle, &id), ZBRT_OK);
  EXPECT_EQ(id, -1);
  EXPECT_EQ(zbrt_schedule_close(handle), ZBRT_OK);
}

TEST_F(Zbrt, OpenFromStoreMatchesTheStore) {
  auto store = zb::Store::Open(Zbrt::store(), zb::Store::Mode::kReadOnly);
  ASSERT_TRUE(store.ok());
  for (int64_t id : {h1_id_, v_id_}) {
    auto expected = store->LoadSchedule(id);
    ASSERT_TRUE(expected.ok()) << expected.status().message();
    zbrt_schedule* handle = OpenStore(id);
    ASSERT_NE(handle, nullptr);
    ExpectMatches(handle, *expected);
    int64_t got = 0;
    ASSERT_EQ(zbrt_schedule_id(handle, &got), ZBRT_OK);
    EXPECT_EQ(got, id);
    EXPECT_EQ(zbrt_schedule_close(handle), ZBRT_OK);
  }
  // The V schedule is what makes stage ids differ from ranks: rank 0 holds stages 0 and 15.
  zbrt_schedule* v = OpenStore(v_id_);
  int32_t stages[2] = {};
  int32_t count = 0;
  ASSERT_EQ(zbrt_rank_stages(v, 0, stages, 2, &count), ZBRT_OK);
  EXPECT_EQ(count, 2);
  EXPECT_EQ(stages[0], 0);
  EXPECT_EQ(stages[1], 15);
  // Capacity 0 asks only for the count.
  ASSERT_EQ(zbrt_rank_stages(v, 3, nullptr, 0, &count), ZBRT_OK);
  EXPECT_EQ(count, 2);
  zbrt_schedule_close(v);
}

// A failing call returns its code and leaves one line naming the function and the problem.
void ExpectError(zbrt_status got, zbrt_status want, const std::string& fragment) {
  EXPECT_EQ(got, want) << zbrt_status_name(got) << ": " << zbrt_last_error();
  const std::string message = zbrt_last_error();
  EXPECT_NE(message.find(fragment), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST_F(Zbrt, BadInputsGiveCodesAndMessages) {
  zbrt_schedule* handle = reinterpret_cast<zbrt_schedule*>(0x1);
  const std::string missing = Path("missing.json");
  ExpectError(zbrt_schedule_open_file(missing.c_str(), &handle), ZBRT_ERROR_NOT_FOUND,
              "missing.json");
  EXPECT_EQ(handle, nullptr);
  EXPECT_NE(std::string(zbrt_last_error()).find("zbrt_schedule_open_file: "), std::string::npos);

  std::ofstream(Path("bad.json")) << R"({"format": "zb-schedule/1", "stages": "four"})";
  ExpectError(zbrt_schedule_open_file(Path("bad.json").c_str(), &handle), ZBRT_ERROR_INVALID_INPUT,
              "bad.json");
  ExpectError(zbrt_schedule_open_file(nullptr, &handle), ZBRT_ERROR_INVALID_ARGUMENT,
              "path is null");

  ExpectError(zbrt_schedule_open_store(store().c_str(), 999, &handle), ZBRT_ERROR_NOT_FOUND, "999");
  ExpectError(zbrt_schedule_open_store(Path("none.db").c_str(), 1, &handle), ZBRT_ERROR_NOT_FOUND,
              "none.db");
  EXPECT_FALSE(fs::exists(Path("none.db")));  // read-only: nothing created

  zbrt_schedule* schedule = OpenStore(h1_id_);
  ASSERT_NE(schedule, nullptr);
  int64_t count = 0;
  ExpectError(zbrt_rank_op_count(schedule, 8, &count), ZBRT_ERROR_OUT_OF_RANGE,
              "rank 8 is out of range (the schedule has 8 ranks)");
  ExpectError(zbrt_rank_op_count(schedule, -1, &count), ZBRT_ERROR_OUT_OF_RANGE, "rank -1");
  ExpectError(zbrt_rank_op_count(nullptr, 0, &count), ZBRT_ERROR_INVALID_ARGUMENT,
              "schedule handle is null");
  ExpectError(zbrt_rank_op_count(schedule, 0, nullptr), ZBRT_ERROR_INVALID_ARGUMENT, "out is null");
  zbrt_op op{};
  ASSERT_EQ(zbrt_rank_op_count(schedule, 2, &count), ZBRT_OK);
  ExpectError(zbrt_rank_op(schedule, 2, count, &op), ZBRT_ERROR_OUT_OF_RANGE,
              "op index " + std::to_string(count) + " of rank 2 is out of range");
  ExpectError(zbrt_rank_op(schedule, 2, -1, &op), ZBRT_ERROR_OUT_OF_RANGE, "op index -1");

  zbrt_recorder* recorder = nullptr;
  ExpectError(zbrt_recorder_open(schedule, 9, Path("r.zbshard").c_str(), &recorder),
              ZBRT_ERROR_OUT_OF_RANGE, "rank 9");
  ExpectError(zbrt_recorder_open(schedule, 0, "", &recorder), ZBRT_ERROR_INVALID_ARGUMENT,
              "shard_path");
  ASSERT_EQ(zbrt_recorder_open(schedule, 1, Path("rank1.zbshard").c_str(), &recorder), ZBRT_OK);
  ExpectError(zbrt_op_end(recorder, 0), ZBRT_ERROR_STATE, "op 0 (PP:1F0) of rank 1 was not");
  ExpectError(zbrt_op_begin(recorder, count), ZBRT_ERROR_OUT_OF_RANGE, "out of range");
  ExpectError(zbrt_op_begin(nullptr, 0), ZBRT_ERROR_INVALID_ARGUMENT, "recorder is null");
  ASSERT_EQ(zbrt_op_begin(recorder, 0), ZBRT_OK);
  ExpectError(zbrt_op_begin(recorder, 0), ZBRT_ERROR_STATE, "already begun");
  ExpectError(zbrt_iteration_begin(recorder, 0), ZBRT_ERROR_STATE, "1 ops begun");
  // Iteration numbers have the range-name contract's width (int32) end to end: a larger one is
  // refused at the ABI, not truncated in the store.
  ExpectError(zbrt_iteration_begin(recorder, int64_t{1} << 31), ZBRT_ERROR_OUT_OF_RANGE,
              "iteration must be in 0..2147483647, got 2147483648");
  ExpectError(zbrt_iteration_begin(recorder, -1), ZBRT_ERROR_OUT_OF_RANGE, "got -1");
  ExpectError(zbrt_iteration_end(recorder), ZBRT_ERROR_STATE, "no iteration begun");
  ExpectError(zbrt_record_memory(recorder, -5), ZBRT_ERROR_INVALID_ARGUMENT, "bytes must be");
  ASSERT_EQ(zbrt_op_end(recorder, 0), ZBRT_OK);
  ExpectError(zbrt_op_end(recorder, 0), ZBRT_ERROR_STATE, "was not begun");
  // A failed call leaves the message; a later success does not clear it.
  ASSERT_EQ(zbrt_op_begin(recorder, 1), ZBRT_OK);
  EXPECT_NE(std::string(zbrt_last_error()).find("was not begun"), std::string::npos);
  // Closing with an op open writes the rest and says so.
  ExpectError(zbrt_recorder_close(recorder), ZBRT_ERROR_STATE, "1 ops were begun and not ended");
  auto shard = zb::profiler::ReadShard(Path("rank1.zbshard"));
  ASSERT_TRUE(shard.ok()) << shard.status().message();
  ASSERT_EQ(shard->ranges.size(), 1u);
  EXPECT_EQ(shard->ranges[0].name, "PP:1F0");
  EXPECT_EQ(shard->process.rank, 1);
  EXPECT_EQ(zbrt_recorder_close(nullptr), ZBRT_OK);

  // A shard path whose directory does not exist fails at close, with the path.
  ASSERT_EQ(zbrt_recorder_open(schedule, 0, Path("no/such/dir/rank0.zbshard").c_str(), &recorder),
            ZBRT_OK);
  const zbrt_status closed = zbrt_recorder_close(recorder);
  EXPECT_NE(closed, ZBRT_OK);
  EXPECT_NE(std::string(zbrt_last_error()).find("no/such/dir"), std::string::npos)
      << zbrt_last_error();

  // Merge: every rank needed, a known schedule, an existing store.
  int64_t run = 0;
  ExpectError(zbrt_merge_run(StoreCopy().c_str(), h1_id_, Path("rank1.zbshard").c_str(), "x", &run),
              ZBRT_ERROR_NOT_FOUND, "no shard for rank 0 of 8");
  ExpectError(zbrt_merge_run(Path("copy.db").c_str(), 999, dir_.c_str(), "x", &run),
              ZBRT_ERROR_NOT_FOUND, "999");
  ExpectError(zbrt_merge_run(Path("nowhere.db").c_str(), h1_id_, dir_.c_str(), "x", &run),
              ZBRT_ERROR_NOT_FOUND, "no such store");
  EXPECT_FALSE(fs::exists(Path("nowhere.db")));
  ExpectError(zbrt_merge_run(Path("copy.db").c_str(), h1_id_, Path("empty").c_str(), "x", &run),
              ZBRT_ERROR_NOT_FOUND, "empty");
  // A shard of the V schedule's rank 1 (stages 1 and 14) is not a replay of zb-h1 (stage 1 only).
  zbrt_schedule* v = OpenStore(v_id_);
  ASSERT_NE(v, nullptr);
  fs::create_directories(Path("v"));
  ASSERT_EQ(zbrt_recorder_open(v, 1, Path("v/rank1.zbshard").c_str(), &recorder), ZBRT_OK);
  int64_t v_ops = 0;
  ASSERT_EQ(zbrt_rank_op_count(v, 1, &v_ops), ZBRT_OK);
  for (int64_t i = 0; i < v_ops; ++i) {
    ASSERT_EQ(zbrt_op_begin(recorder, i), ZBRT_OK);
    ASSERT_EQ(zbrt_op_end(recorder, i), ZBRT_OK);
  }
  ASSERT_EQ(zbrt_recorder_close(recorder), ZBRT_OK);
  zbrt_schedule_close(v);
  ExpectError(zbrt_merge_run(Path("copy.db").c_str(), h1_id_, Path("v").c_str(), "x", &run),
              ZBRT_ERROR_INVALID_INPUT, "stage 14 is not on rank 1");
  // Nothing of a failed merge is stored.
  auto copy = zb::Store::Open(Path("copy.db"), zb::Store::Mode::kReadOnly);
  ASSERT_TRUE(copy.ok());
  auto runs = copy->ListRuns();
  ASSERT_TRUE(runs.ok());
  EXPECT_TRUE(runs->empty());
  zbrt_schedule_close(schedule);
}

// zbrt_op_record: ops timed by something else (zb rehearse's emulated device) keep the given
// times, inside the iteration's range; open ops and times that run backwards are refused.
TEST_F(Zbrt, RecordedOpsKeepTheirGivenTimes) {
  zbrt_schedule* schedule = OpenStore(h1_id_);
  ASSERT_NE(schedule, nullptr);
  zbrt_recorder* recorder = nullptr;
  ASSERT_EQ(zbrt_recorder_open(schedule, 1, Path("rank1.zbshard").c_str(), &recorder), ZBRT_OK);
  const int64_t t0 = zbrt_now_ns();
  ASSERT_EQ(zbrt_iteration_begin(recorder, 0), ZBRT_OK);
  ASSERT_EQ(zbrt_op_record(recorder, 0, t0 + 1000, t0 + 5000), ZBRT_OK) << zbrt_last_error();
  ExpectError(zbrt_op_record(recorder, 1, t0 + 9, t0 + 3), ZBRT_ERROR_INVALID_ARGUMENT,
              "op 1 ends");
  ExpectError(zbrt_op_record(recorder, 1, -1, 3), ZBRT_ERROR_INVALID_ARGUMENT, "begins before 0");
  ExpectError(zbrt_op_record(nullptr, 1, 1, 3), ZBRT_ERROR_INVALID_ARGUMENT, "recorder is null");
  int64_t count = 0;
  ASSERT_EQ(zbrt_rank_op_count(schedule, 1, &count), ZBRT_OK);
  ExpectError(zbrt_op_record(recorder, count, 1, 3), ZBRT_ERROR_OUT_OF_RANGE, "out of range");
  ASSERT_EQ(zbrt_op_begin(recorder, 2), ZBRT_OK);
  ExpectError(zbrt_op_record(recorder, 2, t0, t0 + 1), ZBRT_ERROR_STATE,
              "op 2 (PP:1F2) of rank 1 is begun and not ended");
  ASSERT_EQ(zbrt_op_end(recorder, 2), ZBRT_OK);
  ASSERT_EQ(zbrt_op_record(recorder, 1, t0 + 6000, t0 + 6000), ZBRT_OK);  // zero length is fine
  ASSERT_EQ(zbrt_iteration_end(recorder), ZBRT_OK);
  ASSERT_EQ(zbrt_recorder_close(recorder), ZBRT_OK) << zbrt_last_error();
  auto shard = zb::profiler::ReadShard(Path("rank1.zbshard"));
  ASSERT_TRUE(shard.ok()) << shard.status().message();
  bool found = false;
  for (const auto& range : shard->ranges) {
    if (range.name != "PP:1F0") continue;
    found = true;
    EXPECT_EQ(range.start, t0 + 1000);
    EXPECT_EQ(range.end, t0 + 5000);
    EXPECT_EQ(range.depth, 1);  // inside the iteration's range
  }
  EXPECT_TRUE(found);
  zbrt_schedule_close(schedule);
}

TEST_F(Zbrt, ThreadsKeepTheirOwnLastError) {
  zbrt_schedule* handle = nullptr;
  ASSERT_NE(zbrt_schedule_open_file(Path("a.json").c_str(), &handle), ZBRT_OK);
  std::string other;
  std::thread([&] {
    other = zbrt_last_error();
    int32_t out = 0;
    (void)zbrt_schedule_ranks(nullptr, &out);
  }).join();
  EXPECT_EQ(other, "");
  EXPECT_NE(std::string(zbrt_last_error()).find("a.json"), std::string::npos);
}

// The key of an op in a timeline or a schedule.
using OpKey = std::tuple<int32_t, int32_t, int32_t, int32_t>;  // rank, stage, kind, microbatch

TEST_F(Zbrt, RecordedReplayMergesIntoOneRunOfTheSchedule) {
  const std::string db = StoreCopy();
  for (int64_t id : {h1_id_, v_id_}) {
    SCOPED_TRACE(id);
    zbrt_schedule* schedule = OpenStore(id);
    ASSERT_NE(schedule, nullptr);
    const std::string shards = Path("shards" + std::to_string(id));
    fs::create_directories(shards);
    constexpr int kIterations = 2;
    const int64_t spin[4] = {2000, 4000, 1000, 5000};
    Replay(schedule, shards, kIterations, spin);
    zbrt_schedule_close(schedule);

    int64_t run_id = 0;
    ASSERT_EQ(zbrt_merge_run(db.c_str(), id, shards.c_str(), "python train.py", &run_id), ZBRT_OK)
        << zbrt_last_error();
    EXPECT_GT(run_id, 0);

    auto store = zb::Store::Open(db, zb::Store::Mode::kReadOnly);
    ASSERT_TRUE(store.ok());
    auto runs = store->ListRuns();
    ASSERT_TRUE(runs.ok());
    const zb::RunInfo* run = nullptr;
    for (const zb::RunInfo& info : *runs) {
      if (info.id == run_id) run = &info;
    }
    ASSERT_NE(run, nullptr);
    EXPECT_EQ(run->kind, zb::RunKind::kReplay);
    EXPECT_EQ(run->command, "python train.py");
    ASSERT_TRUE(run->schedule_id.has_value());
    EXPECT_EQ(*run->schedule_id, id);
    // The run's job is the schedule's (`zb tune --job replay` on cluster "local").
    {
      auto writable = zb::Store::Open(db);
      ASSERT_TRUE(writable.ok());
      auto infos = writable->ListSchedules();
      ASSERT_TRUE(infos.ok());
      const zb::ScheduleInfo* owner = nullptr;
      for (const zb::ScheduleInfo& s : *infos) {
        if (s.id == id) owner = &s;
      }
      ASSERT_NE(owner, nullptr);
      EXPECT_EQ(owner->job, "replay");
      auto cluster = writable->EnsureCluster({owner->cluster, "", "", "", ""});
      ASSERT_TRUE(cluster.ok());
      auto job = writable->EnsureJob(*cluster, owner->job);
      ASSERT_TRUE(job.ok());
      EXPECT_EQ(run->job_id, *job);
    }
    auto timelines = store->ListTimelines();
    ASSERT_TRUE(timelines.ok());
    const zb::TimelineInfo* info = nullptr;
    for (const zb::TimelineInfo& t : *timelines) {
      if (t.run_id == run_id) info = &t;
    }
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(info->kind, zb::TimelineKind::kMeasured);
    auto timeline = store->LoadTimeline(info->id);
    ASSERT_TRUE(timeline.ok()) << timeline.status().message();
    auto expected = store->LoadSchedule(id);
    ASSERT_TRUE(expected.ok());

    // Every op of the schedule, once per iteration, with begin <= end and at least its spin.
    std::map<OpKey, int> seen;
    std::map<std::pair<OpKey, int32_t>, int> seen_in_iteration;  // each op once per iteration
    zb::TimeNs first = INT64_MAX;
    for (const zb::TimelineOp& op : timeline->ops) {
      ++seen_in_iteration[{{op.rank, op.stage, static_cast<int32_t>(op.kind), op.microbatch},
                           op.iteration}];
      EXPECT_GE(op.iteration, 0);
      EXPECT_LT(op.iteration, kIterations);
      EXPECT_LE(op.start, op.end);
      EXPECT_GE(op.end - op.start, spin[static_cast<int>(op.kind)]);
      first = std::min(first, op.start);
      ++seen[{op.rank, op.stage, static_cast<int32_t>(op.kind), op.microbatch}];
    }
    EXPECT_EQ(first, 0);
    EXPECT_EQ(static_cast<int64_t>(timeline->ops.size()), kIterations * expected->num_ops());
    for (int32_t rank = 0; rank < expected->ranks; ++rank) {
      const zb::RankProgram& program = expected->programs[rank];
      for (const zb::Op& op : program.ops) {
        const OpKey key{rank, program.stages[op.chunk], static_cast<int32_t>(op.kind),
                        op.microbatch};
        EXPECT_EQ(seen[key], kIterations)
            << "rank " << rank << " " << zb::OpKindName(op.kind) << " mb " << op.microbatch;
        for (int32_t iteration = 0; iteration < kIterations; ++iteration)
          EXPECT_EQ((seen_in_iteration[{key, iteration}]), 1) << "iteration " << iteration;
      }
    }
    // Ops by rank, then start; ranks recorded one after another never go back in time.
    for (size_t i = 1; i < timeline->ops.size(); ++i) {
      const auto& a = timeline->ops[i - 1];
      const auto& b = timeline->ops[i];
      EXPECT_TRUE(a.rank < b.rank || (a.rank == b.rank && a.start <= b.start));
    }
    // One memory sample per op, the recorded values.
    ASSERT_EQ(timeline->memory.size(), timeline->ops.size());
    EXPECT_EQ(timeline->memory.front().memory, 1000);
    for (const zb::MemorySample& sample : timeline->memory)
      EXPECT_GE(sample.memory, 0);
  }
}

TEST_F(Zbrt, ReplayWithoutIterationMarksSpillsAndKeepsEveryOp) {
  zbrt_schedule* schedule = OpenStore(h1_id_);
  ASSERT_NE(schedule, nullptr);
  int64_t count = 0;
  ASSERT_EQ(zbrt_rank_op_count(schedule, 0, &count), ZBRT_OK);
  zbrt_recorder* recorder = nullptr;
  ASSERT_EQ(zbrt_recorder_open(schedule, 0, Path("rank0.zbshard").c_str(), &recorder), ZBRT_OK);
  // Three passes, more marks than the buffer holds, with an op open across the spill.
  for (int pass = 0; pass < 3; ++pass) {
    for (int64_t i = 0; i < count; ++i) {
      ASSERT_EQ(zbrt_op_begin(recorder, i), ZBRT_OK) << zbrt_last_error();
      if (i > 0) {
        ASSERT_EQ(zbrt_op_end(recorder, i - 1), ZBRT_OK) << zbrt_last_error();
      }
    }
    ASSERT_EQ(zbrt_op_end(recorder, count - 1), ZBRT_OK);
  }
  ASSERT_EQ(zbrt_recorder_close(recorder), ZBRT_OK) << zbrt_last_error();
  auto shard = zb::profiler::ReadShard(Path("rank0.zbshard"));
  ASSERT_TRUE(shard.ok()) << shard.status().message();
  ASSERT_EQ(static_cast<int64_t>(shard->ranges.size()), 3 * count);
  zbrt_op op{};
  for (int64_t i = 0; i < 3 * count; ++i) {
    ASSERT_EQ(zbrt_rank_op(schedule, 0, i % count, &op), ZBRT_OK);
    const char* torch_letters[] = {"F", "I", "W", "B"};  // torch's labels for F, B, W, BW
    EXPECT_EQ(shard->ranges[i].name, "PP:" + std::to_string(op.stage) + torch_letters[op.kind] +
                                         std::to_string(op.microbatch));
    EXPECT_LE(shard->ranges[i].start, shard->ranges[i].end);
    // Overlapping neighbours: each op began while the previous one was open.
    EXPECT_EQ(shard->ranges[i].depth, i % count == 0 ? 0 : 1);
  }
  zbrt_schedule_close(schedule);
}

TEST_F(Zbrt, ZbImportDerivesCostsFromReplayShards) {
  zbrt_schedule* schedule = OpenStore(h1_id_);
  ASSERT_NE(schedule, nullptr);
  const std::string shards = Path("shards");
  fs::create_directories(shards);
  const int64_t spin[4] = {20'000, 40'000, 10'000, 50'000};
  Replay(schedule, shards, 2, spin);
  zbrt_schedule_close(schedule);

  Result import = RunZb(
      dir_, "import '" + shards + "' --format shards --json --out '" + Path("costs.json") + "'");
  ASSERT_EQ(import.code, 0) << import.err;
  EXPECT_EQ(nlohmann::json::parse(import.out)["iterations"]["seen"], 2);
  const nlohmann::json costs = nlohmann::json::parse(ReadFile(Path("costs.json")));
  EXPECT_EQ(costs["format"], "zb-costs/1");
  // One entry per stage (or one uniform entry with a count).
  int stages = 0;
  for (const auto& stage : costs["stages"]) {
    stages += stage.contains("count") ? stage["count"].get<int>() : 1;
    // Medians of spun ops are at least the spin.
    EXPECT_GE(stage["F"].get<double>(), 0.020) << stage;
    EXPECT_GE(stage["B"].get<double>(), 0.040) << stage;
    EXPECT_GE(stage["W"].get<double>(), 0.010) << stage;
  }
  EXPECT_EQ(stages, 8);
}

// ---- Under the profiler: libzbrt's NVTX ranges reach the injection library ------------------

// The job `zb profile` runs: this binary replaying rank RANK of ZBKIT_ZBRT_JOB_SCHEDULE for two
// iterations (disabled so ctest never lists it; the test below runs it with
// --gtest_also_run_disabled_tests).
TEST(ZbrtReplayJob, DISABLED_Run) {
  const char* path = std::getenv("ZBKIT_ZBRT_JOB_SCHEDULE");
  const char* rank_text = std::getenv("RANK");
  if (path == nullptr || rank_text == nullptr) GTEST_SKIP() << "only as zb profile's job";
  zbrt_schedule* schedule = nullptr;
  ASSERT_EQ(zbrt_schedule_open_file(path, &schedule), ZBRT_OK) << zbrt_last_error();
  const std::string shard = fs::path(path).parent_path() / "own.zbshard";
  zbrt_recorder* recorder = nullptr;
  const int32_t rank = std::atoi(rank_text);
  ASSERT_EQ(zbrt_recorder_open(schedule, rank, shard.c_str(), &recorder), ZBRT_OK)
      << zbrt_last_error();
  int64_t count = 0;
  ASSERT_EQ(zbrt_rank_op_count(schedule, rank, &count), ZBRT_OK);
  for (int iteration = 0; iteration < 2; ++iteration) {
    ASSERT_EQ(zbrt_iteration_begin(recorder, iteration), ZBRT_OK);
    for (int64_t i = 0; i < count; ++i) {
      ASSERT_EQ(zbrt_op_begin(recorder, i), ZBRT_OK);
      Spin(10'000);
      ASSERT_EQ(zbrt_op_end(recorder, i), ZBRT_OK);
    }
    ASSERT_EQ(zbrt_iteration_end(recorder), ZBRT_OK);
  }
  ASSERT_EQ(zbrt_recorder_close(recorder), ZBRT_OK) << zbrt_last_error();
  zbrt_schedule_close(schedule);
}

TEST_F(Zbrt, NvtxRangesAreAttributedUnderZbProfile) {
#ifndef ZBKIT_ZBRT_HAS_NVTX
  GTEST_SKIP() << "not a CUDA build: libzbrt has no NVTX ranges";
#else
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  const std::string schedule = Path("zb-h1.json");
  fs::copy_file(h1_file(), schedule);
  // The job's environment goes through env(1): zb profile passes it on to the job.
  Result run = RunZb(dir_, "profile --json --shard-dir '" + Path("inject2") + "' -- env RANK=2" +
                               " ZBKIT_ZBRT_JOB_SCHEDULE='" + schedule + "' '" + self +
                               "' --gtest_also_run_disabled_tests" +
                               " --gtest_filter=ZbrtReplayJob.DISABLED_Run");
  ASSERT_EQ(run.code, 0) << run.err << run.out;
  const size_t json_start = run.out.find("{\n");
  ASSERT_NE(json_start, std::string::npos) << run.out;
  const nlohmann::json report = nlohmann::json::parse(run.out.substr(json_start));
  zbrt_schedule* handle = nullptr;
  ASSERT_EQ(zbrt_schedule_open_file(schedule.c_str(), &handle), ZBRT_OK);
  int64_t count = 0;
  ASSERT_EQ(zbrt_rank_op_count(handle, 2, &count), ZBRT_OK);
  zbrt_schedule_close(handle);
  // Every mark of both iterations, named by the contract, seen by the injection library.
  EXPECT_EQ(report["ops_by_family"]["torch-pp"], 2 * count) << report.dump();
  EXPECT_EQ(report["iterations"]["seen"], 2);
  // And libzbrt's own shard of the same run says the same.
  auto own = zb::profiler::ReadShard(Path("own.zbshard"));
  ASSERT_TRUE(own.ok()) << own.status().message();
  EXPECT_EQ(static_cast<int64_t>(own->ranges.size()), 2 * count + 2);  // + 2 iteration ranges
#endif
}

}  // namespace
