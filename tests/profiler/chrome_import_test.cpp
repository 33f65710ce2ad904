// SPDX-License-Identifier: Apache-2.0
// The Chrome/Kineto importer (chrome_import.cpp): the decimal time parser, a Chrome trace the test
// writes (plain and gzip, object and bare array), and the two real Kineto traces bundled in
// tests/data/traces. The nsys importer's tests are nsys_import_test.cpp.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "temp_dir.h"
#include "zbkit/profiler/attribution.h"
#include "zbkit/profiler/costs.h"
#include "zbkit/profiler/import.h"

namespace zb::profiler {
namespace {

namespace fs = std::filesystem;

using testing_support::TempDir;

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

void WriteGzip(const std::string& path, const std::string& text) {
  gzFile file = gzopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(gzwrite(file, text.data(), static_cast<unsigned>(text.size())),
            static_cast<int>(text.size()));
  gzclose(file);
}

TEST(MicrosecondsText, ExactNanoseconds) {
  struct Case {
    const char* text;
    std::optional<TimeNs> ns;
  };
  const Case cases[] = {
      {"1234.567", 1234567},
      {"4458676522690.655", 4458676522690655},  // a double would be off here
      {"12", 12000},
      {"0", 0},
      {"0.0005", 1},  // half a nanosecond rounds away from zero
      {"0.0004", 0},
      {"1.2345", 1235},
      {"-0.25", -250},
      {"1.5e3", 1500000},
      {"15E-1", 1500},
      {"2.5e-4", 0},
      {"+7.000", 7000},
      {"1682725898236567", 1682725898236567000},
      {"", std::nullopt},
      {".", std::nullopt},
      {"1.2.3", std::nullopt},
      {"12a", std::nullopt},
      {"1e", std::nullopt},
      {"99999999999999999", std::nullopt},  // > INT64_MAX ns
  };
  for (const Case& c : cases)
    EXPECT_EQ(MicrosecondsTextToNs(c.text), c.ns) << c.text;
}

// A small Kineto-style trace: rank 1 of 2, a PP stage with F/I/W of two microbatches, kernels on
// GPU pid 0 stream 7 launched by cudaLaunchKernel on the main thread.
std::string SmallKinetoTrace(bool bare_array) {
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"ph", "M"},
                    {"name", "process_name"},
                    {"pid", 77},
                    {"tid", 0},
                    {"args", {{"name", "python3"}}}});
  int correlation = 100;
  double t = 1000.0;
  auto op = [&](const std::string& name, double dur,
                std::vector<std::pair<double, double>> kernels) {
    events.push_back({{"ph", "X"},
                      {"cat", "user_annotation"},
                      {"name", name},
                      {"pid", 77},
                      {"tid", 77},
                      {"ts", t},
                      {"dur", dur}});
    double launch = t + 0.5;
    for (auto [offset, length] : kernels) {
      events.push_back({{"ph", "X"},
                        {"cat", "cuda_runtime"},
                        {"name", "cudaLaunchKernel"},
                        {"pid", 77},
                        {"tid", 77},
                        {"ts", launch},
                        {"dur", 0.2},
                        {"args", {{"correlation", correlation}}}});
      events.push_back({{"ph", "X"},
                        {"cat", "kernel"},
                        {"name", "sm90_gemm"},
                        {"pid", 0},
                        {"tid", 7},
                        {"ts", t + offset},
                        {"dur", length},
                        {"args", {{"device", 0}, {"stream", 7}, {"correlation", correlation}}}});
      ++correlation;
      launch += 0.25;
    }
    t += dur + 1;
  };
  for (int iteration = 0; iteration < 2; ++iteration) {
    events.push_back({{"ph", "X"},
                      {"cat", "user_annotation"},
                      {"name", "ProfilerStep#" + std::to_string(iteration)},
                      {"pid", 77},
                      {"tid", 77},
                      {"ts", t - 0.5},
                      {"dur", 200}});
    op("PP:1F0", 10, {{1, 3.125}, {4.5, 2.5}});
    op("PP:1F1", 10, {{1, 3.125}, {4.5, 2.5}});
    op("PP:1I0", 20, {{1, 12.25}});
    op("PP:1W0", 10, {{1, 6.001}});
    op("PP:1I1", 20, {{1, 12.25}});
    op("PP:1W1", 10, {{1, 6.001}});
    t += 100;
  }
  // A B/E pair: a CPU range with no kernels.
  events.push_back({{"ph", "B"},
                    {"cat", "user_annotation"},
                    {"name", "PP:0F9"},
                    {"pid", 77},
                    {"tid", 78},
                    {"ts", "5000.5"}});
  events.push_back({{"ph", "E"}, {"pid", 77}, {"tid", 78}, {"ts", "5003.25"}});
  if (bare_array) return events.dump();
  nlohmann::json doc = {{"schemaVersion", 1},
                        {"distributedInfo", {{"rank", 1}, {"world_size", 2}}},
                        {"baseTimeNanoseconds", 1700000000000000000LL},
                        {"traceEvents", events}};
  return doc.dump();
}

