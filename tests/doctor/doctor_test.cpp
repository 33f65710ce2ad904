// SPDX-License-Identifier: Apache-2.0
// zb doctor's reader and diagnosis (doctor/): records as ranks leave them, real processes
// for the process states, and the zb doctor command.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "progress_record_writer.h"
#include "zbkit/doctor/diagnosis.h"
#include "zbkit/doctor/flight_recorder.h"
#include "zbkit/doctor/stall_watch.h"

namespace zb::doctor {
namespace {

namespace fs = std::filesystem;
using testing::RecordSpec;
using testing::WriteRecord;

constexpr int64_t kSecond = 1000000000LL;

// 1F1B on 2 ranks, 4 microbatches, zbkit's executor: rank 0 F0 F1 B0 F2 B1 F3 B2 B3 (stage 0),
// rank 1 F0 B0 F1 B1 ... (stage 1).
std::vector<ProgramOp> OneFOneB(int rank, int microbatches = 4) {
  std::vector<ProgramOp> ops;
  const int warmup = rank == 0 ? 2 : 1;
  int f = 0, b = 0;
  for (; f < std::min(warmup, microbatches); ++f)
    ops.push_back({ActionKind::kF, rank, f});
  while (b < microbatches) {
    ops.push_back({ActionKind::kBW, rank, b++});
    if (f < microbatches) ops.push_back({ActionKind::kF, rank, f++});
  }
  return ops;
}

// GPipe on stage `rank`: every F, then every BW.
std::vector<ProgramOp> GPipe(int rank, int microbatches = 4) {
  std::vector<ProgramOp> ops;
  for (int mb = 0; mb < microbatches; ++mb)
    ops.push_back({ActionKind::kF, rank, mb});
  for (int mb = 0; mb < microbatches; ++mb)
    ops.push_back({ActionKind::kBW, rank, mb});
  return ops;
}

int IndexOf(const std::vector<ProgramOp>& ops, ActionKind kind, int mb) {
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind == kind && ops[i].microbatch == mb) return static_cast<int>(i);
  }
  return -1;
}

class DoctorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("zbkit-doctor-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    now_ = NowNs();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A rank in op `kind` mb `mb` of its program since `seconds` ago.
  RecordSpec InOp(int rank, std::vector<ProgramOp> program, ActionKind kind, int mb,
                  double seconds) {
    RecordSpec spec;
    spec.rank = rank;
    spec.pid = 1000 + rank;
    spec.program = std::move(program);
    spec.op_index = IndexOf(spec.program, kind, mb);
    spec.phase = Phase::kInOp;
    spec.since_ns = now_ - static_cast<int64_t>(seconds * kSecond);
    return spec;
  }

  Diagnosis DiagnoseWith(std::map<int, ProcessState> states) {
    auto run = ReadRunProgress(dir_.string());
    EXPECT_TRUE(run.ok()) << run.status().message();
    DiagnoseOptions options;
    options.now_ns = now_;
    options.stall_timeout_s = 5;
    options.probe = [states](const RankProgress& rank) {
      auto it = states.find(rank.rank);
      return it == states.end() ? ProcessState::kAlive : it->second;
    };
    return Diagnose(*run, options);
  }

  fs::path dir_;
  int64_t now_ = 0;
};

TEST_F(DoctorTest, ReadsEveryFieldOfARecord) {
  RecordSpec spec = InOp(1, OneFOneB(1), ActionKind::kF, 2, 3);
  spec.job = "abc";
  spec.host = "node7";
  spec.iteration = 12;
  spec.ops_done = 99;
  spec.source = 1;
  WriteRecord(dir_.string(), spec);
  auto rank = ReadProgressFile((dir_ / "rank1.progress").string());
  ASSERT_TRUE(rank.ok()) << rank.status().message();
  EXPECT_EQ(rank->rank, 1);
  EXPECT_EQ(rank->world, 2);
  EXPECT_EQ(rank->pid, 1001);
  EXPECT_EQ(rank->job, "abc");
  EXPECT_EQ(rank->host, "node7");
  EXPECT_EQ(rank->source, ProgramSource::kTorchRuntime);
  ASSERT_EQ(rank->program.size(), 8u);
  EXPECT_EQ(OpText(rank->program[static_cast<size_t>(rank->op_index)]), "F stage 1 mb 2");
  EXPECT_EQ(rank->phase, Phase::kInOp);
  EXPECT_EQ(rank->iteration, 12);
  EXPECT_EQ(rank->ops_done, 99);
  EXPECT_EQ(rank->since_ns, spec.since_ns);
}

