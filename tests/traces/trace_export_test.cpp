// SPDX-License-Identifier: Apache-2.0
// zb trace: every family's prediction and a measured run out to Perfetto (checked: no overlapping
// slices on any track, every flow closed inside slices, counters in time order) and to Kineto per
// rank, read back by zb import's own reader op for op (kind, stage, microbatch, iteration, start,
// end, busy time). Through the real binary where the user would use it; the round trip compares
// with the store's own timeline.
#include "zbkit/traces/trace_export.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "assert_ok.h"
#include "temp_dir.h"
#include "zb_command.h"
#include "zbkit/profiler/analyze.h"
#include "zbkit/profiler/import.h"
#include "zbkit/schemas/store.h"

namespace zb::traces {
using profiler::Analyze;
using profiler::AnalyzeSettings;
using profiler::ImportChromeTraceDirectory;
using profiler::ReadMaybeGzipFile;
namespace {

namespace fs = std::filesystem;

using testing_support::RunZb;
using testing_support::ZbResult;
std::string ReadFile(const std::string& path) {
  return testing_support::ReadWholeFile(path);
}

class TraceExport : public ::testing::Test {
 protected:
  ZbResult Zb(const std::string& args) { return RunZb(args, temp_.path()); }
  std::string Path(const std::string& name) const { return temp_.Path(name); }

  // What zb import's reader makes of a directory of Kineto traces: the measured timeline.
  Timeline Reimport(const std::string& dir) {
    std::vector<std::string> skipped;
    auto traces = ImportChromeTraceDirectory(dir, skipped);
    EXPECT_TRUE(traces.ok()) << traces.status().message();
    EXPECT_TRUE(skipped.empty());
    auto analysis = Analyze(*traces, dir, AnalyzeSettings{});
    EXPECT_TRUE(analysis.ok()) << analysis.status().message();
    return analysis.ok() ? analysis->report.timeline : Timeline{};
  }

  testing_support::TempDir temp_;
};

using OpKey = std::tuple<int32_t, int32_t, int, int32_t, int32_t>;  // rank, iter, kind, stage, mb

std::vector<std::pair<OpKey, const TimelineOp*>> Keyed(const Timeline& timeline) {
  std::vector<std::pair<OpKey, const TimelineOp*>> keyed;
  for (const TimelineOp& op : timeline.ops) {
    keyed.push_back(
        {{op.rank, op.iteration, static_cast<int>(op.kind), op.stage, op.microbatch}, &op});
  }
  std::sort(keyed.begin(), keyed.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return keyed;
}

// Op for op: the same ops, each starting and ending within 1 us (exactly, here) with the same busy
// time. Both timelines count from their first op.
void ExpectSameTimeline(const Timeline& original, const Timeline& back) {
  const auto a = Keyed(original);
  const auto b = Keyed(back);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].first, b[i].first) << "op " << i;
    const TimelineOp& x = *a[i].second;
    const TimelineOp& y = *b[i].second;
    EXPECT_LE(std::llabs(x.start - y.start), 1000) << "op " << i;
    EXPECT_LE(std::llabs(x.end - y.end), 1000) << "op " << i;
    EXPECT_EQ(x.start, y.start) << "op " << i;
    EXPECT_EQ(x.end, y.end) << "op " << i;
    EXPECT_EQ(x.BusyTime(), y.BusyTime()) << "op " << i;
  }
}

