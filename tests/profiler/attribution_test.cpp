// SPDX-License-Identifier: Apache-2.0
// Attribution: name families, user rules, rank -> stage mapping, projection of kernels by launch
// correlation, CPU-only fallback, iterations and FIFO microbatches.
#include "zbkit/profiler/attribution.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace zb::profiler {
namespace {

struct NameCase {
  const char* name;
  RangeRole role;
  OpKind kind;
  int stage;
  int chunk;
  int microbatch;
  CommDirection direction;
  const char* family;
};

class BuiltInNames : public ::testing::TestWithParam<NameCase> {};

TEST_P(BuiltInNames, Classify) {
  const NameCase& c = GetParam();
  const RangeMatch match = MatchBuiltIn(c.name, "");
  EXPECT_EQ(match.role, c.role) << c.name;
  if (c.role == RangeRole::kNone) return;
  EXPECT_EQ(match.family, c.family) << c.name;
  if (c.role != RangeRole::kOp) return;
  EXPECT_EQ(match.kind, c.kind) << c.name;
  EXPECT_EQ(match.stage, c.stage) << c.name;
  EXPECT_EQ(match.chunk, c.chunk) << c.name;
  EXPECT_EQ(match.microbatch, c.microbatch) << c.name;
  EXPECT_EQ(match.direction, c.direction) << c.name;
}

constexpr auto kOp = RangeRole::kOp;
constexpr auto kIter = RangeRole::kIteration;
constexpr auto kNo = RangeRole::kNone;
constexpr auto kNoDir = CommDirection::kNone;

INSTANTIATE_TEST_SUITE_P(
    Families, BuiltInNames,
    ::testing::Values(
        // zbkit runtime
        NameCase{"zb:F:s3:mb7", kOp, OpKind::kF, 3, -1, 7, kNoDir, "zbkit"},
        NameCase{"zb:B:s0:mb12", kOp, OpKind::kB, 0, -1, 12, kNoDir, "zbkit"},
        NameCase{"zb:W:s5:mb0", kOp, OpKind::kW, 5, -1, 0, kNoDir, "zbkit"},
        NameCase{"zb:BW:s2:mb1", kOp, OpKind::kBW, 2, -1, 1, kNoDir, "zbkit"},
        NameCase{"zb:SEND_F:s1:mb4", kOp, OpKind::kComm, 1, -1, 4, CommDirection::kSendForward,
                 "zbkit"},
        NameCase{"zb:RECV_B:s1:mb4", kOp, OpKind::kComm, 1, -1, 4, CommDirection::kRecvBackward,
                 "zbkit"},
        NameCase{"zb:iter:17", kIter, OpKind::kF, -1, -1, -1, kNoDir, "zbkit"},
        NameCase{"zb:F:s3", kNo, OpKind::kF, -1, -1, -1, kNoDir, ""},
        NameCase{"zb:X:s3:mb1", kNo, OpKind::kF, -1, -1, -1, kNoDir, ""},
        // zero-bubble Megatron fork
        NameCase{"F3.1.0", kOp, OpKind::kF, -1, 1, 3, kNoDir, "zb-fork"},
        NameCase{"B12.0.0", kOp, OpKind::kB, -1, 0, 12, kNoDir, "zb-fork"},
        NameCase{"BW2.1.0", kOp, OpKind::kBW, -1, 1, 2, kNoDir, "zb-fork"},
        NameCase{"W5.0.1", kOp, OpKind::kW, -1, 0, 5, kNoDir, "zb-fork"},
        NameCase{"W_clear.1.0", kOp, OpKind::kW, -1, 1, -1, kNoDir, "zb-fork"},
        NameCase{"R3.0.0", RangeRole::kIgnore, OpKind::kF, -1, -1, -1, kNoDir, "zb-fork"},
        NameCase{"iter_2_31", kIter, OpKind::kF, -1, -1, -1, kNoDir, "zb-fork"},
        NameCase{"SEND_FORWARD.3.0.0", kOp, OpKind::kComm, -1, 0, 3, CommDirection::kSendForward,
                 "zb-fork"},
        NameCase{"SEND_FORWARD.3.0.0_RECV_BACKWARD.1.0.0", kOp, OpKind::kComm, -1, 0, 3,
                 CommDirection::kSendForward, "zb-fork"},
        NameCase{"RECV_BACKWARD.1.1.0", kOp, OpKind::kComm, -1, 1, 1, CommDirection::kRecvBackward,
                 "zb-fork"},
        NameCase{"F3.1", kNo, OpKind::kF, -1, -1, -1, kNoDir, ""},
        NameCase{"Forward", kNo, OpKind::kF, -1, -1, -1, kNoDir, ""},
        NameCase{"pre_send", kNo, OpKind::kF, -1, -1, -1, kNoDir, ""},
        // PyTorch pipelining (torch >= 2.6: I = input grad, B = full backward)
        NameCase{"PP:0F1", kOp, OpKind::kF, 0, -1, 1, kNoDir, "torch-pp"},
        NameCase{"PP:2I3", kOp, OpKind::kB, 2, -1, 3, kNoDir, "torch-pp"},
        NameCase{"PP:2W3", kOp, OpKind::kW, 2, -1, 3, kNoDir, "torch-pp"},
        NameCase{"PP:1B0", kOp, OpKind::kBW, 1, -1, 0, kNoDir, "torch-pp"},
        NameCase{"PP:3SEND_F1", kOp, OpKind::kComm, 3, -1, 1, CommDirection::kSendForward,
                 "torch-pp"},
        NameCase{"PP:1RECV_B0", kOp, OpKind::kComm, 1, -1, 0, CommDirection::kRecvBackward,
                 "torch-pp"},
        NameCase{"PP:4REDUCE_GRAD", kNo, OpKind::kF, -1, -1, -1, kNoDir, ""},
        NameCase{"PP:(0F7;7B3)OVERLAP_F_B", kNo, OpKind::kF, -1, -1, -1, kNoDir, ""},
        NameCase{"PP:0F12 trailing", kOp, OpKind::kF, 0, -1, 12, kNoDir, "torch-pp"},
        // Kineto
        NameCase{"ProfilerStep#4", kIter, OpKind::kF, -1, -1, -1, kNoDir, "kineto"},
        NameCase{"## forward ##", kNo, OpKind::kF, -1, -1, -1, kNoDir, ""}));

TEST(Rules, GpuAnnotationsMatchOnlyRulesNamingTheirDomain) {
  EXPECT_EQ(MatchBuiltIn("PP:0F1", "gpu_user_annotation").role, RangeRole::kNone);
  auto rules = RuleSet::FromJson(
      R"([{"regex": "^x$", "kind": "F"}, {"regex": "^y$", "kind": "F",
           "domain": "gpu_user_annotation"}])",
      "r.json");
  ASSERT_TRUE(rules.ok()) << rules.status().message();
  EXPECT_EQ(rules->Match("x", "gpu_user_annotation").role, RangeRole::kNone);
  EXPECT_EQ(rules->Match("x", "user_annotation").role, RangeRole::kOp);
  EXPECT_EQ(rules->Match("y", "gpu_user_annotation").role, RangeRole::kOp);
  EXPECT_EQ(rules->Match("y", "").role, RangeRole::kNone);
}

