// SPDX-License-Identifier: Apache-2.0
// The `zb` command as users run it: golden output, the JSON forms, the store round trip, and bad
// requests giving one clear line on stderr with exit code 2 (usage) or 1 (failure). The malformed
// input files are in cli_bad_input_test.cpp.
#include "cli_test_support.h"
#include "raw_db.h"

namespace zb {
namespace {

using namespace cli_testing;
namespace fs = std::filesystem;

TEST_F(CliTest, TuneTableIsStable) {
  Result result = Zb("tune --costs " + Data("costs/hetero4.json") + " -m 8 --mem-limit 1.5x");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  // The header names the input path, which differs between checkouts.
  const std::string body = result.out.substr(result.out.find('\n') + 1);
  ExpectGolden("tune_hetero4_m8_1.5x.txt", body);
}

TEST_F(CliTest, TuneJsonListsEveryFamilyAndPicksTheFastestThatFits) {
  Result result = Zb("tune --costs " + Data("costs/uniform4.json") + " -m 8 --mem-limit 1x --json");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto report = nlohmann::json::parse(result.out);
  EXPECT_EQ(report["format"], "zb-tune-report/1");
  ASSERT_EQ(report["candidates"].size(), 8u);
  double best_makespan = 1e300;
  std::string best;
  for (const auto& candidate : report["candidates"]) {
    if (!candidate["ok"].get<bool>() || !candidate["fits"].get<bool>()) continue;
    EXPECT_GE(candidate["t_over_lb"].get<double>(), 1.0);
    if (candidate["makespan"].get<double>() < best_makespan) {
      best_makespan = candidate["makespan"];
      best = candidate["family"];
    }
  }
  EXPECT_EQ(report["best"], best);
  // 1x = 1F1B's memory: ZB-H2 needs about twice that, so it must not fit.
  for (const auto& candidate : report["candidates"]) {
    if (candidate["family"] == "zb-h2") {
      EXPECT_FALSE(candidate["fits"].get<bool>());
    }
    if (candidate["family"] == "1f1b-i") {
      EXPECT_TRUE(candidate["ok"].get<bool>());  // m = 8 is a multiple of p = 4
    }
  }
}

TEST_F(CliTest, TuneWritesTheScheduleAndTheStoreGivesItBack) {
  const std::string out = Path("best.json");
  const std::string store = Path("zb.db");
  Result tuned = Zb("tune --costs " + Data("costs/hetero4.json") +
                    " -m 8 --mem-limit 2x --family zb-auto --store " + store + " --out " + out);
  ASSERT_EQ(tuned.exit_code, 0) << tuned.err;
  EXPECT_NE(tuned.out.find("stored as schedule 1 in"), std::string::npos) << tuned.out;
  auto from_file = ReadScheduleFile(out);
  ASSERT_TRUE(from_file.ok()) << from_file.status().message();
  EXPECT_EQ(from_file->family, "zb-auto");
  ASSERT_TRUE(from_file->predicted.has_value());

  Result exported =
      Zb("export --store " + store + " --schedule 1 --format json -o " + Path("exported.json"));
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  auto from_store = ReadScheduleFile(Path("exported.json"));
  ASSERT_TRUE(from_store.ok()) << from_store.status().message();
  EXPECT_EQ(*from_store, *from_file);

  Result csv = Zb("export --store " + store + " --schedule 1 --format torch-csv -o -");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  ExpectGolden("export_hetero4_zb_auto.csv", csv.out);

  // The listing names the cap the schedule was tuned for "cap", as zb show does (and keeps its
  // old name, memory_limit, for zb-list/1's readers).
  Result listed = Zb("list --store " + store + " --json");
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const auto listing = nlohmann::json::parse(listed.out);
  ASSERT_EQ(listing["schedules"].size(), 1u);
  const auto& row = listing["schedules"][0];
  ASSERT_TRUE(row["cap"].is_number()) << row;
  EXPECT_GT(row["cap"].get<double>(), 0);
  EXPECT_EQ(row["cap"], row["memory_limit"]);
  Result legacy = Zb("export " + out + " --format torch-csv-legacy -o -");
  ASSERT_EQ(legacy.exit_code, 0) << legacy.err;
  EXPECT_EQ(legacy.out.find("I"), std::string::npos);  // legacy has no I token
  EXPECT_NE(legacy.out.find("0B0"), std::string::npos);
}

// hetero4, m = 8, 1.5x, loop: 1F1B-I has the smallest makespan, ZB-auto the smallest span.
TEST_F(CliTest, TuneSearchAddsARowThatIsNeverWorseAndIsDeterministic) {
  const std::string tune = "tune --costs " + Data("costs/hetero4.json") +
                           " -m 8 --mem-limit 1x --objective span --family search "
                           "--time-limit 0 --evaluations 3000 --seed 7";
  Result json = Zb(tune + " --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto report = nlohmann::json::parse(json.out);
  const auto& search = report["candidates"].back();
  ASSERT_EQ(search["family"], "search");
  ASSERT_TRUE(search["ok"].get<bool>()) << search.dump();
  EXPECT_TRUE(search["fits"].get<bool>());
  EXPECT_GE(search["search"]["evaluations"].get<int64_t>(), 3000);
  for (const auto& candidate : report["candidates"]) {
    if (candidate["ok"].get<bool>() && candidate["fits"].get<bool>()) {
      EXPECT_LE(search["span"].get<double>(), candidate["span"].get<double>())
          << candidate["family"];
    }
  }
  Result again = Zb(tune + " --json");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(nlohmann::json::parse(again.out)["candidates"].back()["span"], search["span"]);
  Result text = Zb(tune);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("search: "), std::string::npos) << text.out;
  EXPECT_EQ(text.err, "") << "no progress bar when stderr is not a terminal";

  // --exact certifies the chosen order (zb-h1 here) for its op set, or improves it.
  Result exact = Zb("tune --costs " + Data("costs/hetero4.json") +
                    " -m 8 --mem-limit 1x --family zb-h1 --exact --exact-time-limit 20 --json");
  ASSERT_EQ(exact.exit_code, 0) << exact.err;
  const auto certified = nlohmann::json::parse(exact.out)["exact"];
  EXPECT_TRUE(certified["optimal"].get<bool>()) << certified.dump();
  EXPECT_LE(certified["upper"].get<double>(),
            nlohmann::json::parse(exact.out)["candidates"][0]["makespan"].get<double>());
  EXPECT_EQ(certified["lower"], certified["upper"]);
}

TEST_F(CliTest, TuneFrontierPrintsStoresAndRefusesBadGrids) {
  const std::string store = (dir_ / "frontier.db").string();
  const std::string tune = "tune --costs " + Data("costs/hetero4.json") +
                           " -m 8 --objective span --time-limit 0 --evaluations 300";
  Result json = Zb(tune + " --frontier 1x:2x:0.5x --store " + store + " --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto report = nlohmann::json::parse(json.out);
  ASSERT_EQ(report["points"].size(), 6u);  // 1x, 1.5x, 2x, each heuristic then search
  double last_search = 1e300;
  for (size_t i = 0; i < report["points"].size(); i += 2) {
    const auto& heuristic = report["points"][i];
    const auto& search = report["points"][i + 1];
    EXPECT_EQ(heuristic["method"], "heuristic");
    EXPECT_EQ(search["method"], "search");
    ASSERT_TRUE(search["fits"].get<bool>());
    if (heuristic["fits"].get<bool>()) {
      EXPECT_LE(search["span"].get<double>(), heuristic["span"].get<double>());
    }
    EXPECT_LE(search["span"].get<double>(), last_search) << "a larger cap gave a longer span";
    last_search = search["span"];
    EXPECT_TRUE(search.contains("schedule_id"));
  }
  ASSERT_TRUE(report.contains("frontier_id"));
  auto opened = Store::Open(store, Store::Mode::kReadOnly);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  auto frontier = opened->LoadFrontier(report["frontier_id"].get<int64_t>());
  ASSERT_TRUE(frontier.ok()) << frontier.status().message();
  EXPECT_EQ(frontier->points.size(), 6u);
  EXPECT_EQ(frontier->objective, "span");

  ExpectOneLineError(Zb(tune + " --frontier 1x:2x"), 2, "tune", "FROM:TO:STEP");
  ExpectOneLineError(Zb(tune + " --frontier 2x:1x:0.5x"), 2, "tune", "0 < FROM <= TO");
  ExpectOneLineError(Zb(tune + " --frontier 1x:2x:0.5x --mem-limit 1x"), 2, "tune",
                     "drop --mem-limit");
  ExpectOneLineError(Zb(tune), 2, "tune", "--mem-limit is required");
  ExpectOneLineError(Zb("tune --costs " + Data("costs/hetero4.json") +
                        " -m 8 --mem-limit 1x --family search --time-limit 0"),
                     2, "tune", "needs --evaluations");
}

// A store that refuses the last write of `zb tune --store` (a trigger stands in for a full disk or
// a constraint): what the command wrote before it must not stay behind either.
TEST_F(CliTest, TuneStoresItsProfileSchedulesAndFrontierWholeOrNotAtAll) {
  const std::string store = (dir_ / "refusing.db").string();
  ASSERT_TRUE(Store::Open(store).ok());
  auto refuse = [&](const std::string& trigger) {
    testing_support::RawDb raw(store);
    raw.Exec("DROP TRIGGER IF EXISTS refuse; CREATE TRIGGER refuse " + trigger);
  };
  const std::string tune = "tune --costs " + Data("costs/hetero4.json") + " -m 8 --store " + store;
  // The frontier is written last, after the profile and every point's schedule.
  refuse(
      "BEFORE INSERT ON frontiers BEGIN SELECT RAISE(ABORT, 'frontiers refused by the test'); END");
  ExpectOneLineError(Zb(tune + " --objective span --time-limit 0 --evaluations 300"
                               " --frontier 1x:2x:0.5x"),
                     1, "tune", "frontiers refused by the test");
  // The schedule after its cost profile.
  refuse(
      "BEFORE INSERT ON schedules BEGIN SELECT RAISE(ABORT, 'schedules refused by the test'); END");
  ExpectOneLineError(Zb(tune + " --mem-limit 2x --family zb-v"), 1, "tune",
                     "schedules refused by the test");
  {
    testing_support::RawDb raw(store);
    for (const char* table : {"clusters", "jobs", "cost_profiles", "schedules", "timelines"}) {
      EXPECT_EQ(raw.Int(std::string("SELECT count(*) FROM ") + table), 0) << table;
    }
  }
  // The same store takes what it does not refuse.
  {
    testing_support::RawDb raw(store);
    raw.Exec("DROP TRIGGER refuse");
  }
  Result stored = Zb(tune + " --mem-limit 2x --family zb-h1");
  ASSERT_EQ(stored.exit_code, 0) << stored.err;
  testing_support::RawDb raw(store);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM schedules"), 1);
}

TEST_F(CliTest, BenchSearchMeetsItsOwnNeverWorseChecks) {
  // A short run: 50 ms per search over the 12 paper settings x 5 caps, one random instance.
  Result json = Zb("bench search --time-limit 0.05 --random 1 --exact 0 --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto report = nlohmann::json::parse(json.out);
  EXPECT_EQ(report["format"], "zb-bench-search/1");
  ASSERT_EQ(report["paper"].size(), 12u);
  ASSERT_EQ(report["random"].size(), 1u);
  EXPECT_EQ(report["targets"]["worse_than_heuristic"], 0);
  EXPECT_EQ(report["targets"]["worse_at_larger_cap"], 0);
  // V placement beats the loop heuristic by far on the paper settings at these caps.
  EXPECT_GT(report["targets"]["area_drop_any"].get<double>(), 0.25);
  ExpectOneLineError(Zb("bench search --time-limit 0"), 2, "bench search",
                     "--time-limit must be > 0");
}

TEST_F(CliTest, TuneObjectiveSpanPicksTheShortestSpanAndSaysSo) {
  const std::string tune =
      "tune --costs " + Data("costs/hetero4.json") + " -m 8 --mem-limit 1.5x --placement loop";
  Result text = Zb(tune + " --objective span");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  const std::string header = text.out.substr(0, text.out.find('\n'));
  EXPECT_NE(header.find("mem-limit=1.5x objective=span ("), std::string::npos) << header;
  ExpectGolden("tune_hetero4_m8_1.5x_loop_span.txt", text.out.substr(header.size() + 1));

  Result json = Zb(tune + " --objective span --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto report = nlohmann::json::parse(json.out);
  EXPECT_EQ(report["objective"], "span");
  double best_span = 1e300;
  std::string best;
  for (const auto& candidate : report["candidates"]) {
    if (!candidate["ok"].get<bool>() || !candidate["fits"].get<bool>()) continue;
    if (candidate["span"].get<double>() < best_span) {
      best_span = candidate["span"];
      best = candidate["family"];
    }
  }
  EXPECT_EQ(report["best"], best);
  EXPECT_EQ(report["best"], "zb-auto");
  Result by_makespan = Zb(tune + " --json");
  ASSERT_EQ(by_makespan.exit_code, 0) << by_makespan.err;
  const auto default_report = nlohmann::json::parse(by_makespan.out);
  EXPECT_EQ(default_report["objective"], "makespan");
  EXPECT_EQ(default_report["best"], "1f1b-i");

  const std::string out = Path("shortest.json");
  Result stored = Zb(tune + " --objective span --store " + Path("zb.db") + " --out " + out);
  ASSERT_EQ(stored.exit_code, 0) << stored.err;
  EXPECT_NE(stored.out.find("stored as schedule 1 in " + Path("zb.db") + " (chosen by span)\n"),
            std::string::npos)
      << stored.out;
  auto schedule = ReadScheduleFile(out);
  ASSERT_TRUE(schedule.ok()) << schedule.status().message();
  EXPECT_EQ(schedule->family, "zb-auto");
}

TEST_F(CliTest, ShowDrawsEveryRankAndTheSummary) {
  const std::string out = Path("h1.json");
  ASSERT_EQ(Zb("tune --costs " + Data("costs/uniform4.json") +
               " -m 8 --mem-limit none --family zb-h1 --out " + out)
                .exit_code,
            0);
  Result shown = Zb("show " + out + " --width 80");
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  ExpectGolden("show_uniform4_zb_h1.txt", shown.out);
  Result json = Zb("show " + out + " --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto summary = nlohmann::json::parse(json.out);
  EXPECT_EQ(summary["ranks"].size(), 4u);
  EXPECT_EQ(summary["family"], "zb-h1");
  EXPECT_TRUE(summary["cap"].is_null());  // a file records no cap
}

// T/LB means one thing (docs/bubbles.md §4): the bound under the cap the schedule was tuned for,
// which the store keeps, so zb show of a stored schedule agrees with zb tune.
TEST_F(CliTest, ShowOfAStoredScheduleDividesByTheBoundUnderItsCap) {
  const std::string store = Path("zb.db");
  Result tuned = Zb("tune --costs " + Data("costs/hetero4.json") +
                    " -m 8 --mem-limit 1x --json --store " + store);
  ASSERT_EQ(tuned.exit_code, 0) << tuned.err;
  const auto report = nlohmann::json::parse(tuned.out);
  double tune_t_over_lb = 0;
  for (const auto& candidate : report["candidates"]) {
    if (candidate["family"] == report["best"]) tune_t_over_lb = candidate["t_over_lb"];
  }
  Result shown = Zb("show --store " + store + " --schedule 1 --json");
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  const auto summary = nlohmann::json::parse(shown.out);
  ASSERT_FALSE(summary["cap"].is_null());
  EXPECT_NEAR(summary["t_over_lb"].get<double>(), tune_t_over_lb, 1e-12);
  Result text = Zb("show --store " + store + " --schedule 1");
  EXPECT_NE(text.out.find("(bound under the cap "), std::string::npos) << text.out;
}

TEST_F(CliTest, BenchPaperMatchesThePublishedTable) {
  Result result = Zb("bench paper --json");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto report = nlohmann::json::parse(result.out);
  EXPECT_EQ(report["mismatches"], 0);
  EXPECT_EQ(report["rows"].size(), 12u);
}

TEST_F(CliTest, BadCostsFilesFailWithOneLine) {
  const std::string tune = "tune -m 8 --mem-limit 1x --costs ";
  ExpectOneLineError(Zb(tune + Data("costs/missing_field.json")), 1, "tune",
                     "missing_field.json: stages[0].W: missing field");
  ExpectOneLineError(Zb(tune + Data("costs/negative_time.json")), 1, "tune",
                     "negative_time.json: stages[0].B: must be a finite number >= 0, got -2.5");
  ExpectOneLineError(Zb(tune + Data("costs/nan_time.json")), 1, "tune",
                     "NaN and Infinity are not valid JSON numbers");
  ExpectOneLineError(Zb(tune + Data("costs/zero_stages.json")), 1, "tune",
                     "zero_stages.json: count: must be in [1, 1048576], got 0");
  ExpectOneLineError(Zb(tune + Path("absent.json")), 1, "tune", "absent.json: cannot open");
}

TEST_F(CliTest, BadRequestsAreUsageErrors) {
  const std::string costs = " --costs " + Data("costs/uniform4.json");
  ExpectOneLineError(Zb("tune" + costs + " -m 6 --mem-limit 1x --family zb-h2"), 2, "tune",
                     "zb-h2: needs at least 8 microbatches, got 6");
  ExpectOneLineError(Zb("tune" + costs + " -m 6 --mem-limit 1x --family 1f1b-i"), 2, "tune",
                     "multiple of p = 4");
  ExpectOneLineError(Zb("tune" + costs + " -m 8 --mem-limit 1x --family gpipe"), 2, "tune",
                     "unknown family \"gpipe\"");
  ExpectOneLineError(Zb("tune" + costs + " -m 8 --mem-limit lots"), 2, "tune",
                     "--mem-limit \"lots\"");
  ExpectOneLineError(Zb("tune" + costs + " -m 0 --mem-limit 1x"), 2, "tune",
                     "--microbatches must be >= 1");
  ExpectOneLineError(Zb("tune" + costs + " --mem-limit 1x"), 2, "tune", "microbatches");
  ExpectOneLineError(Zb("tune" + costs + " -m 8 --mem-limit 1x --placement zigzag"), 2, "tune",
                     "--placement must be loop, v or any");
  ExpectOneLineError(Zb("tune" + costs + " -m 8 --mem-limit 1x --objective paper"), 2, "tune",
                     "--objective must be makespan or span, got \"paper\"");
  ExpectOneLineError(Zb("tune" + costs + " -m 8 --mem-limit 1x --runtime deepspeed"), 2, "tune",
                     "--runtime must be torch or zbkit, got \"deepspeed\"");
  ExpectOneLineError(Zb("export --format yaml -o - " + Data("costs/uniform4.json")), 2, "export",
                     "--format must be json, torch-csv, torch-csv-legacy or torch-csv-comms");
  Result unknown = Zb("frobnicate");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown command \"frobnicate\""), std::string::npos);
}

// docs/formats.md §4.1: a search for zbkit's executor may run the last stage's forwards out of
// microbatch order (seed 5 of this profile does); PyTorch's runtime would pair them with the wrong
// losses, so zb export refuses that order for torch with one line, and writes nothing. Tuned for
// torch (the default), the same search exports.
// zb export --for torchtitan: the CSV and the config lines that give torchtitan the schedule's
// split (its schedule name) and the microbatch size; activation checkpointing stays as the job has
// it (zb replay recomputes each checkpointed block once); usage errors in one line.
TEST_F(CliTest, ExportForTorchtitanPrintsTheConfigThatRunsTheCsv) {
  const std::string tune = "tune --costs " + Data("costs/uniform4.json") + " -m 8 --mem-limit 2x ";
  ASSERT_EQ(Zb(tune + "--family zb-v --out " + Path("v.json")).exit_code, 0);
  ASSERT_EQ(Zb(tune + "--family 1f1b-i --out " + Path("i.json")).exit_code, 0);
  ASSERT_EQ(Zb(tune + "--family 1f1b --out " + Path("one.json")).exit_code, 0);

  const std::string csv = Path("v.csv");
  Result v = Zb("export " + Path("v.json") + " --format torch-csv -o " + csv +
                " --for torchtitan --local-batch-size 16");
  ASSERT_EQ(v.exit_code, 0) << v.err;
  EXPECT_TRUE(fs::exists(csv));
  for (const std::string& line : std::vector<std::string>{
           "pipeline_parallel_degree = 4\n", "pipeline_parallel_schedule = \"ZBVZeroBubble\"",
           "pipeline_parallel_schedule_csv = \"" + csv + "\"",
           "pipeline_parallel_microbatch_size = 2  # 8 microbatches",
           "# activation_checkpoint as the job has it: run it with zb replay",
           "--parallelism.pipeline_parallel_schedule ZBVZeroBubble "
           "--parallelism.pipeline_parallel_schedule_csv " +
               csv + " --parallelism.pipeline_parallel_microbatch_size 2\n"}) {
    EXPECT_NE(v.out.find(line), std::string::npos) << line << " in\n" << v.out;
  }
  EXPECT_EQ(v.out.find("mode = \"none\""), std::string::npos) << v.out;
  Result interleaved = Zb("export " + Path("i.json") + " --format torch-csv -o " + Path("i.csv") +
                          " --for torchtitan");
  ASSERT_EQ(interleaved.exit_code, 0) << interleaved.err;
  EXPECT_NE(interleaved.out.find("pipeline_parallel_schedule = \"Interleaved1F1B\""),
            std::string::npos)
      << interleaved.out;
  EXPECT_NE(
      interleaved.out.find("pipeline_parallel_microbatch_size = training.local_batch_size / 8"),
      std::string::npos)
      << interleaved.out;
  Result one = Zb("export " + Path("one.json") + " --format torch-csv -o " + Path("one.csv") +
                  " --for torchtitan");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.out.find("pipeline_parallel_schedule = \"1F1B\""), std::string::npos) << one.out;
  EXPECT_EQ(one.out.find("activation_checkpoint"), std::string::npos) << "fused: no split";

  const std::string base = "export " + Path("v.json") + " ";
  ExpectOneLineError(Zb(base + "--format json -o " + Path("x") + " --for torchtitan"), 2, "export",
                     "--for torchtitan needs --format torch-csv");
  ExpectOneLineError(Zb(base + "--format torch-csv -o - --for torchtitan"), 2, "export",
                     "--for torchtitan needs -o FILE");
  ExpectOneLineError(Zb(base + "--format torch-csv -o " + Path("x") + " --for megatron"), 2,
                     "export", "--for must be torchtitan, got \"megatron\"");
  ExpectOneLineError(
      Zb(base + "--format torch-csv -o " + Path("x") + " --for torchtitan --local-batch-size 12"),
      2, "export", "--local-batch-size 12 does not split into the schedule's 8");
  ExpectOneLineError(Zb(base + "--format torch-csv -o " + Path("x") + " --local-batch-size 8"), 2,
                     "export", "--local-batch-size goes with --for torchtitan");
  EXPECT_FALSE(fs::exists(Path("x")));
}

// docs/activation-checkpointing.md §1: the profiled job's checkpointing rides from the profile into
// the tuned schedule's costs; a split order for a job that checkpoints per op is refused for
// PyTorch's runtime alone (its W fails there) with one line naming zb replay, and nothing is
// written; under full checkpointing the CSV is written with a note on torch's recomputations; a
// fused order, or the JSON, is written as before.
TEST_F(CliTest, ExportUnderActivationCheckpointingRefusesWhatTorchAloneCannotRun) {
  auto costs_with = [&](const std::string& mode) {
    const std::string path = Path(mode + ".costs.json");
    std::ofstream(path)
        << R"({"format": "zb-costs/1", "checkpointing": ")" << mode
        << R"(", "count": 2, "stages": [{"F": 1, "B": 2, "W": 1, "M_B": 1, "M_W": 2}]})";
    return path;
  };
  for (const std::string mode : {"op", "full"}) {
    const std::string tune = "tune --costs " + costs_with(mode) + " -m 4 --mem-limit none ";
    ASSERT_EQ(Zb(tune + "--family zb-h1 --out " + Path(mode + ".h1.json")).exit_code, 0);
    ASSERT_EQ(Zb(tune + "--family 1f1b --out " + Path(mode + ".1f1b.json")).exit_code, 0);
    auto tuned = ReadScheduleFile(Path(mode + ".h1.json"));
    ASSERT_TRUE(tuned.ok()) << tuned.status().message();
    EXPECT_EQ(tuned->costs.checkpointing, mode);
    const std::string csv = Path(mode + ".csv");
    Result split = Zb("export " + Path(mode + ".h1.json") + " --format torch-csv -o " + csv);
    if (mode == "op") {
      ExpectOneLineError(split, 1, "export", "checkpoints activations (op)");
      EXPECT_NE(split.err.find("run it with zb replay"), std::string::npos) << split.err;
      EXPECT_FALSE(fs::exists(csv));
    } else {
      ASSERT_EQ(split.exit_code, 0) << split.err;
      EXPECT_TRUE(fs::exists(csv));
      EXPECT_NE(split.err.find("again once per parameter group in W; zb replay recomputes it "
                               "once"),
                std::string::npos)
          << split.err;
    }
    Result fused = Zb("export " + Path(mode + ".1f1b.json") + " --format torch-csv -o -");
    EXPECT_EQ(fused.exit_code, 0) << fused.err;
    EXPECT_EQ(fused.err, "");
    EXPECT_EQ(Zb("export " + Path(mode + ".h1.json") + " --format json -o -").exit_code, 0);
  }
  ExpectOneLineError(Zb("tune --costs " + costs_with("most") + " -m 4 --mem-limit none"), 1, "tune",
                     "checkpointing: must be one of none, full, op, reentrant, layer, mixed, got "
                     "\"most\"");
}