TEST_F(DoctorTest, ATornSlotGivesTheOtherOneAndTwoTornSlotsAClearError) {
  RecordSpec spec = InOp(0, OneFOneB(0), ActionKind::kBW, 1, 1);
  spec.tear_newer_slot = true;
  WriteRecord(dir_.string(), spec);
  auto rank = ReadProgressFile((dir_ / "rank0.progress").string());
  ASSERT_TRUE(rank.ok()) << rank.status().message();
  EXPECT_EQ(rank->seq, spec.seq - 1);  // the older, whole slot
  EXPECT_EQ(rank->phase, Phase::kStarting);

  std::string bytes = testing::RecordBytes(spec);
  bytes[256 + 48] ^= 1;  // tear the other slot too
  bytes[320 + 48] ^= 1;
  std::ofstream((dir_ / "rank0.progress").string(), std::ios::binary) << bytes;
  auto torn = ReadProgressFile((dir_ / "rank0.progress").string());
  ASSERT_FALSE(torn.ok());
  EXPECT_EQ(torn.status().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(torn.status().message().find("rank0.progress: no whole state slot"), std::string::npos)
      << torn.status().message();
}

TEST_F(DoctorTest, MalformedRecordsNameTheFileAndWhatIsWrong) {
  const std::string path = (dir_ / "rank0.progress").string();
  RecordSpec spec = InOp(0, OneFOneB(0), ActionKind::kF, 0, 1);
  std::string bytes = testing::RecordBytes(spec);
  struct Case {
    std::string bytes, expected;
  };
  std::string wrong_magic = bytes;
  wrong_magic[0] = 'X';
  std::string wrong_version = bytes;
  wrong_version[8] = 9;
  std::string long_program = bytes;
  testing::Put<int32_t>(long_program, 128, 100000);
  const Case cases[] = {{bytes.substr(0, 100), "not a zbkit progress record (100 bytes"},
                        {wrong_magic, "no ZBPROG01 magic"},
                        {wrong_version, "progress record version 9"},
                        {long_program, "a program of 100000 ops does not fit"}};
  for (const Case& c : cases) {
    std::ofstream(path, std::ios::binary) << c.bytes;
    auto rank = ReadProgressFile(path);
    ASSERT_FALSE(rank.ok()) << c.expected;
    EXPECT_EQ(rank.status().message().rfind(path + ": ", 0), 0u) << rank.status().message();
    EXPECT_NE(rank.status().message().find(c.expected), std::string::npos)
        << rank.status().message();
  }
}

TEST_F(DoctorTest, ARunNamesMissingRanksAndRecordsOfAnotherJob) {
  RecordSpec a = InOp(0, OneFOneB(0, 4), ActionKind::kF, 0, 1);
  a.world = 4;
  RecordSpec b = a, c = a;
  b.rank = 2;
  c.rank = 3;
  c.job = "other";
  WriteRecord(dir_.string(), a);
  WriteRecord(dir_.string(), b);
  WriteRecord(dir_.string(), c);
  auto run = ReadRunProgress(dir_.string());
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_EQ(run->ranks.size(), 2u);
  EXPECT_EQ(run->job, "job1");
  ASSERT_EQ(run->problems.size(), 2u);
  EXPECT_NE(run->problems[0].find("from another job (other, not job1)"), std::string::npos);
  EXPECT_NE(run->problems[1].find("no record of ranks 1, 3 of 4"), std::string::npos)
      << run->problems[1];

  fs::remove_all(dir_);
  fs::create_directories(dir_);
  auto empty = ReadRunProgress(dir_.string());
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("no readable rank<R>.progress"), std::string::npos);
}

TEST_F(DoctorTest, ProbesRealProcessesAliveStoppedDeadAndReused) {
  const pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  ASSERT_GT(child, 0);
  RankProgress rank;
  rank.pid = child;
  rank.started_ns = NowNs();
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  rank.host = host;
  EXPECT_EQ(ProbeProcess(rank), ProcessState::kAlive);
  kill(child, SIGSTOP);
  int status = 0;
  waitpid(child, &status, WUNTRACED);
  EXPECT_EQ(ProbeProcess(rank), ProcessState::kStopped);
  // A record made long before this process started is not its own (a reused pid).
  RankProgress older = rank;
  older.started_ns -= 3600 * kSecond;
  EXPECT_EQ(ProbeProcess(older), ProcessState::kDead);
  RankProgress elsewhere = rank;
  elsewhere.host = "another-host";
  EXPECT_EQ(ProbeProcess(elsewhere), ProcessState::kUnknown);
  kill(child, SIGKILL);
  waitpid(child, &status, 0);
  EXPECT_EQ(ProbeProcess(rank), ProcessState::kDead);
}