TEST(Rules, UserRulesTakePrecedenceAndCaptureGroups) {
  auto rules = RuleSet::FromJson(R"({"rules": [
      {"regex": "^F(\\d+)\\.(\\d+)\\.\\d+$", "kind": "BW", "chunk": "$2", "microbatch": "$1"},
      {"regex": "^fwd_s(\\d+)_m(\\d+)$", "kind": "F", "stage": "$1", "microbatch": "$2"},
      {"regex": "^## forward ##$", "kind": "F", "stage": 0},
      {"regex": "^step$", "kind": "ITER"},
      {"regex": "noise", "kind": "IGNORE"},
      {"regex": "^p2p$", "kind": "COMM", "direction": "send_forward", "stage": 1}
  ]})",
                                 "rules.json");
  ASSERT_TRUE(rules.ok()) << rules.status().message();
  EXPECT_EQ(rules->num_user_rules(), 6);
  RangeMatch m = rules->Match("F3.1.0", "");  // the user's rule wins over the ZB fork's F
  EXPECT_EQ(m.kind, OpKind::kBW);
  EXPECT_EQ(m.family, "user");
  EXPECT_EQ(m.chunk, 1);
  EXPECT_EQ(m.microbatch, 3);
  m = rules->Match("fwd_s2_m9", "");
  EXPECT_EQ(m.kind, OpKind::kF);
  EXPECT_EQ(m.stage, 2);
  EXPECT_EQ(m.microbatch, 9);
  m = rules->Match("## forward ##", "user_annotation");
  EXPECT_EQ(m.stage, 0);
  EXPECT_EQ(m.microbatch, -1);
  EXPECT_EQ(rules->Match("step", "").role, RangeRole::kIteration);
  EXPECT_EQ(rules->Match("some noise here", "").role, RangeRole::kIgnore);
  m = rules->Match("p2p", "");
  EXPECT_EQ(m.kind, OpKind::kComm);
  EXPECT_EQ(m.direction, CommDirection::kSendForward);
  // Names no user rule matches fall through to the built-ins.
  EXPECT_EQ(rules->Match("W3.0.0", "").family, "zb-fork");
  EXPECT_EQ(rules->Match("PP:1I2", "").kind, OpKind::kB);
}

