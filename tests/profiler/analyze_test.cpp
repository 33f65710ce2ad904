// SPDX-License-Identifier: Apache-2.0
// zb::profiler::Analyze and StoreAnalysis called as the runtime and the adapters call them,
// without the CLI: a hand-built two-rank trace in, costs, ops, timeline and the store out.
#include "zbkit/profiler/analyze.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "raw_db.h"
#include "zbkit/schemas/store.h"

namespace zb::profiler {
namespace {

namespace fs = std::filesystem;

// Two ranks, two microbatches, F/B/W on each rank's one stage as CPU-only ranges (their own
// duration is the op's time): F 700 ns, B 900 ns, W 400 ns on rank 0, twice that on rank 1.
std::vector<RawTrace> TwoRankJob() {
  std::vector<RawTrace> traces(2);
  for (int rank = 0; rank < 2; ++rank) {
    traces[rank].process.rank = rank;
    traces[rank].process.pid = 100 + rank;
    const TimeNs scale = rank + 1;
    TimeNs t = 0;
    for (int mb = 0; mb < 2; ++mb) {
      const std::string suffix = ":s" + std::to_string(rank) + ":mb" + std::to_string(mb);
      traces[rank].ranges.push_back({"zb:F" + suffix, "", 1, t, t + 700 * scale, 0});
      t += 1000 * scale;
      traces[rank].ranges.push_back({"zb:B" + suffix, "", 1, t, t + 900 * scale, 0});
      t += 1000 * scale;
      traces[rank].ranges.push_back({"zb:W" + suffix, "", 1, t, t + 400 * scale, 0});
      t += 1000 * scale;
    }
  }
  return traces;
}

TEST(Analyze, CostsOpsAndTimelineFromTraces) {
  auto analysis = Analyze(TwoRankJob(), "two-rank job", {});
  ASSERT_TRUE(analysis.ok()) << analysis.status().message();
  EXPECT_EQ(analysis->source, "two-rank job");
  EXPECT_EQ(analysis->processes, 2u);
  EXPECT_EQ(analysis->ranges, 12u);
  EXPECT_EQ(analysis->attribution.ops.size(), 12u);
  EXPECT_EQ(analysis->report.ranks, 2);
  EXPECT_TRUE(analysis->report.split);
  ASSERT_EQ(analysis->costs.num_stages(), 2);
  EXPECT_EQ(analysis->costs.stages[0].f, 700);
  EXPECT_EQ(analysis->costs.stages[0].b, 900);
  EXPECT_EQ(analysis->costs.stages[0].w, 400);
  EXPECT_EQ(analysis->costs.stages[1].f, 1400);
  EXPECT_EQ(analysis->costs, analysis->report.ToCostProfile());
  EXPECT_EQ(analysis->report.timeline.kind, TimelineKind::kMeasured);
  EXPECT_EQ(analysis->report.timeline.ops.size(), 12u);
}

// A job stopped mid-step: its last iteration range never ended, and the ops it got to after the
// last complete step (F and B of microbatch 0 again) are one more, unfinished iteration, left out
// of the costs with a note.
TEST(Analyze, AnIterationCutShortIsLeftOutWithANote) {
  std::vector<RawTrace> traces(1);
  RawTrace& trace = traces[0];
  trace.process.rank = 0;
  TimeNs t = 0;
  auto op = [&](const std::string& kind, int mb, TimeNs length) {
    trace.ranges.push_back({"zb:" + kind + ":s0:mb" + std::to_string(mb), "", 1, t, t + length, 1});
    t += length + 10;
  };
  for (int iteration = 0; iteration < 3; ++iteration) {
    const TimeNs start = t;
    for (int mb = 0; mb < 2; ++mb) {
      op("F", mb, 100);
      op("B", mb, 200);
      op("W", mb, 50);
    }
    trace.ranges.push_back({"zb:iter:" + std::to_string(iteration), "", 1, start, t, 0});
    t += 100;
  }
  op("F", 0, 1000);  // the stopped step: far slower, and never finished
  op("B", 0, 2000);
  auto analysis = Analyze(traces, "job", {});
  ASSERT_TRUE(analysis.ok()) << analysis.status().message();
  EXPECT_EQ(analysis->report.iterations_seen, 4);
  EXPECT_EQ(analysis->report.iterations_used, 3);
  EXPECT_EQ(analysis->report.stages[0].f.samples, 6);
  EXPECT_EQ(analysis->report.stages[0].f.median, 100);
  EXPECT_NE(std::find(analysis->report.notes.begin(), analysis->report.notes.end(),
                      "rank 0: the last iteration (3) was cut short (2 of 6 ops): left out"),
            analysis->report.notes.end());
}

// Records a process lost are reported, per process, beside the costs derived from the rest.
TEST(Analyze, LostRecordsAreReported) {
  std::vector<RawTrace> traces = TwoRankJob();
  auto clean = Analyze(traces, "job", {});
  ASSERT_TRUE(clean.ok()) << clean.status().message();
  for (const std::string& note : clean->report.notes)
    EXPECT_EQ(note.find("lost"), std::string::npos) << note;
  traces[1].dropped_records = 4096;
  auto lossy = Analyze(traces, "job", {});
  ASSERT_TRUE(lossy.ok()) << lossy.status().message();
  const std::string expected = "rank " + std::to_string(traces[1].process.rank) +
                               " lost 4096 records (the profiler's buffers were full): the costs "
                               "come from what was kept";
  EXPECT_NE(std::find(lossy->report.notes.begin(), lossy->report.notes.end(), expected),
            lossy->report.notes.end());
  EXPECT_EQ(lossy->costs, clean->costs);
}

TEST(Analyze, NothingRecognizedKeepsTheExactError) {
  std::vector<RawTrace> traces(1);
  traces[0].ranges.push_back({"optimizer.step", "", 1, 0, 100, 0});
  auto analysis = Analyze(traces, "job.json", {});
  ASSERT_FALSE(analysis.ok());
  EXPECT_EQ(analysis.status().code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(analysis.status().message().rfind(std::string(kNoPipelineOps) + " in job.json", 0), 0u)
      << analysis.status().message();
}

// What a user needs to write --rules: the most frequent range names, with their counts; no
// --rules advice where there is nothing to map (no traces, or traces without ranges).
TEST(Analyze, NothingRecognizedSaysWhatThereWas) {
  std::vector<RawTrace> traces(2);
  for (int i = 0; i < 7; ++i)
    traces[i % 2].ranges.push_back({"fwd_chunk", "", 1, i, i + 1, 0});
  for (int i = 0; i < 3; ++i)
    traces[0].ranges.push_back({"bwd_chunk", "", 1, i, i + 1, 0});
  traces[1].ranges.push_back({"optimizer.step", "", 1, 0, 100, 0});
  auto named = Analyze(traces, "job", {});
  ASSERT_FALSE(named.ok());
  EXPECT_EQ(named.status().message(),
            std::string(kNoPipelineOps) +
                " in job: 2 process(es), 11 ranges; most frequent names: \"fwd_chunk\" x7, "
                "\"bwd_chunk\" x3, \"optimizer.step\" x1; give --rules FILE to map range names "
                "to F/B/W/BW");

  auto none = Analyze({}, "empty/", {});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(),
            std::string(kNoPipelineOps) + " in empty/: it holds no traces");

  auto bare = Analyze(std::vector<RawTrace>(1), "bare", {});
  ASSERT_FALSE(bare.ok());
  EXPECT_EQ(bare.status().message().find("--rules"), std::string::npos) << bare.status().message();
  EXPECT_NE(bare.status().message().find("0 ranges"), std::string::npos);
}

TEST(Analyze, SkippingEveryIterationFailsNamingTheSource) {
  AnalyzeSettings settings;
  settings.costs.skip_iters = 1000;
  auto analysis = Analyze(TwoRankJob(), "two-rank job", settings);
  ASSERT_FALSE(analysis.ok());
  EXPECT_EQ(analysis.status().message().rfind("two-rank job", 0), 0u)
      << analysis.status().message();
}

class StoreAnalysisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/zbkit_analyze_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(StoreAnalysisTest, RunProfileAndMeasuredTimelineLandLinked) {
  auto analysis = Analyze(TwoRankJob(), "two-rank job", {});
  ASSERT_TRUE(analysis.ok()) << analysis.status().message();
  const std::string path = dir_ + "/zb.db";
  auto stored = StoreAnalysis(*analysis, {path, "lab", "job"}, {RunKind::kImport, "trace.json", 0});
  ASSERT_TRUE(stored.ok()) << stored.status().message();

