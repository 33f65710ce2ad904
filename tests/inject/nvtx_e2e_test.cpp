// SPDX-License-Identifier: Apache-2.0
// End-to-end: zbkit_nvtx_job (a real multi-process program using only the nvtx3 headers) run with
// libzbkit_inject.so as its NVTX tool and CUDA injection, exactly as `zb profile` would start it,
// then every process's shard read back with ReadShard.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "job_truth.h"
#include "nvtx_job_plan.h"
#include "process_runner.h"
#include "zbkit/profiler/shard.h"

namespace zb::profiler {
namespace {

using zb::testing::ChildProcess;
using zb::testing::Lines;
using zb::testing::ProcessResult;
using zb::testing::RunProcess;

constexpr char kJob[] = ZBKIT_NVTX_JOB;
constexpr char kLibrary[] = ZBKIT_INJECT_LIBRARY;

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/zbkit_inject_XXXXXX";
    path_ = mkdtemp(pattern);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::map<std::string, std::string> ToolEnv(const std::string& dir,
                                           std::map<std::string, std::string> extra = {}) {
  extra["NVTX_INJECTION64_PATH"] = kLibrary;
  extra["CUDA_INJECTION64_PATH"] = kLibrary;
  extra["ZBKIT_SHARD_DIR"] = dir;
  return extra;
}

std::vector<std::string> ShardNames(const std::string& dir) {
  std::vector<std::string> names;
  auto shards = ListShards(dir);
  if (!shards.ok()) return names;
  for (const std::string& path : *shards) {
    names.push_back(std::filesystem::path(path).filename().string());
  }
  return names;
}

RawTrace MustRead(const std::string& path) {
  auto trace = ReadShard(path);
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  return trace.ok() ? *trace : RawTrace{};
}

std::vector<const TraceRange*> Named(const RawTrace& trace, const std::string& prefix) {
  std::vector<const TraceRange*> out;
  for (const TraceRange& r : trace.ranges) {
    if (r.name.rfind(prefix, 0) == 0) out.push_back(&r);
  }
  return out;
}

double MedianUs(const std::vector<const TraceRange*>& ranges) {
  std::vector<double> us;
  for (const TraceRange* r : ranges)
    us.push_back(static_cast<double>(r->end - r->start) / 1e3);
  if (us.empty()) return 0;
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

int64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

void ExpectWellFormed(const RawTrace& trace) {
  for (const TraceRange& r : trace.ranges) {
    EXPECT_LE(r.start, r.end) << r.name;
    EXPECT_GT(r.start, 0) << r.name;
    EXPECT_GT(r.thread, 0) << r.name;
    EXPECT_GE(r.depth, 0) << r.name;
  }
}

// The job's ranges on one rank: names (registered strings named), domains, per-thread depths,
// nesting and the cross-thread start/end range.
void CheckRank(const RawTrace& trace, int rank, int iters, int microbatches) {
  SCOPED_TRACE("rank " + std::to_string(rank));
  ExpectWellFormed(trace);
  const auto iterations = Named(trace, "iter_" + std::to_string(rank) + "_");
  EXPECT_EQ(static_cast<int>(iterations.size()), iters);
  if (iterations.empty()) return;
  const int64_t main_thread = iterations[0]->thread;
  for (const TraceRange* it : iterations) {
    EXPECT_EQ(it->depth, 0);
    EXPECT_EQ(it->domain, "");
    EXPECT_EQ(it->thread, main_thread);
  }
  for (const char* phase : {"F", "B", "W"}) {
    for (int mb = 0; mb < microbatches; ++mb) {
      const std::string name = phase + std::to_string(mb) + ".0.0";
      int found = 0;
      for (const TraceRange& r : trace.ranges) {
        if (r.name != name) continue;
        ++found;
        EXPECT_EQ(r.depth, 1) << name;
        EXPECT_EQ(r.thread, main_thread) << name;
        // Inside exactly one iteration range.
        int parents = 0;
        for (const TraceRange* it : iterations) {
          parents += it->start <= r.start && r.end <= it->end ? 1 : 0;
        }
        EXPECT_EQ(parents, 1) << name;
      }
      EXPECT_EQ(found, iters) << name;
    }
  }
  // NCCL: domain recorded, registered string named, own stack (depth 0).
  const auto sends = Named(trace, "ncclSend");
  EXPECT_EQ(static_cast<int>(sends.size()), iters * microbatches);
  for (const TraceRange* s : sends) {
    EXPECT_EQ(s->domain, "NCCL");
    EXPECT_EQ(s->depth, 0);
    EXPECT_EQ(s->thread, main_thread);
  }
  // The auxiliary thread: its own stack, and the start/end range it ended carries the opener.
  const auto outer = Named(trace, "aux_outer");
  const auto inner = Named(trace, "aux_inner");
  EXPECT_EQ(outer.size(), 1U);
  EXPECT_EQ(inner.size(), 1U);
  if (outer.size() != 1 || inner.size() != 1) return;
  EXPECT_NE(outer[0]->thread, main_thread);
  EXPECT_EQ(inner[0]->thread, outer[0]->thread);
  EXPECT_EQ(outer[0]->depth, 0);
  EXPECT_EQ(inner[0]->depth, 1);
  EXPECT_LE(outer[0]->start, inner[0]->start);
  EXPECT_LE(inner[0]->end, outer[0]->end);
  const auto handoff = Named(trace, "handoff_" + std::to_string(rank));
  EXPECT_EQ(handoff.size(), 1U);
  if (handoff.size() == 1) {
    EXPECT_EQ(handoff[0]->thread, main_thread);  // who opened it, not who closed it
    EXPECT_GE(handoff[0]->end, outer[0]->end);
  }
  EXPECT_EQ(Named(trace, "unicode_\xc2\xb5").size(), 1U);
  const auto attributes = Named(trace, "attributes_ascii");
  const auto mark = Named(trace, "mark");
  EXPECT_EQ(attributes.size(), 1U);
  EXPECT_EQ(mark.size(), 1U);
  if (mark.size() == 1) {
    EXPECT_EQ(mark[0]->start, mark[0]->end);
    EXPECT_EQ(mark[0]->depth, 1);
  }
}

// What one attempt showed of one rank's durations.
struct DurationCheck {
  bool agreed = true;    // every phase's ranges agree with what the job spun
  bool planted = false;  // the job managed to plant its durations
};

// Durations of one rank. Every F/B/W/ncclSend range agrees with how long the job itself measured
// it was inside it (median error <= 1%, 90% of ranges within 5%): judged on the last attempt, an
// earlier one that misses it is retried (a preemption between the job's clock and its NVTX call,
// on a machine loaded by a compiler or a sanitizer build, stretches single ranges). When the job
// managed to plant its durations (an idle machine), also: the per-phase medians within 5% of the
// planted ones.
DurationCheck CheckDurations(const RawTrace& trace, int rank, const std::string& truth_path,
                             bool last_attempt) {
  const auto truth = zb::testing::ReadTruth(truth_path);
  EXPECT_EQ(truth.size(), 4U) << truth_path;
  std::map<std::string, std::vector<const TraceRange*>> recorded;
  for (const TraceRange& r : trace.ranges) {
    const std::string phase = zb::testing::PhaseOf(r.name);
    if (!phase.empty()) recorded[phase].push_back(&r);
  }
  const bool planted = zb::testing::Planted(truth, rank);
  DurationCheck check;
  check.planted = planted;
  for (const auto& [phase, measured] : truth) {
    auto& ranges = recorded[phase];
    std::sort(ranges.begin(), ranges.end(),
              [](const TraceRange* a, const TraceRange* b) { return a->start < b->start; });
    EXPECT_EQ(ranges.size(), measured.size()) << phase;
    if (ranges.size() != measured.size()) continue;
    std::vector<double> errors;
    std::vector<double> truth_us;
    for (size_t i = 0; i < ranges.size(); ++i) {
      const double spun = static_cast<double>(measured[i]);
      // Relative to at least 1 ms: a fixed few hundred ns of NVTX overhead is not 5% of the
      // 200 us ncclSend range in a sanitizer build.
      errors.push_back(std::abs(static_cast<double>(ranges[i]->end - ranges[i]->start) - spun) /
                       std::max(spun, 1e6));
      truth_us.push_back(spun / 1e3);
    }
    std::sort(errors.begin(), errors.end());
    const double median_error = errors[errors.size() / 2];
    const double p90_error = errors[errors.size() * 9 / 10];
    const double recovered = MedianUs(ranges);
    const double planted_us = static_cast<double>(zb::testing::PlantedUs(phase, rank));
    std::printf(
        "[ measure  ] rank %d %-8s planted %6.0f us, job spun median %9.1f us, "
        "recovered median %9.1f us (%+.3f%% vs planted), per-range error vs spun: "
        "median %.3f%%, p90 %.3f%%\n",
        rank, phase.c_str(), planted_us, zb::testing::Median(truth_us), recovered,
        100 * (recovered - planted_us) / planted_us, 100 * median_error, 100 * p90_error);
    check.agreed = check.agreed && median_error <= 0.01 && p90_error <= 0.05;
    if (last_attempt) {
      EXPECT_LE(median_error, 0.01) << phase;
      EXPECT_LE(p90_error, 0.05) << phase;
    }
    if (planted) {
      // ncclSend is short (200 us): judged against the shortest phase (1 ms), i.e. 50 us.
      const double tolerance = phase == "ncclSend" ? 0.05 * 1000 / planted_us : 0.05;
      EXPECT_LE(std::abs(recovered - planted_us) / planted_us, tolerance) << phase;
    }
  }
  return check;
}

// Busy loops in concurrent processes measure wall time: on a loaded machine (two cores shared
// with a compiler) preemption stretches what the job plants. The structure and the agreement
// with what the job really spun on every attempt too, the agreement judged on the last; the
// comparison with the planted durations needs an attempt where the job managed to plant them (up
// to three tries).
constexpr int kTimingAttempts = 3;

TEST(NvtxEndToEndTest, MultiProcessJobRecoversNamesNestingAndDurations) {
  constexpr int kWorkers = 2;
  constexpr int kIters = 3;
  constexpr int kMicrobatches = 4;
  const std::vector<std::string> argv = {kJob,
                                         "--workers",
                                         std::to_string(kWorkers),
                                         "--iters",
                                         std::to_string(kIters),
                                         "--microbatches",
                                         std::to_string(kMicrobatches),
                                         "--exit-code",
                                         "3"};
  const ProcessResult plain = RunProcess(argv, {});
  ASSERT_EQ(plain.exit_code(), 3) << plain.err;

  bool planted = false;
  bool agreed = false;
  for (int attempt = 0; attempt < kTimingAttempts && !(planted && agreed); ++attempt) {
    SCOPED_TRACE("attempt " + std::to_string(attempt));
    TempDir dir;
    TempDir truth;
    std::vector<std::string> with_truth = argv;
    with_truth.insert(with_truth.end(), {"--truth", truth.path() + "/spun"});
    const ProcessResult profiled = RunProcess(with_truth, ToolEnv(dir.path()));
    // The job is unharmed: same exit code, same stdout, nothing on stderr.
    EXPECT_EQ(profiled.exit_code(), plain.exit_code());
    EXPECT_EQ(profiled.out, plain.out);
    EXPECT_EQ(profiled.err, "");
    EXPECT_EQ(plain.err, "");

    // One shard per worker, named by rank; the launcher made no NVTX call and has none.
    const std::vector<std::string> expected = {"rank0.zbshard", "rank1.zbshard"};
    ASSERT_EQ(ShardNames(dir.path()), expected);
    // Closed at exit: the WAL was checkpointed into the shard and removed.
    for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
      const std::string name = entry.path().filename().string();
      EXPECT_EQ(name.find("-wal"), std::string::npos) << name;
    }
    planted = true;
    agreed = true;
    for (int rank = 0; rank < kWorkers; ++rank) {
      const RawTrace trace = MustRead(dir.path() + "/rank" + std::to_string(rank) + ".zbshard");
      EXPECT_EQ(trace.process.rank, rank);
      EXPECT_EQ(trace.process.local_rank, rank);
      EXPECT_EQ(trace.process.world_size, kWorkers);
      EXPECT_GT(trace.process.pid, 0);
      EXPECT_EQ(trace.source, "inject");
      EXPECT_EQ(trace.dropped_records, 0);
      EXPECT_TRUE(trace.activities.empty());  // no GPU
      CheckRank(trace, rank, kIters, kMicrobatches);
      const DurationCheck check =
          CheckDurations(trace, rank, truth.path() + "/spun.rank" + std::to_string(rank),
                         attempt + 1 == kTimingAttempts);
      planted = planted && check.planted;
      agreed = agreed && check.agreed;
    }
  }
  if (!planted) {
    std::printf(
        "[ note     ] the machine was too busy for the job to plant its durations in %d "
        "attempts: checked against what it spun only\n",
        kTimingAttempts);
  }
}

TEST(NvtxEndToEndTest, WithoutShardDirTheLibraryIsInertAndSilent) {
  TempDir dir;
  const std::vector<std::string> argv = {kJob, "--iters", "1", "--simulate-driver"};
  const ProcessResult plain = RunProcess(argv, {{"RANK", "0"}});
  ProcessResult tool = RunProcess(
      argv,
      {{"RANK", "0"}, {"NVTX_INJECTION64_PATH", kLibrary}, {"CUDA_INJECTION64_PATH", kLibrary}});
  EXPECT_EQ(tool.exit_code(), 0);
  EXPECT_EQ(tool.out, plain.out);
  EXPECT_EQ(tool.err, "");  // not started by `zb profile`: no warning, no CUPTI, no shard
  EXPECT_TRUE(ShardNames(dir.path()).empty());
}

TEST(NvtxEndToEndTest, NoGpuGivesExactlyOneWarningAndAnUnharmedJob) {
  const std::vector<std::string> argv = {kJob,          "--iters", "2", "--simulate-driver",
                                         "--exit-code", "5"};
  const ProcessResult plain = RunProcess(argv, {{"RANK", "0"}});
  ASSERT_EQ(plain.exit_code(), 5);
  TempDir dir;
  const ProcessResult profiled = RunProcess(argv, ToolEnv(dir.path(), {{"RANK", "0"}}));
  EXPECT_EQ(profiled.exit_code(), 5);
  EXPECT_EQ(profiled.out, plain.out);
  const auto lines = Lines(profiled.err);
  ASSERT_EQ(lines.size(), 1U) << profiled.err;
  std::printf("[ warning  ] %s\n", lines[0].c_str());
  EXPECT_EQ(lines[0].rfind("zbkit: CUPTI unavailable (", 0), 0U) << lines[0];
  EXPECT_NE(lines[0].find("): recording NVTX ranges only"), std::string::npos) << lines[0];
  // ...and NVTX ranges are still recorded.
  const RawTrace trace = MustRead(dir.path() + "/rank0.zbshard");
  EXPECT_EQ(Named(trace, "iter_0_").size(), 2U);
  ExpectWellFormed(trace);
}

TEST(NvtxEndToEndTest, DriverStubGivesExactlyOneWarningAndAnUnharmedJob) {
  // The CUDA stub library where the driver should be (a machine with the toolkit, no driver):
  // CUPTI fails differently (reference A12), the job must not notice either way.
  const char* stub = "/usr/local/cuda/lib/stubs/libcuda.so";
  if (!std::filesystem::exists(stub)) GTEST_SKIP() << "no " << stub;
  TempDir lib;
  std::filesystem::create_symlink(stub, lib.path() + "/libcuda.so.1");
  const std::vector<std::string> argv = {kJob, "--iters", "1", "--simulate-driver"};
  const std::map<std::string, std::string> env = {{"RANK", "0"}, {"LD_LIBRARY_PATH", lib.path()}};
  const ProcessResult plain = RunProcess(argv, env);
  TempDir dir;
  auto tool_env = ToolEnv(dir.path(), env);
  const ProcessResult profiled = RunProcess(argv, tool_env);
  EXPECT_EQ(profiled.exit_code(), plain.exit_code());
  EXPECT_EQ(profiled.out, plain.out);
  const auto lines = Lines(profiled.err);
  ASSERT_EQ(lines.size(), 1U) << profiled.err;
  EXPECT_EQ(lines[0].rfind("zbkit: CUPTI unavailable (", 0), 0U) << lines[0];
  EXPECT_EQ(Named(MustRead(dir.path() + "/rank0.zbshard"), "iter_0_").size(), 1U);
}

TEST(NvtxEndToEndTest, UnwritableShardDirGivesOneWarningAndAnUnharmedJob) {
  const std::vector<std::string> argv = {kJob, "--iters", "1", "--exit-code", "4"};
  const ProcessResult plain = RunProcess(argv, {{"RANK", "0"}});
  TempDir dir;
  const std::string blocked = dir.path() + "/file";
  std::FILE* f = std::fopen(blocked.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  // A regular file where the directory should be: the shard cannot be created.
  const ProcessResult profiled = RunProcess(argv, ToolEnv(blocked, {{"RANK", "0"}}));
  EXPECT_EQ(profiled.exit_code(), 4);
  EXPECT_EQ(profiled.out, plain.out);
  const auto lines = Lines(profiled.err);
  ASSERT_EQ(lines.size(), 1U) << profiled.err;
  EXPECT_EQ(lines[0].rfind("zbkit: cannot create shard ", 0), 0U) << lines[0];
}

TEST(NvtxEndToEndTest, SigtermMidRunKeepsWhatWasRecordedAndStillKills) {
  TempDir dir;
  ChildProcess job({kJob, "--forever", "--microbatches", "2"},
                   ToolEnv(dir.path(), {{"RANK", "0"}}));
  // Long enough for a few iterations (~20 ms each) and at least one periodic flush.
  usleep(1500 * 1000);
  const int64_t killed_at = RealtimeNs();
  ASSERT_EQ(kill(job.pid(), SIGTERM), 0);
  const ProcessResult result = job.Wait(30.0);
  // The handler re-raised: the job still dies by SIGTERM, as its launcher expects.
  EXPECT_FALSE(result.exited());
  EXPECT_EQ(result.signal(), SIGTERM);
  EXPECT_EQ(result.err, "");

  const RawTrace trace = MustRead(dir.path() + "/rank0.zbshard");
  ASSERT_GT(trace.ranges.size(), 0U);
  ExpectWellFormed(trace);
  const auto forwards = Named(trace, "F");
  EXPECT_GT(forwards.size(), 10U);
  // The signal flush wrote up to the signal, not only up to the last periodic (1 s) flush.
  int64_t last_end = 0;
  for (const TraceRange& r : trace.ranges)
    last_end = std::max(last_end, r.end);
  EXPECT_GT(last_end, killed_at - 300 * int64_t{1000000})
      << "last range ended " << (killed_at - last_end) / 1000000 << " ms before the signal";
}

// The job crashing (SIGSEGV, SIGABRT, SIGBUS) under the profiler: it dies by the same signal with
// the same output as without it, and what it recorded before the crash is in the shard. The run
// is far shorter than the 1 s periodic flush: only the flush on the signal can have written it.
TEST(NvtxEndToEndTest, CrashingJobKeepsItsRecordsAndDiesByTheSameSignal) {
#if defined(__SANITIZE_ADDRESS__)
  // ASan handles SIGBUS itself: it prints a report (pids, addresses) and ends the process its own
  // way; the job must still end the same way with the profiler as without it and keep its
  // records. A real SIGSEGV is ASan's alone (it reports the access before any handler of the
  // job's runs), so that case is left to the other builds.
  constexpr bool kSanitized = true;
  std::printf("[ skipped  ] the segv case: ASan reports a null-pointer write before any handler\n");
#else
  constexpr bool kSanitized = false;
#endif
  const std::pair<const char*, int> crashes[] = {
      {"segv", SIGSEGV}, {"abort", SIGABRT}, {"bus", SIGBUS}};
  for (const auto& [kind, sig] : crashes) {
    if (kSanitized && sig == SIGSEGV) continue;
    SCOPED_TRACE(kind);
    const std::vector<std::string> argv = {kJob, "--iters", "2", "--crash", kind};
    const ProcessResult plain = RunProcess(argv, {{"RANK", "0"}});
    if (!kSanitized) {
      ASSERT_EQ(plain.signal(), sig);
    }
    TempDir dir;
    const ProcessResult profiled = RunProcess(argv, ToolEnv(dir.path(), {{"RANK", "0"}}));
    EXPECT_EQ(profiled.signal(), plain.signal());
    EXPECT_EQ(profiled.exit_code(), plain.exit_code());
    EXPECT_EQ(profiled.out, plain.out);
    if (!kSanitized) {
      EXPECT_EQ(profiled.err, plain.err);
    }
    const RawTrace trace = MustRead(dir.path() + "/rank0.zbshard");
    ExpectWellFormed(trace);
    EXPECT_EQ(Named(trace, "iter_0_").size(), 2U);  // both iterations, up to the crash
    EXPECT_EQ(Named(trace, "F").size(), 8U);
    EXPECT_TRUE(Named(trace, "crash_site").empty());  // open when it crashed: never ended
  }
}

// zb profile of a job that crashes: zb's exit code is the job's (128 + the signal), one line says
// which signal killed it, and the report of what was recorded until then follows.
TEST(NvtxEndToEndTest, ZbProfileSaysWhichSignalKilledTheJob) {
  TempDir dir;
  const ProcessResult profiled =
      RunProcess({ZBKIT_ZB_BINARY, "profile", "--shard-dir", dir.path() + "/shards", "--", kJob,
                  "--iters", "2", "--crash", "abort"},
                 {});
  EXPECT_EQ(profiled.exit_code(), 128 + SIGABRT);
  EXPECT_EQ(profiled.err,
            "zb profile: the job was killed by SIGABRT (exit code 134); what it recorded until "
            "then is analyzed below\n");
  EXPECT_NE(profiled.out.find("iterations 2, used 2"), std::string::npos) << profiled.out;
}

// zb profile --json of a job that prints: stdout is the report alone (JSON that parses), the
// job's own output is on stderr.
TEST(NvtxEndToEndTest, ZbProfileJsonStaysParseableWhenTheJobPrints) {
  TempDir dir;
  const ProcessResult profiled = RunProcess({ZBKIT_ZB_BINARY, "profile", "--json", "--shard-dir",
                                             dir.path() + "/shards", "--", kJob, "--iters", "2"},
                                            {});
  EXPECT_EQ(profiled.exit_code(), 0) << profiled.err;
  const nlohmann::json report = nlohmann::json::parse(profiled.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << profiled.out;
  EXPECT_EQ(report.value("format", ""), "zb-profile-report/1");
  EXPECT_NE(profiled.err.find("rank 0: "), std::string::npos) << profiled.err;
}

// SIGKILL cannot be caught: what the periodic flush (about every second) wrote stays readable.
TEST(NvtxEndToEndTest, SigkilledJobKeepsWhatWasFlushed) {
  const std::vector<std::string> argv = {kJob, "--iters", "80", "--crash", "kill"};
  TempDir dir;
  const ProcessResult profiled = RunProcess(argv, ToolEnv(dir.path(), {{"RANK", "0"}}));
  EXPECT_EQ(profiled.signal(), SIGKILL);
  EXPECT_EQ(profiled.err, "");
  const RawTrace trace = MustRead(dir.path() + "/rank0.zbshard");
  ExpectWellFormed(trace);
  EXPECT_GT(Named(trace, "iter_0_").size(), 10U) << "80 iterations of about 20 ms: a flush or more";
}

// A thread that ends with ranges open: the job is unharmed, the ranges it closed are kept, the
// two it never closed are not invented an end.
TEST(NvtxEndToEndTest, ThreadEndingWithOpenRangesLeavesAWellFormedShard) {
  const std::vector<std::string> argv = {kJob, "--iters", "1", "--open-thread-ranges"};
  const ProcessResult plain = RunProcess(argv, {{"RANK", "0"}});
  TempDir dir;
  const ProcessResult profiled = RunProcess(argv, ToolEnv(dir.path(), {{"RANK", "0"}}));
  EXPECT_EQ(profiled.exit_code(), 0);
  EXPECT_EQ(profiled.out, plain.out);
  EXPECT_EQ(profiled.err, "");
  const RawTrace trace = MustRead(dir.path() + "/rank0.zbshard");
  ExpectWellFormed(trace);
  EXPECT_EQ(Named(trace, "closed_inside").size(), 1U);
  EXPECT_TRUE(Named(trace, "left_open").empty());
  EXPECT_EQ(Named(trace, "iter_0_").size(), 1U);
}

// Rings too small for what a thread records (ZBKIT_RING_EVENTS=16, 100,000 ranges in a burst):
// the job is unharmed, the events that did not fit are counted in the shard, and zb import
// says which rank lost how many.
TEST(NvtxEndToEndTest, OverflowingRingsCountAndReportTheLostRecords) {
  const std::vector<std::string> argv = {kJob, "--iters", "2", "--burst", "100000"};
  const ProcessResult plain = RunProcess(argv, {{"RANK", "0"}});
  TempDir dir;
  const ProcessResult profiled =
      RunProcess(argv, ToolEnv(dir.path(), {{"RANK", "0"}, {"ZBKIT_RING_EVENTS", "16"}}));
  EXPECT_EQ(profiled.exit_code(), 0);
  EXPECT_EQ(profiled.out, plain.out);
  EXPECT_EQ(profiled.err, "");
  const RawTrace trace = MustRead(dir.path() + "/rank0.zbshard");
  ExpectWellFormed(trace);
  const size_t kept = Named(trace, "burst").size();
  std::printf("[ overflow ] %zu of 100000 burst ranges kept, %lld records lost\n", kept,
              static_cast<long long>(trace.dropped_records));
  EXPECT_GT(trace.dropped_records, 0);
  EXPECT_LT(kept, 100000U);

  const ProcessResult imported = RunProcess({ZBKIT_ZB_BINARY, "import", dir.path()}, {});
  EXPECT_EQ(imported.exit_code(), 0) << imported.err;
  EXPECT_NE(imported.out.find("rank 0 lost " + std::to_string(trace.dropped_records) +
                              " records (the profiler's buffers were full)"),
            std::string::npos)
      << imported.out;
}

TEST(NvtxEndToEndTest, SigtermChainsToTheJobsOwnHandler) {
  TempDir dir;
  const std::vector<std::string> argv = {kJob, "--forever", "--own-sigterm"};
  ChildProcess job(argv, ToolEnv(dir.path(), {{"RANK", "0"}}));
  usleep(800 * 1000);
  ASSERT_EQ(kill(job.pid(), SIGTERM), 0);
  const ProcessResult result = job.Wait(30.0);
  EXPECT_EQ(result.exit_code(), 143);
  EXPECT_EQ(result.out, "nvtx_job: SIGTERM handled by the job\n");
  const RawTrace trace = MustRead(dir.path() + "/rank0.zbshard");
  EXPECT_GT(Named(trace, "F").size(), 0U);
}

TEST(NvtxEndToEndTest, ForkedChildWritesItsOwnShard) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // GCC 12's LeakSanitizer prints "Running thread ... was not suspended" on stderr in the child
  // of a multi-threaded fork, which is exactly what this test compares; the other builds run it.
  GTEST_SKIP() << "fork of a multi-threaded process is not supported under this sanitizer build";
#endif
  TempDir dir;
  const std::vector<std::string> argv = {kJob, "--iters", "1", "--fork-child"};
  const ProcessResult plain = RunProcess(argv, {{"RANK", "0"}});
  const ProcessResult profiled = RunProcess(argv, ToolEnv(dir.path(), {{"RANK", "0"}}));
  EXPECT_EQ(profiled.exit_code(), 0);
  EXPECT_EQ(profiled.out, plain.out);
  EXPECT_EQ(profiled.err, "");
  const auto names = ShardNames(dir.path());
  ASSERT_EQ(names.size(), 2U);
  EXPECT_EQ(names[1], "rank0.zbshard");
  ASSERT_EQ(names[0].rfind("pid", 0), 0U) << names[0];

  const RawTrace parent = MustRead(dir.path() + "/rank0.zbshard");
  const RawTrace child = MustRead(dir.path() + "/" + names[0]);
  EXPECT_EQ(parent.process.rank, 0);
  EXPECT_EQ(child.process.rank, -1);  // the parent keeps the rank
  EXPECT_NE(child.process.pid, parent.process.pid);
  EXPECT_EQ(Named(child, "child_").size(), static_cast<size_t>(nvtx_job::kForkChildRanges));
  EXPECT_TRUE(Named(child, "iter_").empty());  // nothing of the parent's is written twice
  EXPECT_TRUE(Named(parent, "child_").empty());
  EXPECT_EQ(Named(parent, "after_fork").size(), 1U);
  EXPECT_EQ(Named(parent, "iter_0_").size(), 1U);
  ExpectWellFormed(child);
  for (const TraceRange* r : Named(child, "child_")) {
    EXPECT_EQ(r->depth, 0);
    EXPECT_GE(r->end - r->start, 1000000);  // it spun 1 ms (more if preempted)
    EXPECT_LT(r->end - r->start, 1000000000);
  }
}

TEST(NvtxEndToEndTest, SecondProcessOfARankWritesAPidShard) {
  // Two processes with the same RANK (a rank and, e.g., a compile worker it spawned): the first
  // keeps rank0.zbshard, the second must not truncate it.
  TempDir dir;
  ChildProcess first({kJob, "--forever", "--microbatches", "1"},
                     ToolEnv(dir.path(), {{"RANK", "0"}}));
  usleep(500 * 1000);
  const ProcessResult second =
      RunProcess({kJob, "--iters", "1"}, ToolEnv(dir.path(), {{"RANK", "0"}}));
  EXPECT_EQ(second.exit_code(), 0);
  kill(first.pid(), SIGTERM);
  first.Wait(30.0);
  const auto names = ShardNames(dir.path());
  ASSERT_EQ(names.size(), 2U);
  EXPECT_EQ(names[1], "rank0.zbshard");
  const RawTrace owner = MustRead(dir.path() + "/rank0.zbshard");
  const RawTrace other = MustRead(dir.path() + "/" + names[0]);
  EXPECT_EQ(owner.process.pid, static_cast<int64_t>(first.pid()));
  EXPECT_GT(Named(owner, "iter_0_").size(), 1U);
  EXPECT_EQ(other.process.rank, -1);
  EXPECT_EQ(Named(other, "iter_0_").size(), 1U);
}

}  // namespace
}  // namespace zb::profiler