TEST(Rules, MalformedRuleFilesNameTheField) {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"{", "r.json: not valid JSON"},
      {R"({"rules": 3})", "r.json: rules: expected an array"},
      {R"([{"kind": "F"}])", "r.json: [0].regex: must be a non-empty string"},
      {R"j([{"regex": "(", "kind": "F"}])j", "r.json: [0].regex: invalid regular expression"},
      {R"([{"regex": "a", "kind": "X"}])", "r.json: [0].kind: must be one of"},
      {R"j({"rules": [{"regex": "a", "kind": "F"}, {"regex": "a(b)", "kind": "F", "stage": "$2"}]})j",
       "r.json: rules[1].stage: must be an integer >= 0 or \"$N\" naming one of the 1"},
      {R"([{"regex": "a", "kind": "F", "microbatch": -1}])", "r.json: [0].microbatch"},
      {R"([{"regex": "a", "kind": "F", "stgae": 1}])", "r.json: [0]: unknown field \"stgae\""},
      {R"([{"regex": "a", "kind": "COMM", "direction": "up"}])", "r.json: [0].direction"},
  };
  for (const Case& c : cases) {
    auto rules = RuleSet::FromJson(c.text, "r.json");
    ASSERT_FALSE(rules.ok()) << c.text;
    EXPECT_EQ(rules.status().code(), ErrorCode::kInvalidInput);
    EXPECT_NE(rules.status().message().find(c.error), std::string::npos)
        << rules.status().message();
  }
  EXPECT_EQ(RuleSet::LoadFile("/nonexistent/rules.json").status().code(), ErrorCode::kNotFound);
}

TEST(StageMapping, LoopAndV) {
  // P = 4: loop puts chunk c of rank r at stage c*P + r; V at r and 2P-1-r.
  EXPECT_EQ(StageOfChunk(Placement::kLoop, 4, 0, 0), 0);
  EXPECT_EQ(StageOfChunk(Placement::kLoop, 4, 3, 0), 3);
  EXPECT_EQ(StageOfChunk(Placement::kLoop, 4, 1, 1), 5);
  EXPECT_EQ(StageOfChunk(Placement::kLoop, 4, 3, 2), 11);
  EXPECT_EQ(StageOfChunk(Placement::kV, 4, 0, 0), 0);
  EXPECT_EQ(StageOfChunk(Placement::kV, 4, 0, 1), 7);
  EXPECT_EQ(StageOfChunk(Placement::kV, 4, 3, 1), 4);
  EXPECT_EQ(StageOfChunk(Placement::kV, 4, 1, 1), 6);
}

// ---- Traces built by hand ------------------------------------------------------------------

RawTrace Process(int rank) {
  RawTrace trace;
  trace.process.rank = rank;
  trace.process.pid = 1000 + rank;
  return trace;
}

// A range on `thread` and one kernel per (start, end) launched inside it on the same thread.
void AddOp(RawTrace& trace, const std::string& name, int64_t thread, TimeNs start, TimeNs end,
           const std::vector<std::pair<TimeNs, TimeNs>>& kernels, int64_t& correlation,
           int64_t stream = 7) {
  trace.ranges.push_back({name, "", thread, start, end, 0});
  TimeNs launch = start + 1;
  for (const auto& [kernel_start, kernel_end] : kernels) {
    trace.launches.push_back({correlation, thread, launch++});
    trace.activities.push_back(
        {ActivityKind::kKernel, "gemm", 0, stream, kernel_start, kernel_end, correlation, 0});
    ++correlation;
  }
}

const MeasuredOp* FindOp(const Attribution& a, int rank, OpKind kind, int stage, int mb,
                         int iteration = -1) {
  for (const MeasuredOp& op : a.ops) {
    if (op.rank == rank && op.kind == kind && op.stage == stage && op.microbatch == mb &&
        (iteration < 0 || op.iteration == iteration)) {
      return &op;
    }
  }
  return nullptr;
}

TEST(Projection, UnionOfOverlappingStreamsAndSpan) {
  RawTrace trace = Process(0);
  int64_t correlation = 1;
  // Kernels [100,200) on stream 7, [150,260) on stream 8 (overlap 50), [400,450) on stream 7.
  trace.ranges.push_back({"F0.0.0", "", 11, 0, 90, 0});
  for (auto [start, end, stream] :
       {std::tuple{100, 200, 7}, std::tuple{150, 260, 8}, std::tuple{400, 450, 7}}) {
    trace.launches.push_back({correlation, 11, 10 + correlation});
    trace.activities.push_back({ActivityKind::kKernel, "k", 0, stream, start, end, correlation, 0});
    ++correlation;
  }
  // A kernel launched on the same thread after the range ended is not the range's.
  trace.launches.push_back({correlation, 11, 95});
  trace.activities.push_back({ActivityKind::kKernel, "late", 0, 7, 460, 470, correlation++, 0});
  // A memcpy launched inside counts; an NCCL kernel does not (it is communication).
  trace.launches.push_back({correlation, 11, 50});
  trace.activities.push_back(
      {ActivityKind::kMemcpy, "memcpy HtoD", 0, 9, 500, 520, correlation++, 4096});
  trace.launches.push_back({correlation, 11, 51});
  trace.activities.push_back(
      {ActivityKind::kKernel, "ncclDevKernel_SendRecv", 0, 20, 600, 700, correlation++, 0});

  const auto projection = ProjectRanges(trace, {0}, {false}, true);
  ASSERT_EQ(projection.size(), 1u);
  EXPECT_EQ(projection[0].kernels, 4);
  EXPECT_EQ(projection[0].busy, (260 - 100) + (450 - 400) + (520 - 500));
  EXPECT_EQ(projection[0].start, 100);
  EXPECT_EQ(projection[0].end, 520);

  auto a = Attribute({trace}, RuleSet());
  ASSERT_TRUE(a.ok()) << a.status().message();
  const MeasuredOp* f = FindOp(*a, 0, OpKind::kF, 0, 0);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->busy, 230);
  EXPECT_EQ(f->gpu_start, 100);
  EXPECT_EQ(f->gpu_end, 520);
  EXPECT_EQ(f->start(), 100);
  // The NCCL kernel becomes a COMM op of its own (no hop known).
  int comm = 0;
  for (const MeasuredOp& op : a->ops) {
    if (op.kind == OpKind::kComm) {
      ++comm;
      EXPECT_EQ(op.busy, 100);
      EXPECT_EQ(op.peer_stage, -1);
    }
  }
  EXPECT_EQ(comm, 1);
  EXPECT_EQ(a->kernels_total, 6);
  EXPECT_EQ(a->kernels_attributed, 5);
}