// A gzip trace cut short (a partial copy) is called that, not a JSON error at some byte; a
// plain file cut short is a JSON error without nlohmann's internal prefix.
TEST(ChromeImport, CutTracesSayWhatIsWrong) {
  TempDir dir;
  WriteGzip(dir.Path("whole.json.gz"), SmallKinetoTrace(false));
  std::string bytes;
  {
    std::ifstream in(dir.Path("whole.json.gz"), std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ASSERT_GT(bytes.size(), 100u);
  WriteText(dir.Path("cut.json.gz"), bytes.substr(0, bytes.size() / 2));
  auto cut = ImportTrace(dir.Path("cut.json.gz"));
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(cut.status().message().find(dir.Path("cut.json.gz") + ": the gzip stream is cut short"),
            std::string::npos)
      << cut.status().message();

  const std::string text = SmallKinetoTrace(false);
  WriteText(dir.Path("cut.json"), text.substr(0, text.size() / 2));
  auto plain = ImportTrace(dir.Path("cut.json"));
  ASSERT_FALSE(plain.ok());
  EXPECT_NE(plain.status().message().find("not valid JSON at byte"), std::string::npos);
  EXPECT_EQ(plain.status().message().find("[json.exception"), std::string::npos)
      << plain.status().message();
}

TEST(ChromeImport, WrittenTracePlainAndGzip) {
  TempDir dir;
  WriteText(dir.Path("t.json"), SmallKinetoTrace(false));
  WriteGzip(dir.Path("t.json.gz"), SmallKinetoTrace(false));
  for (const std::string name : {"t.json", "t.json.gz"}) {
    auto format = DetectTraceFormat(dir.Path(name));
    ASSERT_TRUE(format.ok());
    EXPECT_EQ(*format, TraceFormat::kChrome);
    auto traces = ImportTrace(dir.Path(name));
    ASSERT_TRUE(traces.ok()) << traces.status().message();
    ASSERT_EQ(traces->size(), 1u);
    const RawTrace& trace = (*traces)[0];
    EXPECT_EQ(trace.process.rank, 1);
    EXPECT_EQ(trace.process.world_size, 2);
    EXPECT_EQ(trace.process.pid, 77);
    EXPECT_EQ(trace.process.command, "python3");
    EXPECT_EQ(trace.activities.size(), 16u);
    EXPECT_EQ(trace.launches.size(), 16u);
    // Times: base + ts in ns, exactly.
    const TimeNs base = 1700000000000000000LL;
    EXPECT_EQ(trace.activities[0].start, base + 1001000);
    EXPECT_EQ(trace.activities[0].end, base + 1001000 + 3125);
    bool saw_begin_end = false;
    for (const TraceRange& range : trace.ranges) {
      if (range.name == "PP:0F9") {
        saw_begin_end = true;
        EXPECT_EQ(range.start, base + 5000500);
        EXPECT_EQ(range.end, base + 5003250);
        EXPECT_EQ(range.thread, 78);
        EXPECT_EQ(range.domain, "user_annotation");
      }
    }
    EXPECT_TRUE(saw_begin_end);

    AttributionOptions options;
    options.pp = 2;
    auto attribution = Attribute(*traces, RuleSet(), options);
    ASSERT_TRUE(attribution.ok());
    auto report = BuildCostReport(*attribution, {});
    ASSERT_TRUE(report.ok()) << report.status().message();
    // Stage 1: F = 3.125 + 2.5 us, B (I) = 12.25 us, W = 6.001 us.
    EXPECT_EQ(report->stages[1].f.median, 5625);
    EXPECT_EQ(report->stages[1].b.median, 12250);
    EXPECT_EQ(report->stages[1].w.median, 6001);
    EXPECT_EQ(report->stages[1].f.samples, 4);
    EXPECT_EQ(report->iterations_seen, 2);
    // PP:0F9 launched no kernels in a process that ran kernels: no device time measured, so
    // it is in the timeline with no busy time and not in the costs.
    EXPECT_EQ(report->stages[0].f.samples, 0);
    bool saw_untimed = false;
    for (const MeasuredOp& op : attribution->ops) {
      if (op.name != "PP:0F9") continue;
      saw_untimed = true;
      EXPECT_FALSE(op.timed);
      EXPECT_EQ(op.busy, 0);
      EXPECT_EQ(op.start(), base + 5000500);
    }
    EXPECT_TRUE(saw_untimed);
  }
  WriteText(dir.Path("bare.json"), SmallKinetoTrace(true));
  auto bare = ImportChromeTrace(dir.Path("bare.json"));
  ASSERT_TRUE(bare.ok()) << bare.status().message();
  ASSERT_EQ(bare->size(), 1u);
  EXPECT_EQ((*bare)[0].process.rank, -1);
  EXPECT_EQ((*bare)[0].activities[0].start, 1001000);
}

TEST(ChromeImport, Errors) {
  TempDir dir;
  EXPECT_EQ(ImportChromeTrace(dir.Path("missing.json")).status().code(), ErrorCode::kNotFound);
  WriteText(dir.Path("bad.json"), "{\"traceEvents\": [");
  auto bad = ImportChromeTrace(dir.Path("bad.json"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.json: not valid JSON"), std::string::npos)
      << bad.status().message();
  WriteText(dir.Path("empty.json"), "{\"traceEvents\": []}");
  auto empty = ImportChromeTrace(dir.Path("empty.json"));
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("no trace events"), std::string::npos);
  EXPECT_EQ(ParseTraceFormat("perfetto").status().code(), ErrorCode::kUsage);
}

// A CPU-only trace of one pipeline rank of 2 (one stage each): per iteration F of two
// microbatches that allocate `f_bytes` each (host "[memory]" events, Device Id -1), B and W that
// release them. `with_rank` writes distributedInfo; without it the file name must say the rank.
std::string CpuRankTrace(int rank, int64_t f_bytes, bool with_rank) {
  nlohmann::json events = nlohmann::json::array();
  double t = 100.0;
  auto memory = [&](double ts, int64_t bytes) {
    events.push_back({{"ph", "i"},
                      {"name", "[memory]"},
                      {"pid", 10 + rank},
                      {"tid", 10 + rank},
                      {"ts", ts},
                      {"s", "t"},
                      {"args", {{"Device Id", -1}, {"Bytes", bytes}}}});
  };
  auto op = [&](const std::string& name, double dur, int64_t bytes) {
    events.push_back({{"ph", "X"},
                      {"cat", "user_annotation"},
                      {"name", name},
                      {"pid", 10 + rank},
                      {"tid", 10 + rank},
                      {"ts", t},
                      {"dur", dur}});
    if (bytes != 0) memory(t + dur / 2, bytes);
    t += dur + 1;
  };
  for (int iteration = 0; iteration < 2; ++iteration) {
    events.push_back({{"ph", "X"},
                      {"cat", "user_annotation"},
                      {"name", "ProfilerStep#" + std::to_string(iteration)},
                      {"pid", 10 + rank},
                      {"tid", 10 + rank},
                      {"ts", t - 0.5},
                      {"dur", 200}});
    const std::string s = std::to_string(rank);
    op("PP:" + s + "F0", 10, f_bytes);
    op("PP:" + s + "F1", 10, f_bytes);
    op("PP:" + s + "I0", 20, -f_bytes / 4);
    op("PP:" + s + "W0", 10, -3 * f_bytes / 4);
    op("PP:" + s + "I1", 20, -f_bytes / 4);
    op("PP:" + s + "W1", 10, -3 * f_bytes / 4);
    t += 100;
  }
  nlohmann::json doc = {{"traceEvents", events}};
  if (with_rank) doc["distributedInfo"] = {{"rank", rank}, {"world_size", 2}};
  return doc.dump();
}

TEST(ChromeImport, DirectoryOfRankTracesWithHostMemory) {
  TempDir dir;
  WriteGzip(dir.Path("rank0.json.gz"), CpuRankTrace(0, 4096, true));
  WriteText(dir.Path("trace-rank1.json"), CpuRankTrace(1, 1024, false));
  WriteText(dir.Path("notes.txt"), "not a trace");
  WriteText(dir.Path("broken.json"), "{");
  std::vector<std::string> skipped;
  auto traces = ImportChromeTraceDirectory(dir.Path(""), skipped);
  ASSERT_TRUE(traces.ok()) << traces.status().message();
  ASSERT_EQ(traces->size(), 2u);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("broken.json"), std::string::npos) << skipped[0];
  std::map<int32_t, const RawTrace*> by_rank;
  for (const RawTrace& trace : *traces)
    by_rank[trace.process.rank] = &trace;
  ASSERT_EQ(by_rank.size(), 2u);
  ASSERT_TRUE(by_rank.count(0) && by_rank.count(1));
  EXPECT_EQ(by_rank[1]->memory.size(), 12u);  // host memory kept: the trace has no device work

  AttributionOptions options;
  options.pp = 2;
  auto attribution = Attribute(*traces, RuleSet(), options);
  ASSERT_TRUE(attribution.ok()) << attribution.status().message();
  auto report = BuildCostReport(*attribution, {});
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->memory, MemorySource::kMeasured);
  EXPECT_EQ(report->stages[0].m_b, 4096);
  EXPECT_EQ(report->stages[1].m_b, 1024);
  EXPECT_EQ(report->stages[0].f.samples, 4);
  EXPECT_EQ(report->stages[1].w.samples, 4);

  TempDir empty;
  auto none = ImportChromeTraceDirectory(empty.Path(""), skipped);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no Chrome traces"), std::string::npos);
}

TEST(ChromeImport, HostMemoryIgnoredWhereTheTraceHasDeviceWork) {
  nlohmann::json doc = nlohmann::json::parse(SmallKinetoTrace(false));
  doc["traceEvents"].push_back({{"ph", "i"},
                                {"name", "[memory]"},
                                {"pid", 77},
                                {"tid", 77},
                                {"ts", 1005.0},
                                {"args", {{"Device Id", -1}, {"Bytes", 512}}}});
  auto traces = ParseChromeTrace(doc.dump(), "gpu.json");
  ASSERT_TRUE(traces.ok()) << traces.status().message();
  ASSERT_EQ(traces->size(), 1u);
  EXPECT_TRUE((*traces)[0].memory.empty());
}

// ---- The real Kineto traces ----------------------------------------------------------------

// An independent reading of a Kineto trace, with long double numbers (64-bit mantissa) so that
// microsecond decimals convert to exact nanoseconds without the importer's parser.
using ExactJson = nlohmann::basic_json<std::map, std::vector, std::string, bool, std::int64_t,
                                       std::uint64_t, long double>;

TimeNs ExactNs(const ExactJson& value) {
  return static_cast<TimeNs>(std::llround(value.get<long double>() * 1000.0L));
}

struct Annotation {
  std::string name;
  int64_t tid;
  TimeNs start;
  TimeNs end;
};

// The projection rule of attribution.h, written the slow, obvious way: a kernel belongs to the
// latest-starting op range on its launching thread containing the launch; else, when exactly one
// other thread has an op range containing it, to that thread's latest-starting one; NCCL kernels
// never count. Returns the busy time (union of intervals) per annotation index.
std::vector<TimeNs> IndependentProjection(const ExactJson& doc,
                                          const std::vector<Annotation>& ops) {
  std::map<int64_t, std::pair<int64_t, TimeNs>> launch;  // correlation -> (tid, ts)
  for (const ExactJson& e : doc["traceEvents"]) {
    const std::string cat = e.value("cat", "");
    if ((cat == "cuda_runtime" || cat == "cuda_driver") && e.contains("args") &&
        e["args"].contains("correlation")) {
      launch.emplace(e["args"]["correlation"].get<int64_t>(),
                     std::make_pair(e["tid"].get<int64_t>(), ExactNs(e["ts"])));
    }
  }
  std::vector<std::vector<std::pair<TimeNs, TimeNs>>> intervals(ops.size());
  for (const ExactJson& e : doc["traceEvents"]) {
    const std::string cat = e.value("cat", "");
    if (cat != "kernel" && cat != "gpu_memcpy" && cat != "gpu_memset") continue;
    const std::string name = e.value("name", "");
    std::string lower = name;
    for (char& c : lower)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower.find("nccl") != std::string::npos) continue;
    auto it = launch.find(e["args"]["correlation"].get<int64_t>());
    if (it == launch.end()) continue;
    const auto [tid, t] = it->second;
    auto innermost_on = [&](int64_t thread) {
      int best = -1;
      for (size_t i = 0; i < ops.size(); ++i) {
        if (ops[i].tid != thread || t < ops[i].start || t > ops[i].end) continue;
        if (best < 0 || ops[i].start > ops[best].start) best = static_cast<int>(i);
      }
      return best;
    };
    int owner = innermost_on(tid);
    if (owner < 0) {
      std::set<int64_t> threads;
      for (const Annotation& op : ops)
        threads.insert(op.tid);
      int hits = 0;
      for (int64_t thread : threads) {
        if (thread == tid) continue;
        const int found = innermost_on(thread);
        if (found >= 0) {
          ++hits;
          owner = found;
        }
      }
      if (hits != 1) owner = -1;
    }
    if (owner < 0) continue;
    const TimeNs start = ExactNs(e["ts"]);
    intervals[owner].emplace_back(start, start + ExactNs(e["dur"]));
  }
  std::vector<TimeNs> busy(ops.size(), 0);
  for (size_t i = 0; i < ops.size(); ++i) {
    auto& list = intervals[i];
    std::sort(list.begin(), list.end());
    TimeNs end = INT64_MIN;
    for (const auto& [s, e] : list) {
      if (s > end) {
        busy[i] += e - s;
        end = e;
      } else if (e > end) {
        busy[i] += e - end;
        end = e;
      }
    }
  }
  return busy;
}

