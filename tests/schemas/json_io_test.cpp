// SPDX-License-Identifier: Apache-2.0
// zb-costs/1 and zb-schedule/1: round trips, and bad input rejected with one line naming the
// field.
#include "zbkit/schemas/json_io.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "zbkit/schemas/validate.h"

namespace zb {
namespace {

const char* kCosts = R"({"format": "zb-costs/1", "comm": 0.6,
  "stages": [{"F": 18.5, "B": 18.1, "W": 9.3, "M_B": 201216, "M_W": 73728},
             {"F": 20, "B": 19, "W": 10, "M_B": 201216, "M_W": 73728}]})";

std::string ErrorOf(const std::string& text) {
  auto costs = ParseCostsJson(text, "c.json");
  EXPECT_FALSE(costs.ok());
  if (costs.ok()) return "";
  EXPECT_EQ(costs.status().code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(costs.status().message().find('\n'), std::string::npos) << "one line";
  return costs.status().message();
}

TEST(CostsJsonTest, ParsesMillisecondsIntoNanoseconds) {
  auto costs = ParseCostsJson(kCosts, "c.json");
  ASSERT_TRUE(costs.ok()) << costs.status().message();
  ASSERT_EQ(costs->num_stages(), 2);
  EXPECT_EQ(costs->comm, 600'000);
  EXPECT_EQ(costs->stages[0].f, 18'500'000);
  EXPECT_EQ(costs->stages[1].w, 10'000'000);
  EXPECT_EQ(costs->stages[0].m_b, 201216);
}

TEST(CostsJsonTest, CountExpandsOneEntryAndRoundTrips) {
  auto costs = ParseCostsJson(
      R"({"format": "zb-costs/1", "count": 4, "stages": [{"F": 1, "B": 1, "W": 1, "M_B": 2, "M_W": 1}]})",
      "c.json");
  ASSERT_TRUE(costs.ok());
  EXPECT_EQ(costs->num_stages(), 4);
  EXPECT_EQ(costs->comm, 0);  // optional, default 0
  const std::string written = CostsToJson(*costs);
  EXPECT_NE(written.find("\"count\": 4"), std::string::npos) << written;
  auto again = ParseCostsJson(written, "again");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *costs);

  auto heterogeneous = ParseCostsJson(kCosts, "c.json");
  auto round_trip = ParseCostsJson(CostsToJson(*heterogeneous), "again");
  ASSERT_TRUE(round_trip.ok());
  EXPECT_EQ(*round_trip, *heterogeneous);
}

TEST(CostsJsonTest, FusedBackwardIsOptionalAndRoundTrips) {
  auto costs = ParseCostsJson(
      R"({"format": "zb-costs/1", "stages": [{"F": 1, "B": 2, "W": 1.5, "BW": 3, "M_B": 2, "M_W": 1},
                                            {"F": 1, "B": 2, "W": 1.5, "M_B": 2, "M_W": 1}]})",
      "c.json");
  ASSERT_TRUE(costs.ok()) << costs.status().message();
  EXPECT_EQ(costs->stages[0].bw, 3'000'000);
  EXPECT_EQ(costs->stages[0].Duration(OpKind::kBW), 3'000'000);  // measured: shorter than B + W
  EXPECT_EQ(costs->stages[1].bw, 0);
  EXPECT_EQ(costs->stages[1].Duration(OpKind::kBW), 3'500'000);  // not measured: B + W
  const std::string written = CostsToJson(*costs);
  EXPECT_EQ(written.find("\"BW\""), written.rfind("\"BW\"")) << "written once: " << written;
  auto again = ParseCostsJson(written, "again");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *costs);
  EXPECT_EQ(
      ErrorOf(
          R"({"format": "zb-costs/1", "stages": [{"F": 1, "B": 1, "W": 1, "BW": -1, "M_B": 2, "M_W": 1}]})"),
      "c.json: stages[0].BW: must be a finite number >= 0, got -1");
}