TEST(Projection, InnermostRangeWinsAndCrossThreadFallback) {
  RawTrace trace = Process(0);
  // Outer op [0, 1000) and inner op [100, 200) on thread 1; a launch at 150 belongs to the
  // inner one, a launch at 300 to the outer one.
  trace.ranges.push_back({"F0.0.0", "", 1, 0, 1000, 0});
  trace.ranges.push_back({"F1.0.0", "", 1, 100, 200, 1});
  trace.launches.push_back({1, 1, 150});
  trace.activities.push_back({ActivityKind::kKernel, "a", 0, 7, 160, 170, 1, 0});
  trace.launches.push_back({2, 1, 300});
  trace.activities.push_back({ActivityKind::kKernel, "b", 0, 7, 310, 330, 2, 0});
  // Thread 2 (an autograd worker) has no op range: its launch at 500 goes to the op open on
  // thread 1 at that time, unless that is switched off.
  trace.launches.push_back({3, 2, 500});
  trace.activities.push_back({ActivityKind::kKernel, "c", 0, 7, 510, 540, 3, 0});
  // A launch with no range open anywhere stays unattributed.
  trace.launches.push_back({4, 2, 5000});
  trace.activities.push_back({ActivityKind::kKernel, "d", 0, 7, 5010, 5020, 4, 0});
  // An activity whose launch was never recorded stays unattributed.
  trace.activities.push_back({ActivityKind::kKernel, "e", 0, 7, 520, 530, 99, 0});

  auto cross = ProjectRanges(trace, {0, 1}, {false, false}, true);
  EXPECT_EQ(cross[0].kernels, 2);
  EXPECT_EQ(cross[0].busy, 20 + 30);
  EXPECT_EQ(cross[0].cross_thread, 1);
  EXPECT_EQ(cross[1].kernels, 1);
  EXPECT_EQ(cross[1].busy, 10);
  auto same = ProjectRanges(trace, {0, 1}, {false, false}, false);
  EXPECT_EQ(same[0].kernels, 1);
  EXPECT_EQ(same[0].busy, 20);

  // Two threads with an op open at the launch: ambiguous, not attributed.
  trace.ranges.push_back({"F2.0.0", "", 3, 400, 600, 0});
  auto ambiguous = ProjectRanges(trace, {0, 1, 2}, {false, false, false}, true);
  EXPECT_EQ(ambiguous[0].kernels, 1);
  EXPECT_EQ(ambiguous[2].kernels, 0);
}

TEST(Attribution, CpuOnlyRangesUseTheirOwnDuration) {
  RawTrace trace = Process(0);
  trace.ranges.push_back({"zb:F:s0:mb0", "", 1, 1000, 1700, 0});
  trace.ranges.push_back({"zb:BW:s0:mb0", "", 1, 2000, 3300, 0});
  auto a = Attribute({trace}, RuleSet());
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->ops.size(), 2u);
  EXPECT_EQ(a->ops[0].busy, 700);
  EXPECT_EQ(a->ops[0].kernels, 0);
  EXPECT_EQ(a->ops[0].start(), 1000);
  EXPECT_EQ(a->ops[0].end(), 1700);
  EXPECT_EQ(a->ops[1].busy, 1300);
  EXPECT_FALSE(a->split);
}