TEST_F(TraceExport, EveryFamilyExportsCleanTracesThatReadBackOpForOp) {
  const std::string costs = std::string(ZBKIT_TEST_DATA_DIR) + "/costs/uniform4.json";
  const std::string store = Path("zb.db");
  // Loop and V placements, one and two chunks per rank, fused and split backward.
  const std::vector<std::string> families = {"1f1b",    "1f1b-i", "zb-h1",  "zb-h2",
                                             "zb-auto", "zb-v",   "v-half", "v-min"};
  for (const std::string& family : families) {
    ZbResult tuned =
        Zb("tune --costs '" + costs + "' -m 8 --mem-limit none --layout any --family " + family +
           " --store '" + store + "'");
    ASSERT_EQ(tuned.code, 0) << family << ": " << tuned.err;
  }
  ZB_ASSERT_OK_AND_ASSIGN(Store opened, Store::Open(store, Store::Mode::kReadOnly));
  ZB_ASSERT_OK_AND_ASSIGN(std::vector<ScheduleInfo> schedules, opened.ListSchedules());
  ASSERT_EQ(schedules.size(), families.size());
  for (const ScheduleInfo& info : schedules) {
    SCOPED_TRACE(info.family);
    const std::string id = std::to_string(info.id);
    const std::string perfetto = Path("s" + id + ".json");
    ASSERT_EQ(Zb("trace --store '" + store + "' --schedule " + id + " --format perfetto -o '" +
                 perfetto + "'")
                  .code,
              0);
    auto check = CheckChromeTrace(ReadFile(perfetto), perfetto);
    ASSERT_TRUE(check.ok()) << check.status().message();
    EXPECT_EQ(check->overlapping, 0) << (check->problems.empty() ? "" : check->problems[0]);
    EXPECT_EQ(check->nested, 0);
    EXPECT_EQ(check->unclosed_flows, 0);
    EXPECT_EQ(check->counters_out_of_order, 0);
    EXPECT_GT(check->flows, 0);
    EXPECT_GT(check->counters, 0);
    // Ops, iteration markers and bubbles are all slices; every op is one.
    EXPECT_GE(check->slices, info.num_ops);
    // The command's own check agrees.
    EXPECT_EQ(Zb("trace --check '" + perfetto + "'").code, 0);

    const std::string kineto = Path("k" + id);
    ASSERT_EQ(Zb("trace --store '" + store + "' --schedule " + id + " --format kineto -o '" +
                 kineto + "'")
                  .code,
              0);
    for (int rank = 0; rank < info.ranks; ++rank) {
      const std::string text = ReadFile(kineto + "/rank" + std::to_string(rank) + ".json");
      // HTA reads the rank with the regex "rank":\s+(\d+).
      EXPECT_NE(text.find("\"rank\": " + std::to_string(rank) + ","), std::string::npos);
    }
    ZB_ASSERT_OK_AND_ASSIGN(Schedule schedule, opened.LoadSchedule(info.id));
    ExpectSameTimeline(TimelineFromSchedule(schedule), Reimport(kineto));
  }
}

// A measured run with several iterations, ops whose device was busy for only part of their span
// (kernels launched from the autograd thread, gaps between them) and ops that overlap on a rank:
// the public DDP trace, imported, stored, exported and read back.
TEST_F(TraceExport, AMeasuredRunReadsBackOpForOpWithItsBusyTimes) {
  std::ofstream(Path("rules.json"))
      << R"([{"regex": "^## forward ##$", "kind": "F"}, {"regex": "^## backward ##$", "kind": "BW"}])";
  const std::string store = Path("zb.db");
  ZbResult imported = Zb("import '" + std::string(ZBKIT_TEST_DATA_DIR) +
                         "/traces/kineto_ddp_nccl_rank-0.json.gz' --rules '" + Path("rules.json") +
                         "' --store '" + store + "'");
  ASSERT_EQ(imported.code, 0) << imported.err;
  ZbResult exported =
      Zb("trace --store '" + store + "' --run 1 --format kineto -o '" + Path("k") + "'");
  ASSERT_EQ(exported.code, 0) << exported.err;
  ZB_ASSERT_OK_AND_ASSIGN(Store opened, Store::Open(store, Store::Mode::kReadOnly));
  ZB_ASSERT_OK_AND_ASSIGN(Timeline original, opened.LoadTimeline(1));
  ASSERT_EQ(original.ops.size(), 27u);  // 3 F, 3 BW, 21 NCCL kernels of no named range
  bool partly_busy = false;
  for (const TimelineOp& op : original.ops)
    partly_busy = partly_busy || op.BusyTime() < op.end - op.start;
  EXPECT_TRUE(partly_busy);
  ExpectSameTimeline(original, Reimport(Path("k")));

  // One iteration: renumbered 0, shifted to start at 0.
  ASSERT_EQ(Zb("trace --store '" + store + "' --run 1 --iteration 2 --format perfetto -o '" +
               Path("one.json") + "'")
                .code,
            0);
  const nlohmann::json one = nlohmann::json::parse(ReadFile(Path("one.json")));
  int ops = 0;
  for (const nlohmann::json& event : one["traceEvents"]) {
    if (event.value("cat", "") != "zb.op") continue;
    ++ops;
    EXPECT_EQ(event["args"]["iteration"], 0);
  }
  EXPECT_EQ(ops, std::count_if(original.ops.begin(), original.ops.end(),
                               [](const TimelineOp& op) { return op.iteration == 2; }));
  EXPECT_GT(ops, 2);
}