TEST_F(DoctorTest, AFrozenRankIsTheCulpritAndItsPeersWaitIsTheChain) {
  WriteRecord(dir_.string(), InOp(0, OneFOneB(0), ActionKind::kBW, 2, 94));
  WriteRecord(dir_.string(), InOp(1, OneFOneB(1), ActionKind::kF, 2, 94.5));
  const Diagnosis d = DiagnoseWith({{1, ProcessState::kStopped}});
  EXPECT_EQ(d.state, "stalled");
  EXPECT_EQ(d.culprit, Culprit::kFrozen);
  EXPECT_EQ(d.culprit_rank, 1);
  EXPECT_NE(d.headline.find("rank 1 in F stage 1 mb 2"), std::string::npos) << d.headline;
  ASSERT_EQ(d.chain.size(), 1u);
  EXPECT_EQ(d.chain[0].rfind("rank 0 waits RECV_B stage 0 mb 2 from rank 1", 0), 0u) << d.chain[0];
  EXPECT_NE(d.chain[0].find("<- rank 1 in F stage 1 mb 2"), std::string::npos) << d.chain[0];
  EXPECT_EQ(d.ranks[0].producer, "BW stage 1 mb 2 (op 5)");
}

// A version-2 record keeps the ops a rank ended last: the diagnosis gives them oldest first with
// their times, then the op it is in (from the state, not ended), leaves out a half-written entry,
// and keeps them through zb-diagnosis/1 and back.
TEST_F(DoctorTest, TheLastOpsBeforeTheStallComeWithTheirTimes) {
  RecordSpec frozen = InOp(1, OneFOneB(1), ActionKind::kF, 2, 40);
  frozen.history_capacity = 8;
  const int64_t ms = 1000000;
  const int64_t t0 = now_ - 41 * kSecond;
  // In ring order, not time order: F1 ended, F0, BW0, BW1 (torn), an unknown op, one not ended.
  frozen.history = {{0, IndexOf(frozen.program, ActionKind::kF, 1), t0 + 50 * ms, t0 + 61 * ms},
                    {0, IndexOf(frozen.program, ActionKind::kF, 0), t0, t0 + 12 * ms},
                    {0, IndexOf(frozen.program, ActionKind::kBW, 0), t0 + 20 * ms, t0 + 45 * ms},
                    {0, IndexOf(frozen.program, ActionKind::kBW, 1), t0 + 70 * ms, t0 + 95 * ms},
                    {0, 99, t0, t0 + ms},
                    {0, IndexOf(frozen.program, ActionKind::kF, 2), now_ - 40 * kSecond, 0}};
  frozen.torn_history_entry = 3;
  WriteRecord(dir_.string(), frozen);
  WriteRecord(dir_.string(), InOp(0, OneFOneB(0), ActionKind::kBW, 2, 39));
  auto read = ReadProgressFile((dir_ / "rank1.progress").string());
  ASSERT_TRUE(read.ok()) << read.status().message();
  // The torn entry, the op index the program lacks and the entry not ended are left out.
  ASSERT_EQ(read->history.size(), 3u);
  EXPECT_EQ(read->history.front().op_index, IndexOf(frozen.program, ActionKind::kF, 0));
  EXPECT_EQ(read->history.back().op_index, IndexOf(frozen.program, ActionKind::kF, 1));
  EXPECT_EQ(read->version, 2);

  const Diagnosis d = DiagnoseWith({{1, ProcessState::kStopped}});
  ASSERT_EQ(d.culprit_rank, 1);
  const RankFinding& rank1 = d.ranks[1];
  ASSERT_EQ(rank1.recent.size(), 4u);
  EXPECT_EQ(rank1.recent[0].op, "F stage 1 mb 0");
  EXPECT_NEAR(rank1.recent[0].ms, 12.0, 1e-9);
  EXPECT_NEAR(rank1.recent[0].began_s, 41.0, 1e-9);
  EXPECT_EQ(rank1.recent[1].op, "BW stage 1 mb 0");
  EXPECT_NEAR(rank1.recent[1].ms, 25.0, 1e-9);
  EXPECT_EQ(rank1.recent[3].op, "F stage 1 mb 2");  // the op it is in, from the state
  EXPECT_EQ(rank1.recent[3].ms, -1);
  EXPECT_NEAR(rank1.recent[3].began_s, 40.0, 1e-9);
  EXPECT_TRUE(d.ranks[0].recent.empty());  // a version-1 record

  const std::string text = FormatDiagnosis(d);
  EXPECT_NE(text.find("    before: F stage 1 mb 0 12.0 ms, BW stage 1 mb 0 25.0 ms, F stage 1 mb "
                      "1 11.0 ms; the last ended 40.9 s ago\n"),
            std::string::npos)
      << text;

  const std::string path = (dir_ / "diagnosis.json").string();
  std::ofstream(path) << DiagnosisJson(d);
  auto back = ReadDiagnosisJson(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->ranks[1].recent.size(), 4u);
  EXPECT_EQ(back->ranks[1].recent[2].op, "F stage 1 mb 1");
  EXPECT_NEAR(back->ranks[1].recent[2].ms, 11.0, 1e-9);
  EXPECT_EQ(back->ranks[1].recent[3].ms, -1);

  // A history that does not fit after the program is a clear error.
  std::string bytes = testing::RecordBytes(frozen);
  testing::Put<int32_t>(bytes, 148, 4000);
  std::ofstream((dir_ / "rank1.progress").string(), std::ios::binary) << bytes;
  auto unfit = ReadProgressFile((dir_ / "rank1.progress").string());
  ASSERT_FALSE(unfit.ok());
  EXPECT_NE(unfit.status().message().find("a history of 4000 entries"), std::string::npos)
      << unfit.status().message();
}