  auto store = Store::Open(path, Store::Mode::kReadOnly);
  ASSERT_TRUE(store.ok()) << store.status().message();
  auto profiles = store->ListCostProfiles();
  ASSERT_TRUE(profiles.ok());
  ASSERT_EQ(profiles->size(), 1u);
  EXPECT_EQ((*profiles)[0].id, stored->profile_id);
  EXPECT_EQ((*profiles)[0].cluster, "lab");
  EXPECT_EQ((*profiles)[0].job, "job");
  EXPECT_EQ((*profiles)[0].name, "job");
  ASSERT_TRUE((*profiles)[0].run_id.has_value());
  EXPECT_EQ(*(*profiles)[0].run_id, stored->run_id);
  auto costs = store->LoadCostProfile(stored->profile_id);
  ASSERT_TRUE(costs.ok());
  EXPECT_EQ(*costs, analysis->costs);
  auto timeline = store->LoadTimeline(stored->timeline_id);
  ASSERT_TRUE(timeline.ok()) << timeline.status().message();
  EXPECT_EQ(timeline->ops.size(), analysis->report.timeline.ops.size());
  auto runs = store->ListRuns();
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].id, stored->run_id);
  EXPECT_EQ((*runs)[0].kind, RunKind::kImport);
  EXPECT_EQ((*runs)[0].command, "trace.json");
  EXPECT_EQ((*runs)[0].exit_code, std::optional<int>(0));
}