TEST_F(CliTest, ExportRefusesAnOrderPyTorchWouldTrainWrong) {
  const std::string tune = "tune --costs " + Data("costs/fused2.json") +
                           " -m 8 --mem-limit 2x --family search --placement loop --seed 5 "
                           "--time-limit 0 --evaluations 3000 --out ";
  ASSERT_EQ(Zb(tune + Path("free.json") + " --runtime zbkit").exit_code, 0);
  const std::string csv = Path("free.csv");
  ExpectOneLineError(Zb("export " + Path("free.json") + " --format torch-csv -o " + csv), 1,
                     "export",
                     "PyTorch runtime rule \"last stage's forwards in microbatch order\" "
                     "(docs/formats.md §4.1): rank 1, stage 3 runs F");
  EXPECT_FALSE(fs::exists(csv));
  ExpectOneLineError(Zb("export " + Path("free.json") + " --format torch-csv-comms -o -"), 1,
                     "export", "last stage's forwards in microbatch order");
  ASSERT_EQ(Zb(tune + Path("torch.json")).exit_code, 0);
  Result exported = Zb("export " + Path("torch.json") + " --format torch-csv -o -");
  EXPECT_EQ(exported.exit_code, 0) << exported.err;
}

// --layout: the job's stage layout is what it can replay unedited; other layouts are judged and
// shown, never chosen, with what they would gain (docs/schedules.md §7).
TEST_F(CliTest, TuneForTheJobsLayoutProposesOnlyWhatItCanReplay) {
  const std::string tune = "tune --costs " + Data("costs/hetero4.json") + " -m 8 --mem-limit 2x ";
  Result json = Zb(tune + "--layout loop:1 --json --out " + Path("one.json"));
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto report = nlohmann::json::parse(json.out);
  int others = 0;
  for (const auto& candidate : report["candidates"]) {
    const std::string family = candidate["family"];
    const bool one_per_rank =
        family == "1f1b" || family == "zb-h1" || family == "zb-h2" || family == "zb-auto";
    if (candidate["ok"]) {
      EXPECT_EQ(candidate["other_layout"], !one_per_rank) << family;
    }
    others += candidate["other_layout"].get<bool>();
  }
  EXPECT_GT(others, 0);
  auto chosen = ReadScheduleFile(Path("one.json"));
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ(chosen->chunks, 1);
  EXPECT_EQ(chosen->placement, Placement::kLoop);
  Result text = Zb(tune + "--layout loop:1");
  EXPECT_NE(text.out.find("layout loop:1 (1 stage per rank): best "), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("another layout would gain: 2 stages per rank in V placement: "),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("(other layout)"), std::string::npos);
  // The search keeps to the layout too.
  ASSERT_EQ(Zb(tune + "--layout loop:1 --family search --time-limit 0 --evaluations 2000 --out " +
               Path("search.json"))
                .exit_code,
            0);
  auto searched = ReadScheduleFile(Path("search.json"));
  ASSERT_TRUE(searched.ok());
  EXPECT_EQ(searched->chunks, 1);
  EXPECT_EQ(searched->placement, Placement::kLoop);
  ASSERT_EQ(Zb(tune + "--layout v --out " + Path("v.json")).exit_code, 0);
  auto v = ReadScheduleFile(Path("v.json"));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->placement, Placement::kV);
  ExpectOneLineError(Zb(tune + "--layout zigzag"), 2, "tune",
                     "--layout must be profile, loop:1, loop:V (V stages per rank), v or any");
}

