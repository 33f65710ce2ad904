// SPDX-License-Identifier: Apache-2.0
// The ranks' recorded history as a timeline (zbkit/doctor/history.h) and `zb doctor --trace-out`:
// every ended op of every rank on one clock from t = 0, sends and receives as COMM ops, torch's
// other actions left out, the op each rank is in open up to the diagnosis; the trace passes
// `zb trace --check` (what Perfetto's JSON importer needs); records without a history get one
// clear line.
#include "zbkit/doctor/history.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "progress_record_writer.h"
#include "temp_dir.h"
#include "zb_command.h"

namespace zb::doctor {
namespace {

using testing::RecordSpec;
using testing_support::RunZb;
using testing_support::TempDir;

constexpr int64_t kMs = 1000000;

// Rank `rank` of 2 under torch's runtime: RECV_F, F, SEND_F, an UNSHARD-like action, then in the
// F of microbatch 1 since `since_ns`; its history: the first four actions, 2 ms apart.
RecordSpec TorchRank(int rank, int64_t t0, int64_t since_ns) {
  RecordSpec spec;
  spec.rank = rank;
  spec.pid = getpid();
  spec.source = 1;
  spec.program = {{ActionKind::kRecvF, rank, 0},
                  {ActionKind::kF, rank, 0},
                  {ActionKind::kSendF, rank, 0},
                  {ActionKind::kOther, rank, -1},
                  {ActionKind::kF, rank, 1}};
  spec.op_index = 4;
  spec.phase = Phase::kInOp;
  spec.since_ns = since_ns;
  spec.history_capacity = 8;
  for (int i = 0; i < 4; ++i)
    spec.history.push_back({0, i, t0 + 2 * i * kMs, t0 + (2 * i + 1) * kMs});
  return spec;
}

TEST(HistoryTimeline, EveryRanksLastOpsOnOneClockAndTheOpEachIsIn) {
  const TempDir dir;
  const int64_t now = NowNs(), t0 = now - 10000 * kMs;
  testing::WriteRecord(dir.path(), TorchRank(0, t0, t0 + 8 * kMs));
  testing::WriteRecord(dir.path(), TorchRank(1, t0 + 5 * kMs, t0 + 13 * kMs));
  auto run = ReadRunProgress(dir.path());
  ASSERT_TRUE(run.ok()) << run.status().message();
  auto timeline = HistoryTimeline(*run, now);
  ASSERT_TRUE(timeline.ok()) << timeline.status().message();
  ASSERT_EQ(timeline->ops.size(), 8u);  // per rank: RECV_F, F, SEND_F and the open F (no OTHER)
  const TimelineOp& first = timeline->ops[0];
  EXPECT_EQ(first.rank, 0);
  EXPECT_EQ(first.kind, zb::OpKind::kComm);
  EXPECT_EQ(first.start, 0);  // t = 0 at the earliest op
  EXPECT_EQ(first.end, kMs);
  EXPECT_EQ(timeline->names[static_cast<size_t>(first.name)], "RECV_F stage 0 mb 0");
  const TimelineOp& f = timeline->ops[1];
  EXPECT_EQ(f.kind, zb::OpKind::kF);
  EXPECT_EQ(f.start, 2 * kMs);
  const TimelineOp& open = timeline->ops[3];
  EXPECT_EQ(timeline->names[static_cast<size_t>(open.name)], "F stage 0 mb 1 (not ended)");
  EXPECT_EQ(open.start, 8 * kMs);
  EXPECT_EQ(open.end, now - t0);
  // Rank 1's clock is the same: its first op 5 ms after rank 0's.
  EXPECT_EQ(timeline->ops[4].rank, 1);
  EXPECT_EQ(timeline->ops[4].start, 5 * kMs);
  EXPECT_EQ(timeline->ops[4].stage, 1);
}

TEST(HistoryTimeline, ZbDoctorWritesItAsATraceThatPerfettoTakes) {
  const TempDir dir;
  const int64_t now = NowNs(), t0 = now - 10000 * kMs;
  testing::WriteRecord(dir.path(), TorchRank(0, t0, t0 + 8 * kMs));
  testing::WriteRecord(dir.path(), TorchRank(1, t0 + 5 * kMs, t0 + 13 * kMs));
  const std::string trace = dir.Path("stall.json");
  const auto written = RunZb("doctor '" + dir.path() + "' --trace-out '" + trace + "'", dir.path());
  ASSERT_EQ(written.code, 0) << written.err;
  EXPECT_NE(written.out.find("wrote " + trace + ": the last 8 ops of 2 rank(s)"), std::string::npos)
      << written.out;
  const auto checked = RunZb("trace --check '" + trace + "'", dir.path());
  EXPECT_EQ(checked.code, 0) << checked.out << checked.err;
  EXPECT_NE(checked.out.find("0 overlapping"), std::string::npos) << checked.out;
  EXPECT_NE(checked.out.find("0 unclosed"), std::string::npos) << checked.out;
  // --json keeps stdout for the document: the trace's line goes to stderr.
  const auto json =
      RunZb("doctor '" + dir.path() + "' --json --trace-out '" + trace + "'", dir.path());
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_EQ(json.out.find("wrote "), std::string::npos);
  EXPECT_NE(json.err.find("wrote " + trace), std::string::npos) << json.err;

  // Version-1 records keep no history: the diagnosis, then one line saying so, exit 1.
  const TempDir old;
  RecordSpec v1 = TorchRank(0, t0, t0 + 8 * kMs);
  v1.world = 1;
  v1.history_capacity = 0;
  v1.history.clear();
  testing::WriteRecord(old.path(), v1);
  const auto none =
      RunZb("doctor '" + old.path() + "' --trace-out '" + old.Path("x.json") + "'", old.path());
  EXPECT_EQ(none.code, 1);
  EXPECT_EQ(none.err, "zb doctor: " + old.path() +
                          ": no record keeps a history of the ranks' ops (zbkit older than "
                          "zb-progress version 2, or no op ended yet)\n");
}

}  // namespace
}  // namespace zb::doctor