TEST_F(DoctorTest, CrossedOrdersAreADeadlockNamingBothOps) {
  // Rank 0 runs 1F1B, rank 1 GPipe: rank 0's BW mb 0 waits for rank 1's, which comes after
  // rank 1's F mb 2, which waits for rank 0's F mb 2, which comes after rank 0's BW mb 0.
  WriteRecord(dir_.string(), InOp(0, OneFOneB(0), ActionKind::kBW, 0, 40));
  WriteRecord(dir_.string(), InOp(1, GPipe(1), ActionKind::kF, 2, 40));
  const Diagnosis d = DiagnoseWith({});
  EXPECT_EQ(d.culprit, Culprit::kDeadlock);
  EXPECT_NE(d.headline.find("BW stage 0 mb 0 waits for rank 1's BW stage 1 mb 0"),
            std::string::npos)
      << d.headline;
  EXPECT_NE(d.headline.find("after rank 1's F stage 1 mb 2"), std::string::npos) << d.headline;
}

TEST_F(DoctorTest, APeerWhoseProgramNeverSendsTheMessageMakesTheScheduleUnrunnable) {
  RecordSpec done;
  done.rank = 0;
  done.pid = 1000;
  done.program = OneFOneB(0, 3);  // 3 microbatches on rank 0, 4 on rank 1
  done.microbatches = 3;
  done.phase = Phase::kIterationDone;
  done.op_index = static_cast<int64_t>(done.program.size()) - 1;
  done.since_ns = now_ - 20 * kSecond;
  WriteRecord(dir_.string(), done);
  WriteRecord(dir_.string(), InOp(1, OneFOneB(1), ActionKind::kF, 3, 20));
  const Diagnosis d = DiagnoseWith({});
  EXPECT_EQ(d.culprit, Culprit::kUnrunnable);
  EXPECT_EQ(d.culprit_rank, 1);
  EXPECT_NE(d.headline.find("rank 1's F stage 1 mb 3 needs RECV_F stage 1 mb 3 from rank 0, whose "
                            "program has no op that sends it (microbatches: rank 1 4, rank 0 3)"),
            std::string::npos)
      << d.headline;
  // The same programs, both ranks still running: no culprit yet, but the problem is said.
  fs::remove(dir_ / "rank0.progress");
  WriteRecord(dir_.string(), InOp(0, OneFOneB(0, 3), ActionKind::kF, 0, 0.1));
  const Diagnosis early = DiagnoseWith({});
  EXPECT_EQ(early.state, "progressing");
  EXPECT_EQ(early.culprit, Culprit::kNone);
  ASSERT_EQ(early.problems.size(), 1u);
  EXPECT_NE(early.problems[0].find("whose program has no op that sends it"), std::string::npos);
}

TEST_F(DoctorTest, ADeadRankThatWaitedForNoOneIsBlamedNotItsKilledPeers) {
  // After the launcher ended the job: every process gone, rank 1 died computing, rank 0 waiting.
  WriteRecord(dir_.string(), InOp(0, OneFOneB(0), ActionKind::kBW, 1, 30));
  WriteRecord(dir_.string(), InOp(1, OneFOneB(1), ActionKind::kF, 2, 31));
  const Diagnosis d = DiagnoseWith({{0, ProcessState::kDead}, {1, ProcessState::kDead}});
  EXPECT_EQ(d.state, "failed");
  EXPECT_EQ(d.culprit, Culprit::kDied);
  EXPECT_EQ(d.culprit_rank, 1);
  EXPECT_NE(d.headline.find("gone without exiting"), std::string::npos) << d.headline;
}