// A profile that records its job's layout (what `zb profile`/`zb import` write): zb tune keeps to
// it by default, says so and what another layout would gain; --layout any or another layout
// overrides it. A profile without one is tuned over any layout, as before.
TEST_F(CliTest, TuneKeepsToTheLayoutTheProfileRecords) {
  const std::string costs = Path("profiled.json");
  nlohmann::json profile = nlohmann::json::parse(std::ifstream(Data("costs/hetero4.json")));
  profile["layout"] = {{"placement", "loop"}, {"stages_per_rank", 1}, {"schedule", "Schedule1F1B"}};
  std::ofstream(costs) << profile.dump();
  const std::string tune = "tune --costs " + costs + " -m 8 --mem-limit 2x ";
  Result json = Zb(tune + "--json --out " + Path("one.json"));
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto report = nlohmann::json::parse(json.out);
  EXPECT_EQ(report["layout"], "loop:1");
  EXPECT_EQ(report["layout_from_profile"], true);
  auto chosen = ReadScheduleFile(Path("one.json"));
  ASSERT_TRUE(chosen.ok()) << chosen.status().message();
  EXPECT_EQ(chosen->chunks, 1);
  EXPECT_EQ(chosen->placement, Placement::kLoop);
  Result text = Zb(tune);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("layout loop:1 (1 stage per rank, the profiled job's: it ran "
                          "Schedule1F1B; --layout any lifts it): best "),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("another layout would gain: 2 stages per rank in V placement: "),
            std::string::npos)
      << text.out;

  Result any = Zb(tune + "--layout any --json --out " + Path("any.json"));
  ASSERT_EQ(any.exit_code, 0) << any.err;
  const auto any_report = nlohmann::json::parse(any.out);
  EXPECT_TRUE(any_report["layout"].is_null());
  EXPECT_EQ(any_report["layout_from_profile"], false);
  for (const auto& candidate : any_report["candidates"])
    EXPECT_FALSE(candidate["other_layout"].get<bool>()) << candidate["family"];
  auto unrestricted = ReadScheduleFile(Path("any.json"));
  ASSERT_TRUE(unrestricted.ok());
  EXPECT_EQ(unrestricted->chunks, 2);  // an interleaved or V order is faster here, and now allowed

  Result v = Zb(tune + "--layout v --json");  // naming a layout overrides the profile's
  ASSERT_EQ(v.exit_code, 0) << v.err;
  EXPECT_EQ(nlohmann::json::parse(v.out)["layout"], "v");
  EXPECT_EQ(nlohmann::json::parse(v.out)["layout_from_profile"], false);

  // Below 1F1B's memory the heuristic still builds an order of layout loop:1 under torch's
  // runtime: it plans with the memory that runtime holds (the first stage's activations until
  // its W), so it fits where building for the paper's model and checking after did not.
  Result tight = Zb("tune --costs " + costs + " -m 8 --mem-limit 0.9x --json");
  ASSERT_EQ(tight.exit_code, 0) << tight.err;
  const auto tight_report = nlohmann::json::parse(tight.out);
  EXPECT_EQ(tight_report["best"], "zb-auto");
  for (const auto& candidate : tight_report["candidates"]) {
    if (candidate["family"] != "zb-auto") continue;
    EXPECT_TRUE(candidate["fits"].get<bool>());
    for (const auto& peak : candidate["peak_memory"])
      EXPECT_LE(peak.get<double>(), 0.9 * 9.6);
  }
  // A family of another layout asked for by name, which fits the cap: the same.
  Result zbv = Zb("tune --costs " + costs + " -m 8 --mem-limit 2x --family zb-v");
  ExpectOneLineError(zbv, 1, "tune",
                     "no schedule of layout loop:1 (the profile's) fits --mem-limit 2x; zb-v fits "
                     "it (needs ");
  EXPECT_NE(zbv.err.find("x) in layout v: tune with --layout v (or any) and run the job with "),
            std::string::npos)
      << zbv.err;

  // The stored profile keeps the layout (zb costs export writes it back).
  const std::string store = Path("zb.db");
  ASSERT_EQ(Zb(tune + "--store " + store).exit_code, 0);
  Result exported =
      Zb("costs export --store " + store + " --profile 1 --format json -o " + Path("back.json"));
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  auto back = ReadCostsFile(Path("back.json"));
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_TRUE(back->layout.has_value());
  EXPECT_EQ(*back->layout, (JobLayout{Placement::kLoop, 1}));
  EXPECT_EQ(back->schedule_class, "Schedule1F1B");

  Result plain = Zb("tune --costs " + Data("costs/hetero4.json") + " -m 8 --mem-limit 2x --json");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_TRUE(nlohmann::json::parse(plain.out)["layout"].is_null());
}