TEST(Attribution, ZbForkRanksChunksAndBOrBw) {
  // Two ranks, two chunks each (interleaved, loop): rank 0 splits B/W, rank 1 does not.
  std::vector<RawTrace> traces = {Process(0), Process(1)};
  int64_t correlation = 1;
  TimeNs t = 0;
  for (int mb = 0; mb < 2; ++mb) {
    for (int chunk = 0; chunk < 2; ++chunk) {
      AddOp(traces[0], "F" + std::to_string(mb) + "." + std::to_string(chunk) + ".0", 1, t, t + 100,
            {{t + 10, t + 60}}, correlation);
      AddOp(traces[1], "F" + std::to_string(mb) + "." + std::to_string(chunk) + ".0", 1, t, t + 100,
            {{t + 10, t + 70}}, correlation);
      t += 100;
    }
  }
  for (int mb = 0; mb < 2; ++mb) {
    AddOp(traces[0], "B" + std::to_string(mb) + ".1.0", 1, t, t + 100, {{t + 5, t + 85}},
          correlation);
    AddOp(traces[0], "W" + std::to_string(mb) + ".1.0", 1, t + 100, t + 200, {{t + 105, t + 145}},
          correlation);
    AddOp(traces[1], "B" + std::to_string(mb) + ".0.0", 1, t, t + 100, {{t + 5, t + 95}},
          correlation);
    t += 200;
  }
  auto loop = Attribute(traces, RuleSet());
  ASSERT_TRUE(loop.ok()) << loop.status().message();
  EXPECT_EQ(loop->ranks, 2);
  EXPECT_EQ(loop->chunks, 2);
  EXPECT_EQ(loop->num_stages, 4);
  EXPECT_TRUE(loop->split);
  // Loop: rank 0 chunk 1 = stage 2; rank 1 chunk 1 = stage 3.
  ASSERT_NE(FindOp(*loop, 0, OpKind::kF, 2, 1), nullptr);
  ASSERT_NE(FindOp(*loop, 1, OpKind::kF, 3, 0), nullptr);
  EXPECT_EQ(FindOp(*loop, 1, OpKind::kF, 3, 0)->busy, 60);
  ASSERT_NE(FindOp(*loop, 0, OpKind::kB, 2, 0), nullptr);  // rank 0 has W: B stays B
  ASSERT_NE(FindOp(*loop, 0, OpKind::kW, 2, 1), nullptr);
  EXPECT_EQ(FindOp(*loop, 0, OpKind::kW, 2, 1)->busy, 40);
  ASSERT_NE(FindOp(*loop, 1, OpKind::kBW, 1, 1), nullptr);  // rank 1 has none: B is BW
  EXPECT_EQ(FindOp(*loop, 1, OpKind::kB, 1, 1), nullptr);

  AttributionOptions v;
  v.placement = Placement::kV;
  auto vee = Attribute(traces, RuleSet(), v);
  ASSERT_TRUE(vee.ok());
  // V: rank 0 chunk 1 = stage 3, rank 1 chunk 1 = stage 2.
  EXPECT_NE(FindOp(*vee, 0, OpKind::kF, 3, 0), nullptr);
  EXPECT_NE(FindOp(*vee, 1, OpKind::kF, 2, 0), nullptr);
  EXPECT_NE(FindOp(*vee, 0, OpKind::kB, 3, 1), nullptr);
  EXPECT_EQ(vee->num_stages, 4);
}

TEST(Attribution, PpNamesGiveGlobalStagesAndCommHops) {
  RawTrace trace = Process(1);
  int64_t correlation = 1;
  AddOp(trace, "PP:1RECV_F0", 1, 0, 50, {{10, 30}}, correlation);
  AddOp(trace, "PP:1F0", 1, 50, 150, {{60, 140}}, correlation);
  AddOp(trace, "PP:1SEND_F0", 1, 150, 170, {{155, 165}}, correlation);
  AddOp(trace, "PP:1I0", 1, 200, 300, {{210, 290}}, correlation);
  AddOp(trace, "PP:1W0", 1, 300, 350, {{310, 340}}, correlation);
  AddOp(trace, "PP:1SEND_B0", 1, 350, 360, {{351, 359}}, correlation);
  AttributionOptions options;
  options.pp = 2;
  auto a = Attribute({trace}, RuleSet(), options);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->ranks, 2);
  const MeasuredOp* b = FindOp(*a, 1, OpKind::kB, 1, 0);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->busy, 80);
  int comms = 0;
  for (const MeasuredOp& op : a->ops) {
    if (op.kind != OpKind::kComm) continue;
    ++comms;
    const int expected = op.direction == CommDirection::kSendForward ? 2 : 0;
    EXPECT_EQ(op.peer_stage, expected) << op.name;
  }
  EXPECT_EQ(comms, 3);
}

// Two ranks running PyTorch's `PP:` ranges for the given global stages (F, I, W of two
// microbatches each), as the shim's torch.profiler traces name them, with the class metadata.
std::vector<RawTrace> PpRanks(const std::vector<std::vector<int>>& stages_of_rank,
                              const std::string& schedule_class) {
  std::vector<RawTrace> traces;
  int64_t correlation = 1;
  for (int rank = 0; rank < static_cast<int>(stages_of_rank.size()); ++rank) {
    RawTrace trace = Process(rank);
    trace.schedule_class = schedule_class;
    TimeNs t = 0;
    for (int stage : stages_of_rank[rank]) {
      for (const char* kind : {"F", "I", "W"}) {
        for (int mb = 0; mb < 2; ++mb) {
          AddOp(trace, "PP:" + std::to_string(stage) + kind + std::to_string(mb), 1, t, t + 10, {},
                correlation);
          t += 20;
        }
      }
    }
    traces.push_back(std::move(trace));
  }
  return traces;
}