TEST_F(DoctorTest, ARankThatRaisedOnAWaitTimeoutIsAVictimOfTheSlowPeer) {
  RecordSpec raised = InOp(0, OneFOneB(0), ActionKind::kBW, 0, 2);
  raised.phase = Phase::kRaised;
  raised.exit_message = "ZbkitPipelineError: no gradient from rank 1 within 60 s";
  WriteRecord(dir_.string(), raised);
  WriteRecord(dir_.string(), InOp(1, OneFOneB(1), ActionKind::kF, 0, 70));
  const Diagnosis d = DiagnoseWith({});
  EXPECT_EQ(d.culprit, Culprit::kSlow);
  EXPECT_EQ(d.culprit_rank, 1);

  // An exception in a rank's own op is the culprit, with its message.
  fs::remove(dir_ / "rank0.progress");
  RecordSpec own = InOp(1, OneFOneB(1), ActionKind::kF, 1, 2);
  own.phase = Phase::kRaised;
  own.exit_message = "RuntimeError: injected";
  WriteRecord(dir_.string(), own);
  WriteRecord(dir_.string(), InOp(0, OneFOneB(0), ActionKind::kBW, 0, 2));
  const Diagnosis e = DiagnoseWith({});
  EXPECT_EQ(e.culprit, Culprit::kRaised);
  EXPECT_EQ(e.culprit_rank, 1);
  EXPECT_NE(e.headline.find("raised: RuntimeError: injected"), std::string::npos) << e.headline;
}

TEST_F(DoctorTest, TorchRuntimeProgramsWaitForTheSendAction) {
  // torch's runtime: the producer of stage 0's activation is its SEND_F, not its F.
  std::vector<ProgramOp> rank0 = {{ActionKind::kF, 0, 0},
                                  {ActionKind::kSendF, 0, 0},
                                  {ActionKind::kF, 0, 1},
                                  {ActionKind::kSendF, 0, 1}};
  std::vector<ProgramOp> rank1 = {{ActionKind::kRecvF, 1, 0},
                                  {ActionKind::kF, 1, 0},
                                  {ActionKind::kRecvF, 1, 1},
                                  {ActionKind::kF, 1, 1}};
  RecordSpec a = InOp(0, rank0, ActionKind::kF, 1, 12);  // computing F mb 1, not yet sent
  a.source = 1;
  RecordSpec b = InOp(1, rank1, ActionKind::kF, 1, 12);
  b.source = 1;
  WriteRecord(dir_.string(), a);
  WriteRecord(dir_.string(), b);
  const Diagnosis d = DiagnoseWith({});
  EXPECT_EQ(d.culprit, Culprit::kSlow);
  EXPECT_EQ(d.culprit_rank, 0);
  EXPECT_EQ(d.ranks[1].producer, "SEND_F stage 0 mb 1 (op 3)");
}