// The job's activation checkpointing (docs/activation-checkpointing.md) round-trips, stays with the
// costs alone (what a schedule carries: it says what B and W hold) and is one of the modes.
TEST(CostsJsonTest, CheckpointingRoundTripsStaysWithTheCostsAndIsChecked) {
  auto costs = ParseCostsJson(
      R"({"format": "zb-costs/1", "checkpointing": "layer", "stages": [{"F": 1, "B": 2, "W": 1, "M_B": 1, "M_W": 3}]})",
      "c.json");
  ASSERT_TRUE(costs.ok()) << costs.status().message();
  EXPECT_EQ(costs->checkpointing, "layer");
  auto again = ParseCostsJson(CostsToJson(*costs), "again");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(*again, *costs);
  EXPECT_EQ(costs->CostsOnly().checkpointing, "layer");
  EXPECT_EQ(costs->SplitStages(2).checkpointing, "layer");
  auto unknown = ParseCostsJson(
      R"({"format": "zb-costs/1", "stages": [{"F": 1, "B": 1, "W": 1, "M_B": 1, "M_W": 1}]})", "c");
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->checkpointing, "");
  EXPECT_EQ(CostsToJson(*unknown).find("checkpointing"), std::string::npos);
  EXPECT_EQ(
      ErrorOf(
          R"({"format": "zb-costs/1", "checkpointing": "sac", "stages": [{"F": 1, "B": 1, "W": 1, "M_B": 1, "M_W": 1}]})"),
      "c.json: checkpointing: must be one of none, full, op, reentrant, layer, mixed, got \"sac\"");
  CostProfile built = *unknown;
  built.checkpointing = "partial";
  EXPECT_NE(ValidateCostProfile(built).message().find("checkpointing: must be one of"),
            std::string::npos);
}

// The data-parallel replicas folded into a profile (docs/data-parallel.md §3): what the job was,
// like its layout (a schedule's costs do not carry it); at least 1, absent: not known.
TEST(CostsJsonTest, DataParallelRoundTripsAndIsChecked) {
  const char* text =
      R"({"format": "zb-costs/1", "data_parallel": 2, "stages": [{"F": 1, "B": 1, "W": 1, "M_B": 1, "M_W": 1}]})";
  auto costs = ParseCostsJson(text, "c.json");
  ASSERT_TRUE(costs.ok()) << costs.status().message();
  EXPECT_EQ(costs->data_parallel, 2);
  auto again = ParseCostsJson(CostsToJson(*costs), "again");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(*again, *costs);
  EXPECT_EQ(costs->CostsOnly().data_parallel, 0);
  EXPECT_NE(
      ErrorOf(
          R"({"format": "zb-costs/1", "data_parallel": 0, "stages": [{"F": 1, "B": 1, "W": 1, "M_B": 1, "M_W": 1}]})")
          .find("c.json: data_parallel"),
      std::string::npos);
  CostProfile built = *costs;
  built.data_parallel = -1;
  EXPECT_NE(ValidateCostProfile(built).message().find("data_parallel"), std::string::npos);
}