// zb rehearse --store records a cluster's hop times through `zb costs record-hops`; `zb costs
// hops` lists them and `zb tune --comm cluster` predicts with their median, saying so.
TEST_F(CliTest, ClusterHopTimesAreStoredListedAndUsedOnlyWhenAsked) {
  const std::string store = Path("zb.db");
  const std::string hops = Path("hops.json");
  std::ofstream(hops) << R"({"format": "zb-hops/1", "message_bytes": 4096, "source": "zb rehearse",
 "hops": [{"from": 0, "to": 1, "ms": 0.25}, {"from": 1, "to": 2, "ms": 0.5},
          {"from": 2, "to": 3, "ms": 4.0}]})";
  const std::string tune = "tune --costs " + Data("costs/hetero4.json") +
                           " -m 8 --mem-limit 2x --family zb-h1 --json --store " + store;
  ASSERT_EQ(Zb(tune).exit_code, 0);  // creates the store
  ExpectOneLineError(Zb(tune + " --cluster rack-1 --comm cluster"), 1, "tune",
                     "no hop times measured on cluster rack-1");

  Result recorded = Zb("costs record-hops --store " + store + " --cluster rack-1 " + hops);
  ASSERT_EQ(recorded.exit_code, 0) << recorded.err;
  EXPECT_NE(recorded.out.find("hop measurement 1 of cluster rack-1: median 0.500 ms over 3 hops"),
            std::string::npos)
      << recorded.out;
  Result listed = Zb("costs hops --store " + store + " --json");
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const auto listing = nlohmann::json::parse(listed.out);
  ASSERT_EQ(listing["measurements"].size(), 1u);
  EXPECT_EQ(listing["measurements"][0]["cluster"], "rack-1");
  EXPECT_DOUBLE_EQ(listing["measurements"][0]["median_ms"].get<double>(), 0.5);
  EXPECT_EQ(listing["measurements"][0]["hops"].size(), 3u);

  Result profile_comm = Zb(tune + " --cluster rack-1");
  ASSERT_EQ(profile_comm.exit_code, 0) << profile_comm.err;
  EXPECT_EQ(profile_comm.err, "");
  Result cluster_comm = Zb(tune + " --cluster rack-1 --comm cluster");
  ASSERT_EQ(cluster_comm.exit_code, 0) << cluster_comm.err;
  EXPECT_NE(cluster_comm.err.find("zb tune: comm 0.500 ms: the median of 3 hops measured on "
                                  "cluster rack-1 (4096 B messages, zb rehearse, "),
            std::string::npos)
      << cluster_comm.err;
  const double with_profile =
      nlohmann::json::parse(profile_comm.out)["candidates"][0]["makespan"].get<double>();
  const double with_cluster =
      nlohmann::json::parse(cluster_comm.out)["candidates"][0]["makespan"].get<double>();
  EXPECT_NE(with_profile, with_cluster) << "the hop time changes the prediction";

  ExpectOneLineError(Zb("costs record-hops --store " + store + " " + Data("costs/hetero4.json")), 1,
                     "costs record-hops", "format: expected \"zb-hops/1\", got \"zb-costs/1\"");
  ExpectOneLineError(Zb(tune + " --comm nearest"), 2, "tune", "--comm must be profile or cluster");
  ExpectOneLineError(
      Zb("tune --costs " + Data("costs/hetero4.json") + " -m 8 --mem-limit 2x --comm cluster"), 2,
      "tune", "--comm cluster needs --store DB");
}