TEST_F(DoctorTest, AProgressingJobHasNoCulpritAndAFinishedOneSaysSo) {
  WriteRecord(dir_.string(), InOp(0, OneFOneB(0), ActionKind::kBW, 1, 0.2));
  WriteRecord(dir_.string(), InOp(1, OneFOneB(1), ActionKind::kF, 2, 0.1));
  Diagnosis d = DiagnoseWith({});
  EXPECT_EQ(d.state, "progressing");
  EXPECT_EQ(d.culprit, Culprit::kNone);
  for (int rank : {0, 1}) {
    RecordSpec exited;
    exited.rank = rank;
    exited.program = OneFOneB(rank);
    exited.phase = Phase::kExited;
    WriteRecord(dir_.string(), exited);
  }
  d = DiagnoseWith({{0, ProcessState::kDead}, {1, ProcessState::kDead}});
  EXPECT_EQ(d.state, "finished");
  EXPECT_EQ(d.culprit, Culprit::kFinished);
  // A healthy run has no culprit to name, and the text does not call it one.
  const std::string text = FormatDiagnosis(d);
  EXPECT_NE(text.find("\nno culprit: every rank exited normally\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("culprit: every"), text.find("no culprit: every") + 3) << text;
}

TEST_F(DoctorTest, ARankWithoutARecordThatOthersWaitForIsNamed) {
  WriteRecord(dir_.string(), InOp(0, OneFOneB(0), ActionKind::kBW, 0, 50));
  const Diagnosis d = DiagnoseWith({});
  EXPECT_EQ(d.culprit, Culprit::kNoRecord);
  EXPECT_EQ(d.culprit_rank, 1);
  ASSERT_EQ(d.problems.size(), 1u);
}

TEST_F(DoctorTest, AJobAcrossHostsIsReadFromEveryHostsDirectory) {
  // One rank per host, each host its own directory; rank 0 lost its peer when host 1 went.
  const fs::path host0 = dir_ / "host0", host1 = dir_ / "host1";
  fs::create_directories(host0);
  fs::create_directories(host1);
  RecordSpec a = InOp(0, OneFOneB(0), ActionKind::kF, 2, 4),
             b = InOp(1, OneFOneB(1), ActionKind::kF, 1, 9);
  a.local_world = b.local_world = 1;
  a.phase = Phase::kRaised;
  a.exit_message = "RuntimeError: [../gloo/transport/tcp/pair.cc:553] Connection closed by peer";
  b.host = "host1";
  WriteRecord(host0.string(), a);
  WriteRecord(host1.string(), b);
  auto one = ReadRunProgress(host0.string());
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->problems.size(), 1u);
  EXPECT_NE(one->problems[0].find("give zb doctor every host's run directory"), std::string::npos)
      << one->problems[0];
  DiagnoseOptions options;
  options.now_ns = now_;
  options.stall_timeout_s = 5;
  options.probe = [](const RankProgress&) { return ProcessState::kDead; };
  // Host 0 alone: its rank lost its peer, the culprit is the rank it cannot see.
  Diagnosis alone = Diagnose(*one, options);
  EXPECT_EQ(alone.culprit, Culprit::kNoRecord);
  EXPECT_EQ(alone.culprit_rank, 1);
  // Both hosts: rank 1's record, on a host this machine cannot probe, is the culprit.
  auto both = ReadRunProgress(std::vector<std::string>{host0.string(), host1.string()});
  ASSERT_TRUE(both.ok());
  EXPECT_TRUE(both->problems.empty());
  options.probe = ProbeProcess;
  const Diagnosis d = Diagnose(*both, options);
  EXPECT_EQ(d.ranks[1].process, ProcessState::kUnknown);
  EXPECT_EQ(d.culprit_rank, 1) << d.headline;
  EXPECT_NE(d.headline.find("rank 1 in F stage 1 mb 1"), std::string::npos) << d.headline;
  // A rank in two directories is read once.
  WriteRecord(host0.string(), b);
  auto twice = ReadRunProgress(std::vector<std::string>{host0.string(), host1.string()});
  ASSERT_TRUE(twice.ok());
  EXPECT_EQ(twice->ranks.size(), 2u);
  ASSERT_EQ(twice->problems.size(), 1u);
  EXPECT_NE(twice->problems[0].find(": rank 1 again (also "), std::string::npos);
}

// ---- torch's flight recorder ----------------------------------------------------------------

// Dumps torch 2.13 wrote (tests/data/flight_recorder,
// adapters/pytorch/tests/job_scripts/fr_hang_job.py): two gloo ranks all-reduce twice, then rank 0
// a third time, which rank 1 never joins.
const std::string kDumps = std::string(ZBKIT_TEST_DATA_DIR) + "/flight_recorder/gloo_hang_rank_";

TEST(FlightRecorderTest, ReadsTorchsDumpsAndNamesTheRankThatNeverJoined) {
  auto dumps = ReadFlightRecorderDumps(kDumps);
  ASSERT_TRUE(dumps.ok()) << dumps.status().message();
  ASSERT_EQ(dumps->size(), 2u);
  EXPECT_EQ((*dumps)[0].rank, 0);
  EXPECT_EQ((*dumps)[1].rank, 1);
  EXPECT_EQ((*dumps)[0].version, "2.10");
  EXPECT_EQ((*dumps)[0].groups.at("0").last_enqueued, 3);
  EXPECT_EQ((*dumps)[1].groups.at("0").last_enqueued, 2);
  ASSERT_EQ((*dumps)[0].entries.size(), 3u);
  EXPECT_EQ((*dumps)[0].entries[2].name, "gloo:all_reduce");
  EXPECT_EQ((*dumps)[0].entries[2].collective_seq, 3);
  EXPECT_EQ((*dumps)[0].entries[2].group, "0 default_pg");
  int culprit = -1;
  const std::vector<std::string> lines = AnalyzeFlightRecorder(*dumps, culprit);
  EXPECT_EQ(culprit, 1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "process group 0: rank 1 never joined collective 3 (gloo:all_reduce), which rank 0 "
            "waits in");
}

TEST_F(DoctorTest, AFileThatIsNotAFlightRecorderDumpIsOneClearError) {
  std::ifstream in(kDumps + "0", std::ios::binary);
  const std::string real((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  struct Case {
    std::string bytes, expected;
  };
  const Case cases[] = {
      {real.substr(0, real.size() / 2), "not a flight-recorder pickle: "},
      {std::string("\x80\x02}q\x00.", 6), "a pickle, but not a flight-recorder dump"},
      {std::string("\x80\x02"
                   "c__main__\nX\n.",
                   15),
       "unsupported opcode 0x63"},
  };
  for (const Case& c : cases) {
    const std::string path = (dir_ / "fr_7").string();
    std::ofstream(path, std::ios::binary) << c.bytes;
    auto dumps = ReadFlightRecorderDumps((dir_ / "fr_").string());
    ASSERT_FALSE(dumps.ok()) << c.expected;
    EXPECT_EQ(dumps.status().message().rfind(path + ": ", 0), 0u) << dumps.status().message();
    EXPECT_NE(dumps.status().message().find(c.expected), std::string::npos)
        << dumps.status().message();
  }
  auto none = ReadFlightRecorderDumps((dir_ / "nothing_").string());
  EXPECT_EQ(none.status().code(), ErrorCode::kNotFound);
}

// ---- zb doctor -----------------------------------------------------------------------------

struct Ran {
  int code = 0;
  std::string out, err;
};

Ran RunZb(const std::string& arguments) {
  const std::string err_path =
      fs::temp_directory_path() / ("zbkit-doctor-err-" + std::to_string(getpid()));
  Ran ran;
  FILE* pipe =
      popen((std::string(ZBKIT_ZB_BINARY) + " " + arguments + " 2>" + err_path).c_str(), "r");
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0)
    ran.out.append(buffer, n);
  ran.code = WEXITSTATUS(pclose(pipe));
  std::ifstream err(err_path);
  ran.err.assign(std::istreambuf_iterator<char>(err), std::istreambuf_iterator<char>());
  fs::remove(err_path);
  return ran;
}

TEST_F(DoctorTest, ZbDoctorPrintsTheDiagnosisAsTextAndJson) {
  // Both records name this test's process: alive, as the ranks of a hung job are.
  RecordSpec a = InOp(0, OneFOneB(0), ActionKind::kBW, 0, 40),
             b = InOp(1, GPipe(1), ActionKind::kF, 2, 40);
  a.pid = b.pid = getpid();
  a.started_ns = b.started_ns = now_;
  WriteRecord(dir_.string(), a);
  WriteRecord(dir_.string(), b);
  Ran text = RunZb("doctor " + dir_.string());
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("stalled"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("culprit: deadlock: rank 0's BW stage 0 mb 0"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("<- rank 0 again: a cycle\n"), std::string::npos) << text.out;
  Ran json = RunZb("doctor " + dir_.string() + " --json");
  ASSERT_EQ(json.code, 0) << json.err;
  const auto doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["format"], "zb-diagnosis/1");
  EXPECT_EQ(doc["culprit"]["kind"], "deadlock");
  EXPECT_EQ(doc["ranks"][1]["waits_for"], 0);
}

// --on-stall kill: the watch SIGKILLs the ranks and keeps its diagnosis with who ended the job;
// zb doctor afterwards says that zb ended it and why (the deadlock), not that the ranks it killed
// are "gone without exiting" (which would send the user to dmesg).
TEST_F(DoctorTest, AJobZbEndedAtTheStallIsToldAsSuchNotAsDeadRanks) {
  std::vector<pid_t> children;
  for ([[maybe_unused]] int rank : {0, 1}) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      execlp("sleep", "sleep", "60", static_cast<char*>(nullptr));
      _exit(127);
    }
    children.push_back(child);
  }
  RecordSpec a = InOp(0, OneFOneB(0), ActionKind::kBW, 0, 40),
             b = InOp(1, GPipe(1), ActionKind::kF, 2, 40);
  a.pid = children[0];
  b.pid = children[1];
  a.started_ns = b.started_ns = now_;
  WriteRecord(dir_.string(), a);
  WriteRecord(dir_.string(), b);
  StallWatch watch({"replay", dir_.string(), 5, OnStall::kKill});
  std::ostringstream said;
  ASSERT_TRUE(watch.Check(said, now_));
  EXPECT_NE(said.str().find("zb replay: ending the job (--on-stall kill): its ranks are SIGKILLed, "
                            "so the launcher's report"),
            std::string::npos)
      << said.str();
  for (const pid_t child : children) {
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  }
  Ran text = RunZb("doctor " + dir_.string());
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("zb replay --on-stall kill ended this job at the stall"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("culprit: deadlock: rank 0's BW stage 0 mb 0"), std::string::npos)
      << text.out;
  EXPECT_EQ(text.out.find("gone without exiting"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("dmesg"), std::string::npos) << text.out;
  Ran json = RunZb("doctor " + dir_.string() + " --json");
  ASSERT_EQ(json.code, 0) << json.err;
  const auto doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["culprit"]["kind"], "deadlock");
  EXPECT_EQ(doc["ended_by"], "zb replay --on-stall kill");
}