// A stage's data-parallel work and when the ranks wait for reductions (docs/data-parallel.md §5):
// optional (absent: none, in place), kept by a schedule's costs and by a split into chunks, each
// chunk with its share; a bad value named with its field.
TEST(CostsJsonTest, DataParallelWorkRoundTripsSplitsAndIsChecked) {
  const char* text =
      R"({"format": "zb-costs/1", "reduce_wait": "step_end", "stages": [{"F": 1, "B": 1, "W": 1, "M_B": 1, "M_W": 1, "reduce": 3, "unshard": 0.5, "unsharded": 400, "reduced": 6000}, {"F": 1, "B": 1, "W": 1, "M_B": 1, "M_W": 1}]})";
  auto costs = ParseCostsJson(text, "c.json");
  ASSERT_TRUE(costs.ok()) << costs.status().message();
  EXPECT_EQ(costs->stages[0].reduce, 3 * kNsPerMs);
  EXPECT_EQ(costs->stages[0].unshard, kNsPerMs / 2);
  EXPECT_EQ(costs->stages[0].unsharded, 400);
  EXPECT_EQ(costs->stages[0].reduced, 6000);
  EXPECT_FALSE(costs->stages[1].HasDataParallelWork());
  EXPECT_EQ(costs->reduce_wait, ReduceWait::kStepEnd);
  auto again = ParseCostsJson(CostsToJson(*costs), "again");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(*again, *costs);
  EXPECT_EQ(costs->CostsOnly().reduce_wait, ReduceWait::kStepEnd);
  const CostProfile halves = costs->SplitStages(2);
  EXPECT_EQ(halves.stages[0].reduce + halves.stages[1].reduce, costs->stages[0].reduce);
  EXPECT_EQ(halves.stages[1].unsharded, 200);
  EXPECT_EQ(halves.stages[1].reduced, 3000);
  EXPECT_EQ(halves.reduce_wait, ReduceWait::kStepEnd);
  EXPECT_FALSE(costs->WithoutDataParallelWork().HasDataParallelWork());
  auto plain = ParseCostsJson(
      R"({"format": "zb-costs/1", "stages": [{"F": 1, "B": 1, "W": 1, "M_B": 1, "M_W": 1}]})", "p");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->reduce_wait, ReduceWait::kInPlace);
  EXPECT_EQ(CostsToJson(*plain).find("reduce"), std::string::npos);  // nothing new written
  EXPECT_EQ(
      ErrorOf(
          R"({"format": "zb-costs/1", "reduce_wait": "later", "stages": [{"F": 1, "B": 1, "W": 1, "M_B": 1, "M_W": 1}]})"),
      "c.json: reduce_wait: must be in_place or step_end, got \"later\"");
  EXPECT_NE(
      ErrorOf(
          R"({"format": "zb-costs/1", "stages": [{"F": 1, "B": 1, "W": 1, "M_B": 1, "M_W": 1, "reduce": -1}]})")
          .find("c.json: stages[0].reduce"),
      std::string::npos);
  CostProfile built = *costs;
  built.stages[0].unsharded = -1;
  EXPECT_NE(ValidateCostProfile(built).message().find("stages[0].unsharded"), std::string::npos);
  built = *costs;
  built.stages[0].reduced = std::nan("");
  EXPECT_NE(ValidateCostProfile(built).message().find("stages[0].reduced"), std::string::npos);
}

TEST(CostsJsonTest, LayoutOfTheProfiledJobRoundTripsAndIsChecked) {
  auto costs = ParseCostsJson(
      R"({"format": "zb-costs/1", "count": 2, "stages": [{"F": 1, "B": 1, "W": 1, "M_B": 2, "M_W": 1}],
          "layout": {"placement": "loop", "stages_per_rank": 2, "schedule": "ScheduleInterleaved1F1B"}})",
      "c.json");
  ASSERT_TRUE(costs.ok()) << costs.status().message();
  ASSERT_TRUE(costs->layout.has_value());
  EXPECT_EQ(*costs->layout, (JobLayout{Placement::kLoop, 2}));
  EXPECT_EQ(costs->schedule_class, "ScheduleInterleaved1F1B");
  EXPECT_EQ(costs->num_stages(), 2);  // still one entry per rank
  auto again = ParseCostsJson(CostsToJson(*costs), "again");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(*again, *costs);
  // The costs alone (what a schedule carries) drop it, and so does a split.
  EXPECT_FALSE(costs->CostsOnly().layout.has_value());
  EXPECT_EQ(costs->CostsOnly().schedule_class, "");
  EXPECT_FALSE(costs->SplitStages(2).layout.has_value());

  auto v = ParseCostsJson(
      R"({"format": "zb-costs/1", "stages": [{"F": 1, "B": 1, "W": 1, "M_B": 2, "M_W": 1}],
          "layout": {"placement": "v", "stages_per_rank": 2}})",
      "c.json");
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(*v->layout, (JobLayout{Placement::kV, 2}));
  EXPECT_EQ(v->schedule_class, "");
  EXPECT_EQ(CostsToJson(*v).find("schedule"), std::string::npos);

  const std::string stage = R"("stages": [{"F": 1, "B": 1, "W": 1, "M_B": 2, "M_W": 1}])";
  auto with = [&](const std::string& layout) {
    return R"({"format": "zb-costs/1", )" + stage + R"(, "layout": )" + layout + "}";
  };
  EXPECT_EQ(ErrorOf(with(R"({"placement": "zigzag", "stages_per_rank": 1})")),
            "c.json: layout.placement: must be \"loop\" or \"v\", got \"zigzag\"");
  EXPECT_EQ(ErrorOf(with(R"({"placement": "v", "stages_per_rank": 3})")),
            "c.json: layout.stages_per_rank: must be 2 in the V placement, got 3");
  EXPECT_EQ(ErrorOf(with(R"({"placement": "loop", "stages_per_rank": 0})")),
            "c.json: layout.stages_per_rank: must be in [1, 1048576], got 0");
  EXPECT_EQ(ErrorOf(with(R"({"placement": "loop"})")),
            "c.json: layout.stages_per_rank: missing field");
  EXPECT_EQ(ErrorOf(with(R"({"placement": "loop", "stages_per_rank": 1, "schedule": ""})")),
            "c.json: layout.schedule: must not be empty (leave it out)");
  EXPECT_EQ(ErrorOf(with(R"({"placement": "loop", "stages_per_rank": 1, "ranks": 2})")),
            "c.json: layout.ranks: unknown field");
  EXPECT_EQ(ErrorOf(with("\"loop:1\"")), "c.json: layout: must be a JSON object");
}

