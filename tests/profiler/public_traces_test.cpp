// SPDX-License-Identifier: Apache-2.0
// `zb import` on public traces that no one on this project recorded (tests/data/traces/README.md
// says where each comes from), end to end through the real binary: the ranks and stages it reads,
// the F / BW times against figures worked out by hand from the files (the README shows how), and
// that every profile it stores is one `zb costs export` accepts. The faults these traces showed
// (a data-parallel rank 3 of 8 read as four pipeline ranks, a harness's annotation nested in
// itself timed by its CPU span) are classes: any rank id, any world size, any nesting of equal
// names, device time only from kernels.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "temp_dir.h"
#include "zb_command.h"

namespace zb::profiler {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using testing_support::ReadWholeFile;
using testing_support::RunZb;
using testing_support::ZbResult;

std::string TracePath(const std::string& name) {
  return std::string(ZBKIT_TEST_DATA_DIR) + "/traces/" + name;
}

// One public trace and what a reader confirms by hand.
struct PublicTrace {
  const char* label;
  std::vector<std::string> files;  // several: copied into one directory, imported as one job
  const char* rules;               // the JSON rules a user of that job would write
  const char* extra_args;          // e.g. --pp 1
  int ranks;
  int stages;
  double f_ms;  // stage 0's median forward, from the kernels (or CPU spans of a CPU-only job)
  int f_samples;
  double bw_ms;      // 0: no BW rule
  const char* note;  // a note the import must give ("" none required)
};

std::ostream& operator<<(std::ostream& out, const PublicTrace& trace) {
  return out << trace.label;
}

class PublicTraceImport : public ::testing::TestWithParam<PublicTrace> {
 protected:
  ZbResult Zb(const std::string& args) { return RunZb(args, temp_.path()); }
  std::string Path(const std::string& name) const { return temp_.Path(name); }

  testing_support::TempDir temp_;
};

TEST_P(PublicTraceImport, ReadsRanksStagesAndTimesAReaderConfirms) {
  const PublicTrace& trace = GetParam();
  std::string input;
  if (trace.files.size() == 1) {
    input = "'" + TracePath(trace.files[0]) + "'";
  } else {
    fs::create_directories(Path("traces"));
    for (const std::string& file : trace.files)
      fs::copy_file(TracePath(file), Path("traces/" + file));
    input = "--format chrome '" + Path("traces") + "'";
  }
  std::ofstream(Path("rules.json")) << trace.rules;
  const std::string store = Path("zb.db");
  ZbResult import = Zb("import " + input + " --rules '" + Path("rules.json") +
                       "' --json --store '" + store + "' " + trace.extra_args);
  ASSERT_EQ(import.code, 0) << import.err;
  const json report = json::parse(import.out);
  EXPECT_EQ(report["ranks"], trace.ranks);
  EXPECT_EQ(report["num_stages"], trace.stages);
  ASSERT_EQ(report["stages"].size(), static_cast<size_t>(trace.stages));
  const json& stage0 = report["stages"][0];
  EXPECT_NEAR(stage0["F"]["median"].get<double>(), trace.f_ms, 0.0005) << import.out;
  EXPECT_EQ(stage0["F"]["samples"], trace.f_samples);
  if (trace.bw_ms > 0) {
    EXPECT_NEAR(stage0["BW"]["median"].get<double>(), trace.bw_ms, 0.0005) << import.out;
  }
  for (const json& stage : report["stages"])
    EXPECT_GT(stage["F"]["samples"].get<int>(), 0) << "stage " << stage["stage"];
  if (*trace.note != '\0') {
    bool noted = false;
    for (const json& note : report["notes"])
      noted = noted || note.get<std::string>().find(trace.note) != std::string::npos;
    EXPECT_TRUE(noted) << report["notes"].dump();
  }
  // What was stored is a profile zbkit's own exporter takes.
  ZbResult exported =
      Zb("costs export --store '" + store + "' --format json -o '" + Path("costs.json") + "'");
  EXPECT_EQ(exported.code, 0) << exported.err;
}

constexpr const char* kForwardBackward =
    R"({"rules": [{"regex": "^## forward ##$", "kind": "F"},
                  {"regex": "^## backward ##$", "kind": "BW"}]})";