class RealTrace : public ::testing::TestWithParam<const char*> {};

TEST_P(RealTrace, ForwardAndBackwardGpuTimesMatchAnIndependentProjection) {
  const std::string path = std::string(ZBKIT_TEST_DATA_DIR) + "/traces/" + GetParam();
  auto traces = ImportChromeTrace(path);
  ASSERT_TRUE(traces.ok()) << traces.status().message();
  ASSERT_EQ(traces->size(), 1u);
  const RawTrace& trace = (*traces)[0];
  EXPECT_EQ(trace.process.rank, 0);
  EXPECT_GT(trace.activities.size(), 1000u);
  EXPECT_GT(trace.launches.size(), 1000u);

  // Without rules: nothing here is a pipeline op.
  auto plain = Attribute(*traces, RuleSet());
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->ops.empty());

  auto rules = RuleSet::FromJson(
      R"([{"regex": "^## forward ##$", "kind": "F"}, {"regex": "^## backward ##$", "kind": "BW"}])",
      "rules.json");
  ASSERT_TRUE(rules.ok());
  auto attribution = Attribute(*traces, *rules);
  ASSERT_TRUE(attribution.ok());

  // The independent reading.
  auto text = ReadMaybeGzipFile(path);
  ASSERT_TRUE(text.ok());
  const ExactJson doc = ExactJson::parse(*text);
  const TimeNs base =
      doc.contains("baseTimeNanoseconds") ? doc["baseTimeNanoseconds"].get<int64_t>() : 0;
  std::vector<Annotation> annotations;
  for (const ExactJson& e : doc["traceEvents"]) {
    if (e.value("cat", "") != "user_annotation") continue;
    const std::string name = e["name"].get<std::string>();
    if (name != "## forward ##" && name != "## backward ##") continue;
    const TimeNs start = ExactNs(e["ts"]);
    annotations.push_back({name, e["tid"].get<int64_t>(), start, start + ExactNs(e["dur"])});
  }
  const std::vector<TimeNs> expected = IndependentProjection(doc, annotations);

  std::vector<const MeasuredOp*> compute;
  for (const MeasuredOp& op : attribution->ops) {
    if (op.kind != OpKind::kComm) compute.push_back(&op);
  }
  ASSERT_EQ(compute.size(), annotations.size());
  ASSERT_GE(compute.size(), 4u);
  int forwards = 0;
  int backwards = 0;
  for (const MeasuredOp* op : compute) {
    // Find the annotation by its exact CPU interval.
    int match = -1;
    for (size_t i = 0; i < annotations.size(); ++i) {
      if (annotations[i].start + base == op->cpu_start &&
          annotations[i].end + base == op->cpu_end) {
        match = static_cast<int>(i);
      }
    }
    ASSERT_GE(match, 0) << op->name << " at " << op->cpu_start;
    EXPECT_EQ(op->name, annotations[match].name);
    EXPECT_EQ(op->kind, op->name == "## forward ##" ? OpKind::kF : OpKind::kBW);
    EXPECT_GT(op->kernels, 0) << op->name;
    EXPECT_GT(op->busy, 0) << op->name;
    EXPECT_LE(op->busy, op->cpu_end - op->cpu_start) << op->name;
    EXPECT_EQ(op->busy, expected[match]) << op->name << " #" << match;
    (op->kind == OpKind::kF ? forwards : backwards) += 1;
  }
  EXPECT_EQ(forwards, backwards);
  auto report = BuildCostReport(*attribution, {});
  ASSERT_TRUE(report.ok());
  EXPECT_GT(report->stages[0].f.median, 0);
  EXPECT_GT(report->stages[0].bw.median, 0);
  EXPECT_EQ(report->stages[0].f.samples, forwards);
}