TEST(CostsJsonTest, BadInputNamesTheField) {
  EXPECT_EQ(ErrorOf(R"({"format": "zb-costs/1", "stages": [{"F": 1, "B": 1, "W": 1, "M_B": 2}]})"),
            "c.json: stages[0].M_W: missing field");
  EXPECT_EQ(
      ErrorOf(
          R"({"format": "zb-costs/1", "stages": [{"F": 1, "B": -1, "W": 1, "M_B": 2, "M_W": 1}]})"),
      "c.json: stages[0].B: must be a finite number >= 0, got -1");
  EXPECT_EQ(
      ErrorOf(
          R"({"format": "zb-costs/1", "stages": [{"F": 0, "B": 1, "W": 1, "M_B": 2, "M_W": 1}]})"),
      "c.json: stages[0].F: must be a finite number > 0, got 0");
  EXPECT_EQ(ErrorOf(R"({"format": "zb-costs/1", "stages": []})"),
            "c.json: stages: must not be empty");
  EXPECT_EQ(
      ErrorOf(
          R"({"format": "zb-costs/1", "count": 0, "stages": [{"F": 1, "B": 1, "W": 1, "M_B": 2, "M_W": 1}]})"),
      "c.json: count: must be in [1, 1048576], got 0");
  EXPECT_EQ(ErrorOf(R"({"format": "zb-costs/2", "stages": []})"),
            "c.json: format: expected \"zb-costs/1\", got \"zb-costs/2\"");
  EXPECT_EQ(
      ErrorOf(
          R"({"format": "zb-costs/1", "stages": [{"F": 1, "B": 1, "W": 1, "M_B": 2, "M_W": 1, "m_b": 3}]})"),
      "c.json: stages[0].m_b: unknown field");
  EXPECT_EQ(
      ErrorOf(
          R"({"format": "zb-costs/1", "stages": [{"F": "1", "B": 1, "W": 1, "M_B": 2, "M_W": 1}]})"),
      "c.json: stages[0].F: must be a number");
  EXPECT_EQ(ErrorOf(R"([1, 2])"), "c.json: must be a JSON object");
  const std::string nan = ErrorOf(
      R"({"format": "zb-costs/1", "stages": [{"F": NaN, "B": 1, "W": 1, "M_B": 2, "M_W": 1}]})");
  EXPECT_NE(nan.find("c.json: not valid JSON"), std::string::npos) << nan;
  EXPECT_NE(nan.find("NaN and Infinity are not valid JSON numbers"), std::string::npos) << nan;
  EXPECT_NE(ErrorOf("{\"format\": ").find("c.json: not valid JSON"), std::string::npos);
  // A number no double holds is an error, not an exception (found by tests/fuzz/fuzz_costs).
  EXPECT_EQ(ErrorOf(R"({"format": "zb-costs/1", "comm": 1e999, "stages": []})"),
            "c.json: not valid JSON: number overflow parsing '1e999'");
}