TEST_F(StoreAnalysisTest, ATimelineTheStoreRefusesLeavesNoRunProfileOrJob) {
  auto analysis = Analyze(TwoRankJob(), "two-rank job", {});
  ASSERT_TRUE(analysis.ok()) << analysis.status().message();
  const std::string path = dir_ + "/zb.db";
  // A job already there, so that the store file exists with something to keep.
  ASSERT_TRUE(
      StoreAnalysis(*analysis, {path, "lab", "first"}, {RunKind::kImport, "a.json", 0}).ok());
  // The timeline is written last; an op ending before it starts breaks the table's CHECK.
  Analysis broken = *analysis;
  ASSERT_FALSE(broken.report.timeline.ops.empty());
  broken.report.timeline.ops.back().end = broken.report.timeline.ops.back().start - 1;
  auto stored =
      StoreAnalysis(broken, {path, "other-lab", "second"}, {RunKind::kImport, "b.json", 0});
  ASSERT_FALSE(stored.ok());
  EXPECT_NE(stored.status().message().find("CHECK constraint failed"), std::string::npos)
      << stored.status().message();

  auto store = Store::Open(path, Store::Mode::kReadOnly);
  ASSERT_TRUE(store.ok()) << store.status().message();
  auto runs = store->ListRuns();
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].job, "first");
  auto profiles = store->ListCostProfiles();
  ASSERT_TRUE(profiles.ok());
  ASSERT_EQ(profiles->size(), 1u);
  EXPECT_EQ((*profiles)[0].job, "first");
  auto timelines = store->ListTimelines();
  ASSERT_TRUE(timelines.ok());
  EXPECT_EQ(timelines->size(), 1u);
  // Nor the cluster and job the failed import named.
  testing_support::RawDb raw(path);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM clusters WHERE name = 'other-lab'"), 0);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM jobs WHERE name = 'second'"), 0);
}

TEST_F(StoreAnalysisTest, ReadShardDirectorySkipsUnreadableShards) {
  std::ofstream(dir_ + "/rank0.zbshard") << "not a shard";
  std::vector<std::string> skipped;
  auto traces = ReadShardDirectory(dir_, skipped);
  ASSERT_TRUE(traces.ok()) << traces.status().message();
  EXPECT_TRUE(traces->empty());
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("rank0.zbshard"), std::string::npos) << skipped[0];

  std::vector<std::string> none;
  EXPECT_FALSE(ReadShardDirectory(dir_ + "/absent", none).ok());
}

// zb import DIR without --format: shards where there are any, else the Chrome traces
// (torch.profiler's *.pt.trace.json.gz among them), else one error saying what the directory holds.
TEST_F(StoreAnalysisTest, ReadTraceDirectoryTakesShardsElseChromeTracesElseSaysWhatIsThere) {
  std::vector<std::string> skipped;
  auto empty = ReadTraceDirectory(dir_, skipped);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().message(),
            std::string(kNoPipelineOps) + " in " + dir_ +
                ": it holds no traces (no *.zbshard, *.json or *.json.gz; it is empty)");

  for (const char* name : {"notes.txt", "b.log", "c.csv", "d.md", "e.ini", "f.cfg"})
    std::ofstream(dir_ + "/" + name) << "x";
  fs::create_directories(dir_ + "/sub");
  auto other = ReadTraceDirectory(dir_, skipped);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find(
                "it holds no traces (no *.zbshard, *.json or *.json.gz; 7 other entries: b.log, "
                "c.csv, d.md, e.ini, f.cfg, ...)"),
            std::string::npos)
      << other.status().message();

  std::ofstream(dir_ + "/host_12.1796.pt.trace.json") << R"({"traceEvents": [
      {"ph": "X", "cat": "user_annotation", "name": "PP:0F0", "pid": 1, "tid": 1, "ts": 10,
       "dur": 5}], "distributedInfo": {"rank": 0, "world_size": 1}})";
  auto chrome = ReadTraceDirectory(dir_, skipped);
  ASSERT_TRUE(chrome.ok()) << chrome.status().message();
  ASSERT_EQ(chrome->size(), 1u);
  EXPECT_EQ(chrome->front().ranges.size(), 1u);

  std::ofstream(dir_ + "/rank0.zbshard") << "not a shard";
  skipped.clear();
  auto shards = ReadTraceDirectory(dir_, skipped);
  ASSERT_TRUE(shards.ok()) << shards.status().message();
  EXPECT_TRUE(shards->empty());  // the shard was read (and skipped), not the Chrome trace
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("rank0.zbshard"), std::string::npos) << skipped[0];
}

}  // namespace
}  // namespace zb::profiler
