// SPDX-License-Identifier: Apache-2.0
// The profiler's `zb` commands, run as the real binary: zb profile (exit code pass-through, the
// one warning line, shards written by the job's processes, a job killed mid-run), zb import on
// the real Kineto traces, zb costs export feeding zb tune.
//
// The "job" for zb profile is this test binary itself: FakeWorkload.DISABLED_Run (disabled so
// ctest never lists it; the tests run it with --gtest_also_run_disabled_tests), when
// ZBKIT_FAKE_WORKLOAD is set, behaves as a process the injection library instrumented: it writes
// the shard the library would write, into ZBKIT_SHARD_DIR, named by RANK.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "zb_command.h"
#include "zbkit/profiler/shard.h"
#include "zbkit/schemas/store.h"

namespace zb::profiler {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

int CountLines(const std::string& text) {
  int lines = 0;
  for (char c : text)
    lines += c == '\n';
  return lines;
}

std::string SelfPath() {
  return fs::read_symlink("/proc/self/exe").string();
}

class ZbCli : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/zbkit_profiler_cli_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  using Result = testing_support::ZbResult;

  // Runs `env zb args` through the shell; `args` is shell text.
  Result Zb(const std::string& args, const std::string& env = "") {
    return testing_support::RunZb(args, dir_, env);
  }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  std::string Trace(const char* name) const {
    return std::string(ZBKIT_TEST_DATA_DIR) + "/traces/" + name;
  }
  void WriteRules() {
    std::ofstream(Path("rules.json")) << R"({"rules": [{"regex": "^## forward ##$", "kind": "F"},
                         {"regex": "^## backward ##$", "kind": "BW"}]})";
  }

  std::string dir_;
};

// ---- The fake instrumented process ---------------------------------------------------------