TEST_F(TraceExport, APredictionBesideTheMeasuredRunIsOneTraceRankByRank) {
  // A replayed schedule's measured timeline is stored under it; here the prediction itself
  // stands in for the measurement (InsertTimeline with the schedule id).
  const std::string costs = std::string(ZBKIT_TEST_DATA_DIR) + "/costs/uniform4.json";
  const std::string store = Path("zb.db");
  ASSERT_EQ(Zb("tune --costs '" + costs + "' -m 8 --mem-limit 2x --layout any --family zb-v " +
               "--store '" + store + "'")
                .code,
            0);
  {
    ZB_ASSERT_OK_AND_ASSIGN(Store opened, Store::Open(store));
    ZB_ASSERT_OK_AND_ASSIGN(Schedule schedule, opened.LoadSchedule(1));
    Timeline measured = TimelineFromSchedule(schedule);
    measured.kind = TimelineKind::kMeasured;
    for (TimelineOp& op : measured.ops)
      op.end += 1000;  // a slower run
    ZB_ASSERT_OK_AND_ASSIGN(int64_t id, opened.InsertTimeline(1, measured));
    EXPECT_EQ(id, 2);
  }
  ZbResult both =
      Zb("trace --store '" + store + "' --timeline 2 --with-prediction --format perfetto -o '" +
         Path("b.json") + "'");
  ASSERT_EQ(both.code, 0) << both.err;
  const nlohmann::json doc = nlohmann::json::parse(ReadFile(Path("b.json")));
  std::vector<std::string> processes;
  int counters_with_cap = 0;
  for (const nlohmann::json& event : doc["traceEvents"]) {
    if (event.value("ph", "") == "M" && event.value("name", "") == "process_name") {
      processes.push_back(event["args"]["name"].get<std::string>());
    }
    // The memory held, beside the cap the schedule was tuned under (2x 1F1B's peak: 16).
    if (event.value("ph", "") == "C") {
      EXPECT_LE(event["args"]["held"].get<double>(), event["args"]["cap"].get<double>());
      counters_with_cap += event["args"]["cap"].get<double>() == 16.0;
    }
  }
  EXPECT_GT(counters_with_cap, 0);
  std::sort(processes.begin(), processes.end());
  ASSERT_EQ(processes.size(), 8u);
  EXPECT_EQ(processes.front(), "rank 0 · measured");
  EXPECT_EQ(processes[1], "rank 0 · predicted");
  auto check = CheckChromeTrace(ReadFile(Path("b.json")), "b.json");
  ASSERT_TRUE(check.ok());
  EXPECT_TRUE(check->ok()) << (check->problems.empty() ? "" : check->problems[0]);
}