// Instances beyond what zbkit tunes are refused at once (exit 2), before any allocation; a cap
// below one microbatch says so instead of pointing at the table.
TEST_F(CliTest, TooLargeInstancesAndCapsBelowOneMicrobatchAreNamed) {
  const std::string many = Path("many.json");
  std::ofstream(many) << R"({"format": "zb-costs/1", "count": 100000,
 "stages": [{"F": 1, "B": 1, "W": 1, "M_B": 1, "M_W": 0.5}]})";
  ExpectOneLineError(Zb("tune --costs " + many + " -m 4 --mem-limit 2x"), 2, "tune",
                     "costs: 100000 stages, one per rank: more than the 1024 ranks zbkit tunes");
  ExpectOneLineError(
      Zb("tune --costs " + Data("costs/uniform4.json") + " -m 1000000 --mem-limit 2x"), 2, "tune",
      "-m 1000000 on 4 ranks with 2 stages per rank makes 24000000 ops, more than the 1048576");
  ExpectOneLineError(
      Zb("tune --costs " + Data("costs/uniform4.json") + " -m 8 --mem-limit 0.1x"), 1, "tune",
      "no schedule fits --mem-limit 0.1x: rank 0's cap 0.8 is below one microbatch's "
      "activations of its stage, even split in 2 (M_B 2 / 2 = 1): no order can run under it");
}