TEST(Attribution, LayoutIsReadFromWhichRankRanWhichGlobalStage) {
  AttributionOptions options;  // placement loop, as zb import's default --layout
  options.pp = 2;
  // V: rank 0 holds stages 0 and 3, rank 1 stages 1 and 2.
  auto v = Attribute(PpRanks({{0, 3}, {1, 2}}, "ScheduleZBVZeroBubble"), RuleSet(), options);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_TRUE(v->layout_known);
  EXPECT_EQ(v->placement, Placement::kV);
  EXPECT_EQ(v->chunks, 2);
  EXPECT_EQ(v->schedule_class, "ScheduleZBVZeroBubble");

  // Loop with two stages per rank: stage s on rank s mod 2.
  auto loop = Attribute(PpRanks({{0, 2}, {1, 3}}, "ScheduleInterleaved1F1B"), RuleSet(), options);
  ASSERT_TRUE(loop.ok()) << loop.status().message();
  EXPECT_TRUE(loop->layout_known);
  EXPECT_EQ(loop->placement, Placement::kLoop);
  EXPECT_EQ(loop->chunks, 2);

  // Neither: rank 0 holds 0 and 1. No layout, and a note says why; nor any class.
  auto neither = Attribute(PpRanks({{0, 1}, {2, 3}}, "Custom"), RuleSet(), options);
  ASSERT_TRUE(neither.ok()) << neither.status().message();
  EXPECT_FALSE(neither->layout_known);
  EXPECT_EQ(neither->schedule_class, "");
  bool noted = false;
  for (const std::string& note : neither->notes)
    noted = noted || note.find("neither the loop nor the V placement") != std::string::npos;
  EXPECT_TRUE(noted);

  // Traces naming different classes record none.
  std::vector<RawTrace> mixed = PpRanks({{0}, {1}}, "Schedule1F1B");
  mixed[1].schedule_class = "ScheduleGPipe";
  auto disagree = Attribute(mixed, RuleSet(), options);
  ASSERT_TRUE(disagree.ok()) << disagree.status().message();
  EXPECT_TRUE(disagree->layout_known);
  EXPECT_EQ(disagree->chunks, 1);
  EXPECT_EQ(disagree->schedule_class, "");
}

// The shim names each rank's activation checkpointing (docs/activation-checkpointing.md): one mode
// for all ranks is the job's; full on some ranks and none on others is "layer"; other mixes are
// "mixed"; ranks that say nothing leave it unknown; a mode zbkit does not know is a note.
TEST(Attribution, CheckpointingIsTheRanksModeOrTheirMix) {
  AttributionOptions options;
  options.pp = 2;
  auto with = [&](const std::string& a, const std::string& b) {
    std::vector<RawTrace> traces = PpRanks({{0}, {1}}, "Schedule1F1B");
    traces[0].checkpointing = a;
    traces[1].checkpointing = b;
    return Attribute(traces, RuleSet(), options);
  };
  for (const auto& [a, b, job] :
       std::vector<std::tuple<std::string, std::string, std::string>>{{"full", "full", "full"},
                                                                      {"op", "op", "op"},
                                                                      {"full", "none", "layer"},
                                                                      {"layer", "full", "layer"},
                                                                      {"op", "none", "mixed"},
                                                                      {"", "full", "full"},
                                                                      {"", "", ""}}) {
    auto attributed = with(a, b);
    ASSERT_TRUE(attributed.ok()) << attributed.status().message();
    EXPECT_EQ(attributed->checkpointing, job) << a << " + " << b;
  }
  auto odd = with("sometimes", "full");
  ASSERT_TRUE(odd.ok());
  EXPECT_EQ(odd->checkpointing, "");
  bool noted = false;
  for (const std::string& note : odd->notes)
    noted = noted ||
            note.find("unknown activation checkpointing mode 'sometimes'") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(Attribution, IterationsFromMarkersOrInferredAndFifoMicrobatches) {
  // Markers: two iterations of two F and two BW with no microbatch in the names.
  auto rules = RuleSet::FromJson(
      R"([{"regex": "^fwd$", "kind": "F"}, {"regex": "^bwd$", "kind": "BW"}])", "r");
  ASSERT_TRUE(rules.ok());
  RawTrace marked = Process(0);
  TimeNs t = 0;
  for (int iteration = 0; iteration < 2; ++iteration) {
    marked.ranges.push_back(
        {"ProfilerStep#" + std::to_string(7 + iteration), "", 1, t, t + 1000, 0});
    marked.ranges.push_back({"fwd", "", 1, t + 10, t + 110, 1});
    marked.ranges.push_back({"fwd", "", 1, t + 120, t + 220, 1});
    marked.ranges.push_back({"bwd", "", 1, t + 300, t + 500, 1});
    marked.ranges.push_back({"bwd", "", 1, t + 510, t + 700, 1});
    t += 1000;
  }
  auto a = Attribute({marked}, *rules);
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->ops.size(), 8u);
  EXPECT_NE(FindOp(*a, 0, OpKind::kF, 0, 1, 1), nullptr);
  const MeasuredOp* bw1 = FindOp(*a, 0, OpKind::kBW, 0, 1, 1);
  ASSERT_NE(bw1, nullptr);
  EXPECT_EQ(bw1->busy, 190);  // the second backward takes the second forward's microbatch

  // No markers: a repeated (stage, microbatch) of F starts a new iteration.
  RawTrace plain = Process(0);
  t = 0;
  for (int iteration = 0; iteration < 3; ++iteration) {
    for (int mb = 0; mb < 2; ++mb) {
      plain.ranges.push_back({"zb:F:s0:mb" + std::to_string(mb), "", 1, t, t + 10, 0});
      t += 10;
    }
    for (int mb = 0; mb < 2; ++mb) {
      plain.ranges.push_back({"zb:BW:s0:mb" + std::to_string(mb), "", 1, t, t + 20, 0});
      t += 20;
    }
  }
  auto b = Attribute({plain}, RuleSet());
  ASSERT_TRUE(b.ok());
  EXPECT_NE(FindOp(*b, 0, OpKind::kF, 0, 0, 2), nullptr);
  EXPECT_NE(FindOp(*b, 0, OpKind::kBW, 0, 1, 2), nullptr);
  EXPECT_EQ(FindOp(*b, 0, OpKind::kF, 0, 0, 3), nullptr);
}