TEST_F(TraceExport, BadInputIsOneLineAndWritesNothing) {
  const std::string costs = std::string(ZBKIT_TEST_DATA_DIR) + "/costs/uniform4.json";
  const std::string store = Path("zb.db");
  ASSERT_EQ(
      Zb("tune --costs '" + costs + "' -m 4 --mem-limit none --family 1f1b --store '" + store + "'")
          .code,
      0);
  struct Case {
    std::string args;
    int code;
    std::string starts;
  };
  const std::vector<Case> cases = {
      {"--store '" + store + "' --run 7 --format perfetto -o '" + Path("x.json") + "'", 1,
       "zb trace: "},
      {"--store '" + store + "' --timeline 9 --format kineto -o '" + Path("x") + "'", 1,
       "zb trace: " + store + ": load timeline info: no timeline with id 9"},
      {"--store '" + store + "' --schedule 1 --iteration 3 --format perfetto -o '" +
           Path("x.json") + "'",
       1, "zb trace: "},
      {"--store '" + store + "' --schedule 1 --format svg -o '" + Path("x.json") + "'", 2,
       "zb trace: --format svg: give perfetto or kineto"},
      {"--store '" + store + "' --schedule 1 --iteration 1x --format perfetto -o '" +
           Path("x.json") + "'",
       2, "zb trace: --iteration 1x: give an iteration number or 'all'"},
      {"--store '" + Path("missing.db") + "' --schedule 1 --format perfetto -o '" + Path("x.json") +
           "'",
       1, "zb trace: "},
  };
  for (const Case& c : cases) {
    ZbResult result = Zb("trace " + c.args);
    EXPECT_EQ(result.code, c.code) << c.args << "\n" << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
    EXPECT_EQ(result.err.rfind(c.starts, 0), 0u) << result.err;
    EXPECT_FALSE(fs::exists(Path("x.json")));
    EXPECT_FALSE(fs::exists(Path("x")));
  }
  // An empty timeline: stored, then refused.
  {
    ZB_ASSERT_OK_AND_ASSIGN(Store opened, Store::Open(store));
    Timeline empty;
    empty.kind = TimelineKind::kMeasured;
    ZB_ASSERT_OK_AND_ASSIGN(int64_t id, opened.InsertTimeline(std::nullopt, empty));
    ZbResult result = Zb("trace --store '" + store + "' --timeline " + std::to_string(id) +
                         " --format perfetto -o '" + Path("x.json") + "'");
    EXPECT_EQ(result.code, 1);
    EXPECT_NE(result.err.find("the timeline has no ops"), std::string::npos) << result.err;
    EXPECT_FALSE(fs::exists(Path("x.json")));
  }
}

// The check reads any Chrome trace without throwing, whatever its fields' types, and tells a slice
// that nests (Perfetto stacks it) from one that overlaps its neighbour (Perfetto drops it).
TEST(TraceCheck, TellsNestingFromOverlapAndSurvivesOddFields) {
  auto check = CheckChromeTrace(R"({"traceEvents": [
      {"ph": "X", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
      {"ph": "X", "pid": 1, "tid": 1, "ts": 2, "dur": 3},
      {"ph": "X", "pid": 1, "tid": 1, "ts": 8, "dur": 5},
      {"ph": "X", "pid": "Spans", "tid": "main", "ts": "12", "dur": null},
      {"ph": 7}, [], {"ph": "s", "id": "a", "pid": 1, "tid": 1, "ts": 1},
      {"ph": "f", "bp": "e", "id": "a", "pid": 1, "tid": 1, "ts": 9},
      {"ph": "f", "id": 5, "pid": 1, "tid": 1, "ts": 9},
      {"ph": "C", "pid": 1, "name": "m", "ts": 5}, {"ph": "C", "pid": 1, "name": "m", "ts": 4}]})",
                                "odd.json");
  ASSERT_TRUE(check.ok()) << check.status().message();
  EXPECT_EQ(check->slices, 4);
  EXPECT_EQ(check->nested, 1);
  EXPECT_EQ(check->overlapping, 1);
  EXPECT_EQ(check->flows, 1);
  EXPECT_EQ(check->unclosed_flows, 1);  // the finish without a start
  EXPECT_EQ(check->counters_out_of_order, 1);
  EXPECT_FALSE(check->ok());
  EXPECT_FALSE(CheckChromeTrace("{", "bad.json").ok());
  EXPECT_FALSE(CheckChromeTrace(R"({"traceEvents": 3})", "bad.json").ok());

  // A trace the PyTorch profiler wrote (HTA's test data): its operators nest on their threads.
  auto text = ReadMaybeGzipFile(std::string(ZBKIT_TEST_DATA_DIR) +
                                "/traces/kineto_ddp_nccl_rank-0.json.gz");
  ASSERT_TRUE(text.ok());
  auto kineto = CheckChromeTrace(*text, "kineto");
  ASSERT_TRUE(kineto.ok());
  EXPECT_GT(kineto->slices, 10000);
  EXPECT_GT(kineto->nested, 1000);
}

}  // namespace
}  // namespace zb::traces