INSTANTIATE_TEST_SUITE_P(Kineto, RealTrace,
                         ::testing::Values("kineto_ddp_nccl_rank-0.json.gz",
                                           "kineto_sampled_rank-0.json.gz"));

// Kineto's own gpu_user_annotation spans the kernels it correlated with the annotation on the
// annotation's thread; the same-thread projection's span must agree with it. (Kineto widens its
// GPU annotation slightly: 1 us before the first kernel and 0.5 us after the last in this trace,
// so the check is containment within 1 us.)
TEST(RealTrace, SameThreadSpanEqualsKinetosGpuAnnotation) {
  const std::string path =
      std::string(ZBKIT_TEST_DATA_DIR) + "/traces/kineto_ddp_nccl_rank-0.json.gz";
  auto traces = ImportChromeTrace(path);
  ASSERT_TRUE(traces.ok());
  auto rules = RuleSet::FromJson(R"([{"regex": "^## backward ##$", "kind": "BW"}])", "r");
  ASSERT_TRUE(rules.ok());
  AttributionOptions options;
  options.cross_thread = false;
  auto attribution = Attribute(*traces, *rules, options);
  ASSERT_TRUE(attribution.ok());
  std::vector<std::pair<TimeNs, TimeNs>> kineto;
  for (const TraceRange& range : (*traces)[0].ranges) {
    if (range.domain == "gpu_user_annotation" && range.name == "## backward ##") {
      kineto.emplace_back(range.start, range.end);
    }
  }
  std::vector<std::pair<TimeNs, TimeNs>> ours;
  for (const MeasuredOp& op : attribution->ops) {
    if (op.kind == OpKind::kBW) ours.emplace_back(op.gpu_start, op.gpu_end);
  }
  ASSERT_EQ(kineto.size(), 3u);
  ASSERT_EQ(ours.size(), 3u);
  std::sort(kineto.begin(), kineto.end());
  std::sort(ours.begin(), ours.end());
  for (size_t i = 0; i < ours.size(); ++i) {
    EXPECT_GE(ours[i].first, kineto[i].first);
    EXPECT_LE(ours[i].first - kineto[i].first, 1000);
    EXPECT_LE(ours[i].second, kineto[i].second);
    EXPECT_LE(kineto[i].second - ours[i].second, 1000);
  }
}

}  // namespace
}  // namespace zb::profiler