TEST(Attribution, RanksFromEnvironmentOrPidOrderAndPpGroups) {
  // No RANK: processes with ops are ranked by pid; the one with no ops is left out.
  RawTrace a = Process(-1);
  a.process.pid = 30;
  a.ranges.push_back({"zb:F:s1:mb0", "", 1, 0, 10, 0});
  RawTrace b = Process(-1);
  b.process.pid = 20;
  b.ranges.push_back({"zb:F:s0:mb0", "", 1, 0, 10, 0});
  RawTrace launcher = Process(-1);
  launcher.process.pid = 10;
  auto result = Attribute({a, b, launcher}, RuleSet());
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result->ops.size(), 2u);
  EXPECT_EQ(result->ops[0].rank, 0);
  EXPECT_EQ(result->ops[0].stage, 0);
  EXPECT_EQ(result->ops[1].rank, 1);

  // WORLD_SIZE 4 with --pp 2: ranks 0,1 are pipeline rank 0 (replicas 0, 1), ranks 2,3 rank 1.
  std::vector<RawTrace> world;
  for (int r = 0; r < 4; ++r) {
    RawTrace t = Process(r);
    t.process.world_size = 4;
    t.ranges.push_back({"F0.0.0", "", 1, 0, 10 + r, 0});
    world.push_back(t);
  }
  AttributionOptions options;
  options.pp = 2;
  auto grouped = Attribute(world, RuleSet(), options);
  ASSERT_TRUE(grouped.ok());
  ASSERT_EQ(grouped->ops.size(), 4u);
  EXPECT_EQ(grouped->ops[0].rank, 0);
  EXPECT_EQ(grouped->ops[1].rank, 0);
  EXPECT_EQ(grouped->ops[1].replica, 1);
  EXPECT_EQ(grouped->ops[2].rank, 1);
  EXPECT_EQ(grouped->ops[3].stage, 1);

  // Rank outside --pp without a world size to group by: skipped with a note.
  options.pp = 1;
  RawTrace stray = Process(3);
  stray.ranges.push_back({"F0.0.0", "", 1, 0, 10, 0});
  auto skipped = Attribute({Process(0), stray}, RuleSet(), options);
  ASSERT_TRUE(skipped.ok());
  EXPECT_TRUE(skipped->ops.empty());
  ASSERT_FALSE(skipped->notes.empty());
  EXPECT_NE(skipped->notes[0].find("outside --pp 1"), std::string::npos);
}

// Without --pp and with ops that name no stage (the zb-fork names give only a chunk): ranks that
// meet only in collectives are replicas of one pipeline rank; one send between any two makes
// them a pipeline; traces without communication stay read as a pipeline.
TEST(Attribution, RanksThatOnlyMeetInCollectivesAreReplicas) {
  auto ranks_of = [](bool collective, bool send) {
    std::vector<RawTrace> traces;
    for (int32_t global : {2, 5}) {
      RawTrace trace = Process(global);
      trace.process.world_size = 8;
      trace.ranges.push_back({"F0.0.0", "", 1, 0, 10, 0});
      if (collective) trace.ranges.push_back({"c10d::allreduce_", "cpu_op", 1, 20, 30, 0});
      if (send && global == 2) trace.ranges.push_back({"c10d::send", "cpu_op", 1, 12, 14, 0});
      traces.push_back(trace);
    }
    auto result = Attribute(traces, RuleSet());
    EXPECT_TRUE(result.ok()) << result.status().message();
    return result.ok() ? *result : Attribution{};
  };
  const Attribution replicas = ranks_of(true, false);
  EXPECT_EQ(replicas.ranks, 1);
  ASSERT_EQ(replicas.ops.size(), 2u);
  EXPECT_EQ(replicas.ops[0].rank, 0);
  EXPECT_EQ(replicas.ops[1].rank, 0);
  EXPECT_EQ(replicas.ops[0].replica + replicas.ops[1].replica, 1);  // replicas 0 and 1
  bool noted = false;
  for (const std::string& note : replicas.notes)
    noted = noted || note.find(
                         "c10d::allreduce_ and other collectives only): read as "
                         "data-parallel replicas") != std::string::npos;
  EXPECT_TRUE(noted) << testing::PrintToString(replicas.notes);

  const Attribution pipeline = ranks_of(true, true);
  EXPECT_EQ(pipeline.ranks, 2);
  ASSERT_EQ(pipeline.ops.size(), 2u);
  EXPECT_EQ(pipeline.ops[0].replica, 0);
  EXPECT_EQ(pipeline.ops[1].replica, 0);
  EXPECT_NE(pipeline.ops[0].rank, pipeline.ops[1].rank);

  const Attribution silent = ranks_of(false, false);
  EXPECT_EQ(silent.ranks, 2);
}