INSTANTIATE_TEST_SUITE_P(
    HandChecked, PublicTraceImport,
    ::testing::Values(
        // DistributedDataParallel, NCCL, rank 0 of 2: forwards of 12.897, 12.878 and 12.879 ms
        // of kernels.
        PublicTrace{"ddp_nccl_rank0_of_2",
                    {"kineto_ddp_nccl_rank-0.json.gz"},
                    kForwardBackward,
                    "",
                    1,
                    1,
                    12.879,
                    3,
                    25.802,
                    ""},
        // A recommendation model's data-parallel rank 3 of 8: one pipeline rank, not rank 3 of
        // four with three empty stages; six forwards of 435 kernels each, median 15.620 ms.
        PublicTrace{"recsys_dp_rank3_of_8",
                    {"hta_recsys_dp_rank-3_of_8.json.gz"},
                    kForwardBackward,
                    "",
                    1,
                    1,
                    15.620,
                    6,
                    29.651,
                    "global rank(s) 3 read as pipeline rank(s) 0"},
        // PARAM's benchmark harness wraps `measure|forward` in a range of the same name: one
        // forward, the 40 kernels under the inner range, 5.282 ms (not the outer's 79.678 ms of
        // CPU time).
        PublicTrace{"param_harness_nested_forward",
                    {"hta_param_bench_alexnet.json.gz"},
                    R"([{"regex": "\\|measure\\|forward\\]$", "kind": "F"}])",
                    "",
                    1,
                    1,
                    5.282,
                    1,
                    0,
                    "lay inside a range of the same name"},
        // A CPU-only gloo job, rank 34 of 300: no device activity, so the ranges' CPU spans
        // (ten all-reduces, median 176.468 ms).
        PublicTrace{"cpu_only_gloo_rank34_of_300",
                    {"hta_cpu_only_gloo_rank-34.json.gz"},
                    R"([{"regex": "^gloo:all_reduce$", "kind": "F"}])",
                    "",
                    1,
                    1,
                    176.468,
                    10,
                    0,
                    "global rank(s) 34 read as pipeline rank(s) 0"},
        // ROCm on an MI250 (hipLaunchKernel): aten::linear launched 2 kernels of 6.88 + 17.6 us;
        // the backward of addmm, on the autograd thread, 12.64 + 13.6 us.
        PublicTrace{"rocm_mi250_cpu_op_rules",
                    {"hta_rocm_mi250_minitoy.json.gz"},
                    R"([{"regex": "^aten::linear$", "kind": "F"},
                        {"regex": "^autograd::engine::evaluate_function: AddmmBackward0$",
                         "kind": "BW"}])",
                    "",
                    1,
                    1,
                    0.02448,
                    1,
                    0.02624,
                    ""},
        // Two data-parallel ranks (0 and 1 of 128) given as one pipeline rank: replicas, eight
        // encoder passes (1.352, 1.378, 3.068, 3.066 and 1.084, 1.091, 3.054, 3.056 ms).
        PublicTrace{"two_dp_ranks_of_128_as_replicas",
                    {"kineto_sampled_rank-0.json.gz", "kineto_sampled_rank-1.json.gz"},
                    R"([{"regex": "^## encoder fp8 None ##$", "kind": "F"}])",
                    "--pp 1",
                    1,
                    1,
                    2.216,
                    8,
                    0,
                    ""},
        // The same two without --pp: they only meet in collectives (c10d::allreduce_,
        // _allgather_base_, alltoall_base_; NCCL runs the all_to_all as SendRecv kernels, which
        // are no pipeline hop), so they are replicas without being told.
        PublicTrace{"two_dp_ranks_of_128_found_to_be_replicas",
                    {"kineto_sampled_rank-0.json.gz", "kineto_sampled_rank-1.json.gz"},
                    R"([{"regex": "^## encoder fp8 None ##$", "kind": "F"}])",
                    "",
                    1,
                    1,
                    2.216,
                    8,
                    0,
                    "read as data-parallel replicas of a one-rank pipeline"}),
    [](const ::testing::TestParamInfo<PublicTrace>& param_info) { return param_info.param.label; });

// A DDP job's gradient all-reduce (docs/data-parallel.md §5): its NCCL AllReduce kernels, launched
// from the backward's hooks, are the stage's reduction per step: 11.950, 12.262 and 22.550 ms (the
// kernels' durations summed per step, by the forward each launch follows), median 12.262 ms; the
// two Broadcast kernels of each forward are not.
TEST(PublicTraceImportDataParallel, ADdpJobsAllReduceKernelsAreItsReductionPerStep) {
  const testing_support::TempDir temp;
  std::ofstream(temp.Path("rules.json")) << kForwardBackward;
  const ZbResult import =
      RunZb("import '" + TracePath("kineto_ddp_nccl_rank-0.json.gz") + "' --rules '" +
                temp.Path("rules.json") + "' --out '" + temp.Path("costs.json") + "'",
            temp.path());
  ASSERT_EQ(import.code, 0) << import.err;
  const json costs = json::parse(ReadWholeFile(temp.Path("costs.json")));
  ASSERT_EQ(costs["stages"].size(), 1u);
  EXPECT_NEAR(costs["stages"][0]["reduce"].get<double>(), 12.262, 0.0005) << costs.dump();
  EXPECT_FALSE(costs["stages"][0].contains("unshard")) << costs.dump();
  EXPECT_NE(import.out.find("data-parallel collectives per step"), std::string::npos) << import.out;
}

// A rank whose ops name their global stage (torch's PP:3F0) stays that rank: a trace set that
// holds only rank 3 of a four-stage pipeline is refused at the store's door, with the stages that
// measured nothing, and the store is not created.
TEST(PublicTraceStore, PartOfAPipelineIsRefusedAndNothingIsWritten) {
  const testing_support::TempDir temp;
  std::ofstream(temp.Path("rank3.json")) << R"({"distributedInfo": {"rank": 3, "world_size": 4},
    "traceEvents": [
      {"ph": "X", "cat": "user_annotation", "name": "PP:3F0", "pid": 1, "tid": 1, "ts": 10,
       "dur": 5},
      {"ph": "X", "cat": "user_annotation", "name": "PP:3B0", "pid": 1, "tid": 1, "ts": 20,
       "dur": 9}]})";
  const ZbResult result = RunZb(
      "import '" + temp.Path("rank3.json") + "' --store '" + temp.Path("zb.db") + "'", temp.path());
  EXPECT_EQ(result.code, 1);
  EXPECT_EQ(result.err,
            "zb import: nothing stored: the measured costs are not a profile zbkit can use: "
            "stages[0].F: must be > 0 (no forward measured on stage(s) 0, 1, 2 of 4: give every "
            "rank's trace, or --pp/--rules that place the ops)\n");
  EXPECT_FALSE(fs::exists(temp.Path("zb.db")));
}

}  // namespace
}  // namespace zb::profiler