// A job across hosts: host 0's zb replay saw only rank 0's record (rank 1's is on host 1), named
// rank 1 "no record" and ended the job. zb doctor of both hosts' directories diagnoses from both
// records (the dead processes), with who ended the job; the kept diagnosis saw less (the fault
// suite's host that is gone got host 0's "no record" whenever host 0's zb replay ended the job
// itself).
TEST_F(DoctorTest, TheDirectoriesOfEveryHostSayMoreThanOneHostsKeptDiagnosis) {
  const fs::path host0 = dir_ / "host0", host1 = dir_ / "host1";
  fs::create_directories(host0);
  fs::create_directories(host1);
  const pid_t alive = fork();
  ASSERT_GE(alive, 0);
  if (alive == 0) {
    execlp("sleep", "sleep", "60", static_cast<char*>(nullptr));
    _exit(127);
  }
  const pid_t gone = fork();
  ASSERT_GE(gone, 0);
  if (gone == 0) _exit(0);
  int status = 0;
  ASSERT_EQ(waitpid(gone, &status, 0), gone);
  RecordSpec a = InOp(0, OneFOneB(0), ActionKind::kBW, 0, 40),
             b = InOp(1, OneFOneB(1), ActionKind::kF, 2, 40);
  a.pid = alive;
  b.pid = gone;
  a.started_ns = b.started_ns = now_;
  WriteRecord(host0.string(), a);
  WriteRecord(host1.string(), b);
  StallWatch watch({"replay", host0.string(), 5, OnStall::kKill});
  std::ostringstream said;
  ASSERT_TRUE(watch.Check(said, now_));
  ASSERT_EQ(waitpid(alive, &status, 0), alive);
  Ran one = RunZb("doctor " + host0.string() + " --json");
  EXPECT_EQ(one.code, 1) << one.err;  // a record is missing: said, and the diagnosis given
  EXPECT_EQ(nlohmann::json::parse(one.out)["culprit"]["kind"], "no-record") << one.out;
  Ran both = RunZb("doctor " + host0.string() + " " + host1.string() + " --json");
  ASSERT_EQ(both.code, 0) << both.err;
  const auto doc = nlohmann::json::parse(both.out);
  ASSERT_EQ(doc["ranks"].size(), 2u) << both.out;  // rank 1's record read, not "no record"
  EXPECT_EQ(doc["ranks"][1]["process"], "dead") << both.out;
  EXPECT_EQ(doc["culprit"]["kind"], "died") << both.out;
  EXPECT_EQ(doc["ended_by"], "zb replay --on-stall kill") << both.out;
}

TEST_F(DoctorTest, ZbDoctorOnBadInputSaysOneLineAndGivesWhatItCan) {
  WriteRecord(dir_.string(), InOp(0, OneFOneB(0), ActionKind::kBW, 0, 40));
  std::ofstream((dir_ / "rank1.progress").string()) << "garbage";
  Ran partial = RunZb("doctor " + dir_.string());
  EXPECT_EQ(partial.code, 1);
  EXPECT_NE(partial.out.find("culprit: rank 1 left no progress record"), std::string::npos)
      << partial.out;
  EXPECT_EQ(std::count(partial.err.begin(), partial.err.end(), '\n'), 1) << partial.err;
  EXPECT_NE(partial.err.find("rank1.progress: not a zbkit progress record"), std::string::npos)
      << partial.err;

  Ran missing = RunZb("doctor " + (dir_ / "nowhere").string());
  EXPECT_EQ(missing.code, 1);
  EXPECT_EQ(missing.err, "zb doctor: " + (dir_ / "nowhere").string() + ": no such run directory\n");
  Ran usage = RunZb("doctor " + dir_.string() + " --stall-timeout 0");
  EXPECT_EQ(usage.code, 2);
}

}  // namespace
}  // namespace zb::doctor