TEST(Attribution, MemoryNetInsideOps) {
  RawTrace trace = Process(0);
  trace.ranges.push_back({"zb:F:s0:mb0", "", 1, 100, 200, 0});
  trace.ranges.push_back({"zb:B:s0:mb0", "", 1, 300, 400, 0});
  trace.ranges.push_back({"zb:W:s0:mb0", "", 1, 500, 600, 0});
  trace.memory = {{150, 1000, 0}, {160, 500, 0}, {180, -200, 0},  // F: +1300
                  {350, -800, 0},                                 // B: -800
                  {550, -500, 0}, {700, 99, 0}};
  auto a = Attribute({trace}, RuleSet());
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->ops.size(), 3u);
  EXPECT_TRUE(a->has_memory);
  EXPECT_EQ(a->ops[0].memory_net, 1300);
  EXPECT_EQ(a->ops[1].memory_net, -800);
  EXPECT_EQ(a->ops[2].memory_net, -500);

  // A B with no allocation inside it (a first stage's: no input gradient) measured 0, not
  // "unknown": what the F saved stays for W.
  trace.memory = {{150, 1000, 0}, {550, -1000, 0}};
  auto empty_b = Attribute({trace}, RuleSet());
  ASSERT_TRUE(empty_b.ok());
  EXPECT_TRUE(empty_b->ops[1].has_memory);
  EXPECT_EQ(empty_b->ops[1].memory_net, 0);
}

TEST(Attribution, NothingRecognizedGivesNoOps) {
  RawTrace trace = Process(0);
  trace.ranges.push_back({"## forward ##", "user_annotation", 1, 0, 10, 0});
  auto a = Attribute({trace}, RuleSet());
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->ops.empty());
}

TEST(Attribution, NcclNames) {
  EXPECT_TRUE(IsNcclKernel("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"));
  EXPECT_TRUE(IsNcclKernel("void NCCL_kernel"));
  EXPECT_FALSE(IsNcclKernel("ampere_sgemm_128x64_nn"));
}

// PP x DP (docs/data-parallel.md §3): a (dp, pp) mesh (global ranks 0 and 2 hold stage 0) is two
// replicas of a 2-rank loop pipeline, not ranks 0-3; a --pp that says otherwise wins, noted.
TEST(Attribution, PipelineGroupsPlaceReplicasWhateverTheMeshOrder) {
  std::vector<RawTrace> traces = PpRanks({{0}, {1}, {0}, {1}}, "Schedule1F1B");
  for (int r = 0; r < 4; ++r) {
    traces[r].process.world_size = 4;
    traces[r].pipeline = {r % 2, 2, r < 2 ? 0 : 2};
  }
  auto read = Attribute(traces, RuleSet(), AttributionOptions{});
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->ranks, 2);
  EXPECT_EQ(read->data_parallel, 2);
  EXPECT_TRUE(read->layout_known);
  EXPECT_EQ(read->placement, Placement::kLoop);
  std::map<std::pair<int, int>, int> ops;  // (rank, replica) -> ops
  for (const MeasuredOp& op : read->ops)
    ++ops[{op.rank, op.replica}];
  EXPECT_EQ(ops.size(), 4u);
  for (const auto& [key, count] : ops)
    EXPECT_EQ(count, 6) << key.first << "/" << key.second;
  auto noted = [](const Attribution& a, const std::string& text) {
    return std::any_of(a.notes.begin(), a.notes.end(),
                       [&](const std::string& n) { return n.find(text) != std::string::npos; });
  };
  EXPECT_TRUE(noted(*read, "2 data-parallel replicas of a 2-rank pipeline"));

  AttributionOptions four;
  four.pp = 4;
  auto forced = Attribute(traces, RuleSet(), four);
  ASSERT_TRUE(forced.ok()) << forced.status().message();
  EXPECT_EQ(forced->ranks, 4);
  EXPECT_TRUE(noted(*forced, "--pp 4 differs from the pipeline group"));
}

}  // namespace
}  // namespace zb::profiler