TEST_F(CliTest, NothingFitsFailsAndWritesNothing) {
  const std::string out = Path("never.json");
  const std::string store = Path("zb.db");
  Result result = Zb("tune --costs " + Data("costs/uniform4.json") +
                     " -m 8 --mem-limit 0.1x --store " + store + " --out " + out);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("no schedule fits --mem-limit 0.1x"), std::string::npos) << result.err;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(store));
}

TEST_F(CliTest, UnreadableStoresFailWithOneLine) {
  ExpectOneLineError(Zb("export --store " + Path("absent.db") + " --schedule 1 --format json -o -"),
                     1, "export", "absent.db");
  EXPECT_FALSE(fs::exists(Path("absent.db"))) << "a read-only open must not create the store";
  std::ofstream(Path("garbage.db")) << "this is not a database, just text\n";
  ExpectOneLineError(Zb("show --store " + Path("garbage.db") + " --schedule 1"), 1, "show",
                     "garbage.db");

  const std::string store = Path("zb.db");
  ASSERT_EQ(Zb("tune --costs " + Data("costs/uniform4.json") +
               " -m 8 --mem-limit 1x --family zb-h1 --store " + store)
                .exit_code,
            0);
  ExpectOneLineError(Zb("show --store " + store + " --schedule 42"), 1, "show", "42");
}

}  // namespace
}  // namespace zb