// Memory past its bound and what the nanosecond clock cannot hold are refused with the field, the
// value as written and why; no value overflows on the way. M_W above M_B is a checkpointed
// stage's (docs/activation-checkpointing.md §2), accepted.
TEST(CostsJsonTest, MemoryBoundsAndTheClocksLimitsAreChecked) {
  auto checkpointed = ParseCostsJson(
      R"({"format": "zb-costs/1", "stages": [{"F": 1, "B": 1, "W": 1, "M_B": 1, "M_W": 3}]})",
      "c.json");
  ASSERT_TRUE(checkpointed.ok()) << checkpointed.status().message();
  EXPECT_EQ(checkpointed->stages[0].m_w, 3);
  EXPECT_EQ(
      ErrorOf(
          R"({"format": "zb-costs/1", "stages": [{"F": 1, "B": 1, "W": 1, "M_B": 1, "M_W": 2e15}]})"),
      "c.json: stages[0].M_W: 2e+15 is more than 2^50 (1 PiB in bytes), the most one "
      "microbatch's activations may hold");
  const std::string too_long =
      " ms is more than an hour (3600000 ms), the most one op or hop may take: a schedule's "
      "times are sums on a nanosecond clock";
  EXPECT_EQ(
      ErrorOf(
          R"({"format": "zb-costs/1", "stages": [{"F": 1e12, "B": 1, "W": 1, "M_B": 1, "M_W": 1}]})"),
      "c.json: stages[0].F: 1e+12" + too_long);
  EXPECT_EQ(
      ErrorOf(
          R"({"format": "zb-costs/1", "stages": [{"F": 1, "B": 1, "W": 1, "BW": 1e300, "M_B": 1, "M_W": 1}]})"),
      "c.json: stages[0].BW: 1e+300" + too_long);
  EXPECT_EQ(
      ErrorOf(
          R"({"format": "zb-costs/1", "comm": 3600001, "stages": [{"F": 1, "B": 1, "W": 1, "M_B": 1, "M_W": 1}]})"),
      "c.json: comm: 3.6e+06" + too_long);
  // An hour exactly is allowed; M_W = M_B too.
  auto hour = ParseCostsJson(
      R"({"format": "zb-costs/1", "comm": 3600000, "stages": [{"F": 3600000, "B": 1, "W": 1, "M_B": 1, "M_W": 1}]})",
      "c.json");
  ASSERT_TRUE(hour.ok()) << hour.status().message();
  EXPECT_EQ(hour->stages[0].f, kMaxOpTime);
  // In memory (a profile built by code): the same rules.
  CostProfile costs = *hour;
  costs.stages[0].m_w = -2;
  EXPECT_NE(ValidateCostProfile(costs).message().find("stages[0].M_W: must be a finite number"),
            std::string::npos);
  costs.stages[0].m_w = 1;
  costs.stages[0].w = kMaxOpTime + 1;
  EXPECT_TRUE(ValidateCostProfile(costs).ok());  // a schedule's costs may hold more (torch's W)
  EXPECT_NE(ValidateProfileToTune(costs).message().find("stages[0].W: "), std::string::npos);
  EXPECT_EQ(MsToNs(1e300), std::numeric_limits<TimeNs>::max());  // saturates, then refused
}