// Rank r runs 3 iterations of 2 microbatches: F busy 1000*(r+1) + 10*mb ns, B 2000, W 500 (each
// as one kernel launched inside its range), iteration ranges iter_<r>_<i>. Every iteration is
// flushed; with ZBKIT_FAKE_WORKLOAD=term the process SIGTERMs itself after two of them, the
// third left unflushed, as a job killed mid-run.
TEST(FakeWorkload, DISABLED_Run) {
  const char* mode = std::getenv("ZBKIT_FAKE_WORKLOAD");
  const char* dir = std::getenv("ZBKIT_SHARD_DIR");
  if (mode == nullptr || dir == nullptr) GTEST_SKIP() << "only as zb profile's job";
  const TraceProcess process = CurrentProcess();
  auto writer = ShardWriter::Create(ShardPath(dir, process), process);
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  const int rank = std::max(process.rank, 0);
  int64_t correlation = 1;
  TimeNs t = 1'000'000;
  auto op = [&](const std::string& name, TimeNs busy) {
    writer->Add(TraceRange{name, "", 1, t, t + 100'000, 1});
    writer->Add(Launch{correlation, 1, t + 10});
    writer->Add(DeviceActivity{ActivityKind::kKernel, "gemm", 0, 7, t + 1000, t + 1000 + busy,
                               correlation, 0});
    ++correlation;
    t += 200'000;
  };
  for (int iteration = 0; iteration < 3; ++iteration) {
    if (std::string(mode) == "term" && iteration == 2) {
      op("F0.0.0", 999'999);  // recorded but never flushed
      raise(SIGTERM);
    }
    writer->Add(TraceRange{"iter_" + std::to_string(rank) + "_" + std::to_string(iteration), "", 1,
                           t, t + 2'000'000, 0});
    for (int mb = 0; mb < 2; ++mb)
      op("F" + std::to_string(mb) + ".0.0", 1000 * (rank + 1) + 10 * mb);
    for (int mb = 0; mb < 2; ++mb) {
      op("B" + std::to_string(mb) + ".0.0", 2000);
      op("W" + std::to_string(mb) + ".0.0", 500);
    }
    ASSERT_TRUE(writer->Flush().ok());
  }
}

// ---- zb profile ----------------------------------------------------------------------------

TEST_F(ZbCli, ProfilePassesTheExitCodeThroughWithOneWarningLine) {
  // No injection library: one warning, the command still runs, its exit code comes back.
  Result missing = Zb("profile -- /bin/sh -c 'exit 7'", "ZBKIT_INJECT_LIBRARY=/nonexistent/lib.so");
  EXPECT_EQ(missing.code, 7);
  EXPECT_EQ(CountLines(missing.err), 1) << missing.err;
  EXPECT_NE(missing.err.find("zb profile: warning: ZBKIT_INJECT_LIBRARY=/nonexistent/lib.so does "
                             "not exist"),
            std::string::npos)
      << missing.err;
  EXPECT_NE(missing.out.find("nothing was recorded"), std::string::npos) << missing.out;

  // A library present (never loaded: sh initializes neither CUDA nor NVTX): nothing recorded,
  // one warning line.
  std::ofstream(Path("libfake.so")) << "";
  Result present =
      Zb("profile -- /bin/sh -c 'exit 7'", "ZBKIT_INJECT_LIBRARY=" + Path("libfake.so"));
  EXPECT_EQ(present.code, 7);
  EXPECT_EQ(CountLines(present.err), 1) << present.err;
  EXPECT_NE(present.err.find("zb profile: warning: nothing was recorded"), std::string::npos)
      << present.err;

  // With --json, a run that recorded nothing still prints the report: no stages, and why.
  Result json_empty =
      Zb("profile --json -- /bin/sh -c 'exit 7'", "ZBKIT_INJECT_LIBRARY=" + Path("libfake.so"));
  EXPECT_EQ(json_empty.code, 7);
  EXPECT_EQ(CountLines(json_empty.err), 1) << json_empty.err;
  const nlohmann::json empty = nlohmann::json::parse(json_empty.out);
  EXPECT_EQ(empty["format"], "zb-profile-report/1");
  EXPECT_EQ(empty["ranks"], 0);
  EXPECT_TRUE(empty["stages"].empty());
  EXPECT_EQ(empty["exit_code"], 7);
  EXPECT_NE(empty["nothing"].get<std::string>().find("nothing was recorded"), std::string::npos);

  // The child sees the injection variables and the shard directory.
  Result env = Zb("profile --shard-dir " + Path("kept") +
                      " -- /bin/sh -c 'test \"$CUDA_INJECTION64_PATH\" = \"$ZBKIT_INJECT_LIBRARY\""
                      " && test \"$NVTX_INJECTION64_PATH\" = \"$ZBKIT_INJECT_LIBRARY\""
                      " && test -d \"$ZBKIT_SHARD_DIR\" && exit 3'",
                  "ZBKIT_INJECT_LIBRARY=" + Path("libfake.so"));
  EXPECT_EQ(env.code, 3) << env.err;

  // Killed by a signal: 128 + signal.
  Result killed = Zb("profile -- /bin/sh -c 'kill -TERM $$'", "ZBKIT_INJECT_LIBRARY=/nonexistent");
  EXPECT_EQ(killed.code, 128 + SIGTERM);
  Result not_found = Zb("profile -- /nonexistent/program", "ZBKIT_INJECT_LIBRARY=/nonexistent");
  EXPECT_EQ(not_found.code, 127);
  EXPECT_NE(not_found.err.find("cannot run /nonexistent/program"), std::string::npos);
}

// torchrun and schedulers stop a job by signalling the launcher: zb forwards it to the command
// and reports the command's death (128 + SIGTERM).
TEST_F(ZbCli, ProfileForwardsSigtermToTheCommand) {
  const pid_t zb = fork();
  ASSERT_GE(zb, 0);
  if (zb == 0) {
    setenv("ZBKIT_INJECT_LIBRARY", "/nonexistent", 1);
    if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) _exit(125);
    execl(ZBKIT_ZB_BINARY, "zb", "profile", "--", "/bin/sleep", "30", static_cast<char*>(nullptr));
    _exit(126);
  }
  const auto start = std::chrono::steady_clock::now();
  usleep(500'000);  // zb has installed its handler and started sleep by now
  ASSERT_EQ(kill(zb, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(waitpid(zb, &status, 0), zb);
  ASSERT_TRUE(WIFEXITED(status)) << "zb itself was killed";
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

TEST_F(ZbCli, ProfileUsageErrors) {
  Result no_command = Zb("profile --pp 2");
  EXPECT_EQ(no_command.code, 2);
  EXPECT_NE(no_command.err.find("give the command to profile after --"), std::string::npos);
  EXPECT_EQ(Zb("profile --layout zigzag -- true").code, 2);
  EXPECT_EQ(Zb("profile --skip-iters -1 -- true").code, 2);
  EXPECT_EQ(Zb("profile --hidden 1024 -- true").code, 2);  // the estimate needs every dimension
  Result rules = Zb("profile --rules /nonexistent.json -- true");
  EXPECT_EQ(rules.code, 1);
  EXPECT_EQ(CountLines(rules.err), 1);
}

TEST_F(ZbCli, ProfileMergesShardsOfEveryRankStoresAndFeedsTune) {
  const std::string self = SelfPath();
  const std::string job =
      "RANK=0 WORLD_SIZE=2 '" + self +
      "' --gtest_also_run_disabled_tests --gtest_filter=FakeWorkload.DISABLED_Run >/dev/null & "
      "RANK=1 WORLD_SIZE=2 '" +
      self +
      "' --gtest_also_run_disabled_tests --gtest_filter=FakeWorkload.DISABLED_Run >/dev/null; wait";
  const std::string store = Path("zb.db");
  Result profile = Zb("profile --pp 2 --skip-iters 1 --store '" + store +
                          "' --name fake --json -- /bin/sh -c \"" + job + "\"",
                      "ZBKIT_FAKE_WORKLOAD=run ZBKIT_INJECT_LIBRARY=/nonexistent");
  ASSERT_EQ(profile.code, 0) << profile.err << profile.out;
  EXPECT_EQ(CountLines(profile.err), 1) << profile.err;  // the missing-library warning only
  const nlohmann::json report = nlohmann::json::parse(profile.out);
  EXPECT_EQ(report["format"], "zb-profile-report/1");
  EXPECT_EQ(report["processes"], 2);
  EXPECT_EQ(report["ranks"], 2);
  EXPECT_EQ(report["split"], true);
  EXPECT_EQ(report["iterations"]["seen"], 3);
  EXPECT_EQ(report["iterations"]["used"], 2);
  const nlohmann::json& stages = report["per_rank"];
  ASSERT_EQ(stages.size(), 2u);
  // Rank 0: F samples {1000, 1010} x 2 -> median 1005 ns; rank 1: {2000, 2010} -> 2005.
  EXPECT_DOUBLE_EQ(stages[0]["F"]["median"].get<double>(), 1005 / 1e6);
  EXPECT_EQ(stages[0]["F"]["samples"], 4);
  EXPECT_DOUBLE_EQ(stages[1]["F"]["median"].get<double>(), 2005 / 1e6);
  EXPECT_DOUBLE_EQ(stages[1]["B"]["median"].get<double>(), 2000 / 1e6);
  EXPECT_DOUBLE_EQ(stages[1]["W"]["median"].get<double>(), 500 / 1e6);
  EXPECT_EQ(report["store"]["cost_profile"], 1);

  // The stored profile exports as zb-costs/1 and zb tune takes it.
  Result exported =
      Zb("costs export --store '" + store + "' --format json -o '" + Path("costs.json") + "'");
  ASSERT_EQ(exported.code, 0) << exported.err;
  EXPECT_TRUE(exported.err.empty()) << exported.err;  // it has a B/W split: no note
  const nlohmann::json costs = nlohmann::json::parse(ReadFile(Path("costs.json")));
  EXPECT_EQ(costs["format"], "zb-costs/1");
  ASSERT_EQ(costs["stages"].size(), 2u);
  EXPECT_DOUBLE_EQ(costs["stages"][1]["F"].get<double>(), 2005 / 1e6);
  Result tune = Zb("tune --costs '" + Path("costs.json") + "' -m 4 --mem-limit none");
  EXPECT_EQ(tune.code, 0) << tune.err;
  EXPECT_NE(tune.out.find("best:"), std::string::npos) << tune.out;
  // A profile of stage totals only (no per-block costs were measured): --format layers says so.
  Result layers = Zb("costs export --store '" + store + "' --format layers -o -");
  EXPECT_EQ(layers.code, 1);
  EXPECT_TRUE(layers.out.empty());
  EXPECT_NE(layers.err.find("cost profile 1 has stage totals only"), std::string::npos)
      << layers.err;

  Result list = Zb("costs list --store '" + store + "' --json");
  ASSERT_EQ(list.code, 0) << list.err;
  const nlohmann::json profiles = nlohmann::json::parse(list.out)["profiles"];
  ASSERT_EQ(profiles.size(), 1u);
  EXPECT_EQ(profiles[0]["job"], "fake");
  EXPECT_EQ(profiles[0]["run"], 1);
  EXPECT_EQ(profiles[0]["memory_source"], "none");
}

TEST_F(ZbCli, JobKilledMidRunKeepsWhatWasRecorded) {
  const std::string kept = Path("shards");
  Result profile =
      Zb("profile --json --shard-dir '" + kept + "' -- '" + SelfPath() +
             "' --gtest_also_run_disabled_tests --gtest_filter=FakeWorkload.DISABLED_Run",
         "ZBKIT_FAKE_WORKLOAD=term RANK=0 ZBKIT_INJECT_LIBRARY=/nonexistent");
  EXPECT_EQ(profile.code, 128 + SIGTERM) << profile.err;
  // gtest prints its banner before the job dies; the report is the JSON after it.
  const size_t json_start = profile.out.find("{\n");
  ASSERT_NE(json_start, std::string::npos) << profile.out;
  const nlohmann::json report = nlohmann::json::parse(profile.out.substr(json_start));
  EXPECT_EQ(report["iterations"]["seen"], 2);  // the unflushed third one is gone
  EXPECT_EQ(report["per_rank"][0]["F"]["samples"], 4);
  // The kept shards can be analyzed again, and a second run refuses to mix into them.
  Result again = Zb("import '" + kept + "' --json");
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(nlohmann::json::parse(again.out)["iterations"]["seen"], 2);
  EXPECT_EQ(Zb("profile --shard-dir '" + kept + "' -- true").code, 2);
}

// ---- zb import -----------------------------------------------------------------------------

// --help ends with examples and the range names the profiler knows.
TEST_F(ZbCli, HelpGivesExamplesAndTheNamingConventions) {
  for (const char* command : {"profile", "import"}) {
    Result help = Zb(std::string(command) + " --help");
    EXPECT_EQ(help.code, 0) << command;
    EXPECT_NE(help.out.find("examples:\n  zb " + std::string(command) + " "), std::string::npos)
        << help.out;
    for (const char* name : {"zb:<F|B|W|BW>:s<stage>:mb<mb>", "PP:<stage><F|I|W|B><mb>",
                             "ProfilerStep#<n>", "--rules FILE"}) {
      EXPECT_NE(help.out.find(name), std::string::npos) << command << ": " << name;
    }
  }
}

TEST_F(ZbCli, ImportRealTracesWithAndWithoutRules) {
  WriteRules();
  for (const char* name : {"kineto_ddp_nccl_rank-0.json.gz", "kineto_sampled_rank-0.json.gz"}) {
    Result none = Zb("import '" + Trace(name) + "'");
    EXPECT_EQ(none.code, 1) << name;
    EXPECT_EQ(CountLines(none.err), 1) << none.err;
    EXPECT_EQ(none.err.rfind("zb import: no pipeline ops recognized in ", 0), 0u) << none.err;
    // What a user writes --rules for: the job's own annotations, not the aten:: operators.
    EXPECT_NE(none.err.find("most frequent annotations: "), std::string::npos) << none.err;
    EXPECT_NE(none.err.find(std::string(name).find("ddp") != std::string::npos
                                ? "\"## forward ##\" x3"
                                : "\"## encoder fp8 None ##\" x4"),
              std::string::npos)
        << none.err;
    EXPECT_EQ(none.err.find("aten::"), std::string::npos) << none.err;
    EXPECT_TRUE(none.out.empty());

    Result text =
        Zb("import '" + Trace(name) + "' --format chrome --rules '" + Path("rules.json") + "'");
    ASSERT_EQ(text.code, 0) << text.err;
    EXPECT_NE(text.out.find("## forward ##"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("## backward ##"), std::string::npos);
    EXPECT_NE(text.out.find("BW_ms"), std::string::npos);
    EXPECT_NE(text.out.find("no B/W split"), std::string::npos);

    Result json = Zb("import '" + Trace(name) + "' --json --rules '" + Path("rules.json") + "'");
    ASSERT_EQ(json.code, 0) << json.err;
    const nlohmann::json report = nlohmann::json::parse(json.out);
    int compute = 0;
    for (const auto& op : report["ops"]) {
      if (op["kind"] == "COMM") continue;
      ++compute;
      EXPECT_GT(op["busy_ns"].get<int64_t>(), 0) << op.dump();
      EXPECT_LE(op["busy_ns"].get<int64_t>(),
                op["cpu_end_ns"].get<int64_t>() - op["cpu_start_ns"].get<int64_t>());
      EXPECT_GT(op["kernels"].get<int>(), 0);
    }
    EXPECT_GE(compute, 4) << name;
    EXPECT_EQ(report["memory_source"], "none");
  }
}

// Issue 10 item 7 on the bundled DDP trace: one data-parallel rank is one pipeline rank of one
// stage (no invented empty stages), and a rule whose ranges enclose another rule's
// (ProfilerStep#n around "## forward ##") gets a note; every op with kernels reports their time,
// never its CPU range, and the stored timeline keeps the busy time apart from the span.
TEST_F(ZbCli, ImportOfNestedRulesOnARealTraceSaysSoAndReportsKernelTime) {
  std::ofstream(Path("nested.json")) << R"({"rules": [{"regex": "^## forward ##$", "kind": "F"},
                       {"regex": "^ProfilerStep#", "kind": "BW"}]})";
  const std::string store = Path("nested.db");
  Result import = Zb("import '" + Trace("kineto_ddp_nccl_rank-0.json.gz") + "' --rules '" +
                     Path("nested.json") + "' --json --store '" + store + "'");
  ASSERT_EQ(import.code, 0) << import.err;
  const nlohmann::json report = nlohmann::json::parse(import.out);
  EXPECT_EQ(report["ranks"], 1);
  EXPECT_EQ(report["stages"].size(), 1u);
  bool noted = false;
  for (const auto& note : report["notes"]) {
    noted = noted || note.get<std::string>().find(
                         "nest inside others ('## forward ##' inside "
                         "'ProfilerStep#4')") != std::string::npos;
  }
  EXPECT_TRUE(noted) << report["notes"].dump();
  int outer = 0;
  for (const auto& op : report["ops"]) {
    if (op["kind"] == "COMM" || op["kernels"].get<int>() == 0) continue;
    const int64_t cpu = op["cpu_end_ns"].get<int64_t>() - op["cpu_start_ns"].get<int64_t>();
    EXPECT_LT(op["busy_ns"].get<int64_t>(), cpu) << op.dump();
    if (op["kind"] == "BW") ++outer;
  }
  EXPECT_EQ(outer, 3);
  // The stored measured timeline: F is 12.9 ms of device work in a ~98 ms span.
  auto opened = Store::Open(store, Store::Mode::kReadOnly);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  auto timelines = opened->ListTimelines();
  ASSERT_TRUE(timelines.ok());
  ASSERT_EQ(timelines->size(), 1u);
  auto timeline = opened->LoadTimeline(timelines->front().id);
  ASSERT_TRUE(timeline.ok());
  int forwards = 0;
  for (const TimelineOp& op : timeline->ops) {
    if (op.kind != OpKind::kF) continue;
    ++forwards;
    EXPECT_EQ(op.kernels, 450);
    EXPECT_NEAR(static_cast<double>(op.busy), 12.9e6, 0.1e6);
    EXPECT_GT(op.end - op.start, 90'000'000);
    ASSERT_GE(op.name, 0);
    EXPECT_EQ(timeline->names[static_cast<size_t>(op.name)], "## forward ##");
  }
  EXPECT_EQ(forwards, 3);
}

TEST_F(ZbCli, ImportStoresAFusedProfileThatExportsWithANote) {
  WriteRules();
  const std::string store = Path("zb.db");
  Result import = Zb("import '" + Trace("kineto_ddp_nccl_rank-0.json.gz") + "' --rules '" +
                     Path("rules.json") + "' --store '" + store + "'");
  ASSERT_EQ(import.code, 0) << import.err;
  EXPECT_NE(import.out.find("stored in"), std::string::npos);
  Result exported = Zb("costs export --store '" + store + "' -o -");
  ASSERT_EQ(exported.code, 0) << exported.err;
  EXPECT_EQ(CountLines(exported.err), 1);
  EXPECT_NE(exported.err.find("no B/W split"), std::string::npos) << exported.err;
  const nlohmann::json costs = nlohmann::json::parse(exported.out);
  EXPECT_GT(costs["stages"][0]["B"].get<double>(), 0);
  EXPECT_EQ(costs["stages"][0]["W"].get<double>(), 0);
  std::ofstream(Path("c.json")) << exported.out;
  EXPECT_EQ(Zb("tune --costs '" + Path("c.json") + "' -m 2 --mem-limit none").code, 0);
}

// A torch.profiler trace of one rank as zbkit's shim writes it: `PP:` ranges of the given global
// stages (F, I, W of two microbatches per iteration, two iterations) and the schedule class as
// the top-level metadata.
std::string PpRankTrace(int rank, const std::vector<int>& stages, const std::string& klass) {
  nlohmann::json events = nlohmann::json::array();
  double t = 0;
  for (int iteration = 0; iteration < 2; ++iteration) {
    events.push_back({{"ph", "X"},
                      {"cat", "user_annotation"},
                      {"name", "ProfilerStep#" + std::to_string(iteration)},
                      {"pid", 10 + rank},
                      {"tid", 10 + rank},
                      {"ts", t},
                      {"dur", 500}});
    t += 1;
    for (int stage : stages) {
      for (const char* kind : {"F", "I", "W"}) {
        for (int mb = 0; mb < 2; ++mb) {
          events.push_back({{"ph", "X"},
                            {"cat", "user_annotation"},
                            {"name", "PP:" + std::to_string(stage) + kind + std::to_string(mb)},
                            {"pid", 10 + rank},
                            {"tid", 10 + rank},
                            {"ts", t},
                            {"dur", 10}});
          t += 11;
        }
      }
    }
    t += 400;
  }
  return nlohmann::json{{"traceEvents", events},
                        {"distributedInfo", {{"rank", rank}, {"world_size", 2}}},
                        {"zbkit_schedule_class", klass}}
      .dump();
}

// The profile records the job's layout, read from which rank ran which stage, and the class the
// shim named; zb tune then keeps to it by default.
TEST_F(ZbCli, ImportRecordsTheJobsLayoutAndTuneKeepsToIt) {
  const std::string dir = Path("traces");
  fs::create_directories(dir);
  std::ofstream(dir + "/rank0.json") << PpRankTrace(0, {0, 3}, "ScheduleZBVZeroBubble");
  std::ofstream(dir + "/rank1.json") << PpRankTrace(1, {1, 2}, "ScheduleZBVZeroBubble");
  const std::string costs = Path("costs.json");
  Result text = Zb("import '" + dir + "' --format chrome --pp 2 --out '" + costs + "'");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("layout: v (2 stages per rank in V placement, ran "
                          "ScheduleZBVZeroBubble): zb tune proposes orders of this layout"),
            std::string::npos)
      << text.out;
  const nlohmann::json written = nlohmann::json::parse(ReadFile(costs));
  EXPECT_EQ(written["layout"], (nlohmann::json{{"placement", "v"},
                                               {"stages_per_rank", 2},
                                               {"schedule", "ScheduleZBVZeroBubble"}}));
  EXPECT_EQ(
      written["stages"].size() * (written.contains("count") ? written["count"].get<int>() : 1),
      2u);  // one entry per rank

  // --layers-out of traces without per-block files: one line naming it, exit 1, and what was
  // measured is still reported and stored.
  const std::string store = Path("layers.db");
  Result no_layers = Zb("import '" + dir + "' --format chrome --pp 2 --store '" + store +
                        "' --layers-out '" + Path("layers.json") + "'");
  EXPECT_EQ(no_layers.code, 1);
  EXPECT_NE(no_layers.err.find("--layers-out " + Path("layers.json") +
                               ": no per-block costs were measured"),
            std::string::npos)
      << no_layers.err;
  EXPECT_NE(no_layers.out.find("stored in"), std::string::npos) << no_layers.out;
  EXPECT_FALSE(fs::exists(Path("layers.json")));

  // A multi-host job keeps each host's ranks in a directory of its own: one import of both.
  const std::string host0 = Path("host0");
  const std::string host1 = Path("host1");
  fs::create_directories(host0);
  fs::create_directories(host1);
  fs::copy_file(dir + "/rank0.json", host0 + "/rank0.json");
  fs::copy_file(dir + "/rank1.json", host1 + "/rank1.json");
  Result json = Zb("import '" + host0 + "' '" + host1 + "' --format chrome --pp 2 --json");
  ASSERT_EQ(json.code, 0) << json.err;
  const nlohmann::json report = nlohmann::json::parse(json.out);
  EXPECT_EQ(report["processes"], 2);
  EXPECT_EQ(report["ranks"], 2);
  EXPECT_EQ(report["layout"], "v");
  EXPECT_EQ(report["layout_known"], true);
  EXPECT_EQ(report["schedule_class"], "ScheduleZBVZeroBubble");

  Result tune = Zb("tune --costs '" + costs + "' -m 4 --mem-limit 2x --json");
  ASSERT_EQ(tune.code, 0) << tune.err;
  const nlohmann::json tuned = nlohmann::json::parse(tune.out);
  EXPECT_EQ(tuned["layout"], "v");
  EXPECT_EQ(tuned["layout_from_profile"], true);
  const std::string best = tuned["best"];
  EXPECT_TRUE(best == "zb-v" || best == "v-half" || best == "v-min") << best;
}

TEST_F(ZbCli, ImportAndCostsErrors) {
  EXPECT_EQ(Zb("import").code, 2);
  EXPECT_EQ(Zb("import '" + Trace("kineto_sampled_rank-0.json.gz") + "' --format perfetto").code,
            2);
  Result missing = Zb("import /nonexistent/trace.json");
  EXPECT_EQ(missing.code, 1);
  EXPECT_EQ(CountLines(missing.err), 1);
  EXPECT_EQ(Zb("costs").code, 2);
  EXPECT_EQ(Zb("costs frobnicate").code, 2);
  EXPECT_EQ(Zb("costs export --store '" + Path("none.db") + "' -o -").code, 1);
  EXPECT_EQ(Zb("costs export --store x.db --format csv -o -").code, 2);
  // A store with no measured profile says so.
  Result tuned = Zb(std::string("tune --costs '") + ZBKIT_TEST_DATA_DIR +
                    "/costs/uniform4.json' -m 8 --mem-limit none --store '" + Path("t.db") + "'");
  ASSERT_EQ(tuned.code, 0) << tuned.err;
  Result empty = Zb("costs export --store '" + Path("t.db") + "' -o -");
  EXPECT_EQ(empty.code, 1);
  EXPECT_NE(empty.err.find("no measured cost profile"), std::string::npos) << empty.err;
  EXPECT_EQ(Zb("costs export --store '" + Path("t.db") + "' --profile 1 -o -").code, 0);
}

}  // namespace
}  // namespace zb::profiler