TEST(CostsJsonTest, MissingFileIsNotFound) {
  auto costs = ReadCostsFile("/nonexistent/costs.json");
  ASSERT_FALSE(costs.ok());
  EXPECT_EQ(costs.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(costs.status().message().find("/nonexistent/costs.json: cannot open"),
            std::string::npos);
}

Schedule SmallSchedule() {
  Schedule schedule;
  schedule.ranks = 2;
  schedule.microbatches = 1;
  schedule.family = "test";
  schedule.costs.comm = 1'000'000;
  schedule.costs.stages = {{2'000'000, 3'000'000, 1'000'000, 4, 1},
                           {2'500'000, 3'000'000, 1'000'000, 4, 1}};
  schedule.programs = {
      {{0}, {{OpKind::kF, 0, 0, 0, 2'000'000}, {OpKind::kBW, 0, 0, 9'000'000, 13'000'000}}},
      {{1},
       {{OpKind::kF, 0, 0, 3'000'000, 5'500'000},
        {OpKind::kB, 0, 0, 5'500'000, 8'500'000},
        {OpKind::kW, 0, 0, 8'500'000, 9'500'000}}}};
  schedule.predicted = Prediction{13'000'000, 13'000'000, 0.5, 0.5, {4, 4}};
  return schedule;
}

TEST(ScheduleJsonTest, RoundTripsExactly) {
  const Schedule schedule = SmallSchedule();
  ASSERT_TRUE(ValidateSchedule(schedule).ok());
  const std::string text = ScheduleToJson(schedule);
  auto parsed = ParseScheduleJson(text, "s.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(*parsed, schedule);
}

TEST(ScheduleJsonTest, RejectsIncompleteAndDuplicateOps) {
  Schedule missing = SmallSchedule();
  missing.programs[1].ops.pop_back();
  auto parsed = ParseScheduleJson(ScheduleToJson(missing), "s.json");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().message(), "s.json: ranks[1].ops: missing W of stage 1 microbatch 0");

  Schedule duplicate = SmallSchedule();
  duplicate.programs[0].ops.push_back({OpKind::kW, 0, 0, 13'000'000, 14'000'000});
  parsed = ParseScheduleJson(ScheduleToJson(duplicate), "s.json");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().message(),
            "s.json: ranks[0].ops[2]: duplicate W of stage 0 microbatch 0");

  Schedule wrong_stage = SmallSchedule();
  wrong_stage.programs[1].stages = {3};
  parsed = ParseScheduleJson(ScheduleToJson(wrong_stage), "s.json");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().message(),
            "s.json: ranks[1].stages[0]: placement \"loop\" puts stage 1 here, got 3");
}

TEST(ScheduleJsonTest, RejectsBadFields) {
  auto error = [](const std::string& text) {
    auto parsed = ParseScheduleJson(text, "s.json");
    EXPECT_FALSE(parsed.ok());
    return parsed.ok() ? std::string() : parsed.status().message();
  };
  std::string text = ScheduleToJson(SmallSchedule());
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string copy = text;
    const size_t at = copy.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return copy.replace(at, from.size(), to);
  };
  EXPECT_EQ(error(replaced("\"stages\": 2", "\"stages\": 0")),
            "s.json: stages: must be in [1, 1048576], got 0");
  EXPECT_EQ(error(replaced("\"placement\": \"loop\"", "\"placement\": \"zigzag\"")),
            "s.json: placement: must be \"loop\" or \"v\", got \"zigzag\"");
  EXPECT_EQ(error(replaced("{\"chunk\":0,\"end\":2.0,\"mb\":0,\"start\":0.0,\"type\":\"F\"}",
                           "{\"chunk\":0,\"end\":2.0,\"mb\":0,\"start\":0.0,\"type\":\"X\"}")),
            "s.json: ranks[0].ops[0].type: must be F, B, W or BW, got \"X\"");
  EXPECT_EQ(error(replaced("\"microbatches\": 1", "\"microbatches\": 1.5")),
            "s.json: microbatches: must be an integer");
}

TEST(FileTest, AtomicWriteReplacesWholeFilesAndFailsCleanly) {
  const auto dir = std::filesystem::temp_directory_path() / "zbkit_json_io_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "out.json").string();
  ASSERT_TRUE(WriteFileAtomically(path, "first").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "second").ok());
  auto text = ReadTextFile(path);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "second");
  Status failed = WriteFileAtomically((dir / "no/such/dir/out.json").string(), "x");
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(failed.code(), ErrorCode::kIo);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace zb
