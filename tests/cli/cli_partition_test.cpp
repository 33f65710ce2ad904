// SPDX-License-Identifier: Apache-2.0
// zb partition (docs/partition.md): the compared splits side by side, what runs the fastest in
// torchtitan and in a plain script, and bad input.
#include <set>

#include "cli_test_support.h"

namespace zb {
namespace {

using namespace cli_testing;
namespace fs = std::filesystem;

class PartitionCliTest : public CliTest {
 protected:
  std::string Layers() { return Data("layers/llm19.json"); }
};

TEST_F(PartitionCliTest, ComparesTheSplitsOfEveryLayoutAndSaysHowToRunTheFastest) {
  Result text = Zb("partition --layers " + Layers() + " -p 4 -m 8 --evaluations 300 --for " +
                   "torchtitan --split-out " + Path("split.json") + " --out " + Path("order.json"));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const char* layout : {"loop:1", "loop:2", "v"}) {
    for (const char* row : {"even", "torchtitan", "min-max", "co-tuned"}) {
      EXPECT_NE(text.out.find(std::string("\n") + layout), std::string::npos) << layout;
      EXPECT_NE(text.out.find(row), std::string::npos) << row;
    }
  }
  EXPECT_NE(text.out.find("best: co-tuned split in layout "), std::string::npos) << text.out;
  // torchtitan's settings name every block once, in model order.
  const size_t fqns = text.out.find("module_fqns_per_model_part = ");
  ASSERT_NE(fqns, std::string::npos) << text.out;
  const size_t line_end = text.out.find('\n', fqns);
  const auto parts = nlohmann::json::parse(text.out.substr(fqns + 29, line_end - fqns - 29));
  std::vector<std::string> order;
  for (const auto& part : parts) {
    EXPECT_FALSE(part.empty());
    for (const auto& name : part)
      order.push_back(name);
  }
  ASSERT_EQ(order.size(), 19u);
  EXPECT_EQ(order.front(), "tok_embeddings");
  EXPECT_EQ(order[1], "layers.0");
  EXPECT_EQ(order.back(), "output");
  EXPECT_NE(text.out.find("pipeline_parallel_schedule = \""), std::string::npos);

  // The split file and the order describe the same split.
  const auto split = nlohmann::json::parse(Slurp(Path("split.json")));
  EXPECT_EQ(split["format"], "zb-split/1");
  EXPECT_EQ(split["stages"], parts);
  auto schedule = ReadScheduleFile(Path("order.json"));
  ASSERT_TRUE(schedule.ok()) << schedule.status().message();
  EXPECT_EQ(schedule->ranks, 4);
  EXPECT_EQ(schedule->num_stages(), static_cast<int>(parts.size()));
  EXPECT_EQ(JobLayoutName({schedule->placement, schedule->chunks}), split["layout"]);
}

TEST_F(PartitionCliTest, JsonRowsAndTheCoTunedSplitIsNeverSlower) {
  Result json = Zb("partition --layers " + Layers() + " -p 4 -m 8 --evaluations 300 --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto report = nlohmann::json::parse(json.out);
  EXPECT_EQ(report["format"], "zb-partition/1");
  ASSERT_EQ(report["rows"].size(), 12u);
  ASSERT_TRUE(report["best"].is_number());
  const auto& best = report["rows"][report["best"].get<size_t>()];
  EXPECT_EQ(best["split"], "co-tuned");
  std::set<std::string> layouts;
  for (const auto& row : report["rows"]) {
    layouts.insert(row["layout"].get<std::string>());
    ASSERT_TRUE(row["ok"].get<bool>()) << row.dump();
    EXPECT_LE(best["iteration_ms"].get<double>(), row["iteration_ms"].get<double>()) << row.dump();
    int blocks = 0;
    for (const auto& count : row["blocks_per_stage"])
      blocks += count.get<int>();
    EXPECT_EQ(blocks, 19);
    // Each stage's summed costs, on the rank its layout places it (what zbview draws).
    ASSERT_EQ(row["stage_costs"].size(), row["blocks_per_stage"].size()) << row.dump();
    EXPECT_EQ(row["stage_costs"][0]["rank"], 0);
  }
  EXPECT_EQ(layouts, (std::set<std::string>{"loop:1", "loop:2", "v"}));
  EXPECT_FALSE(report.contains("torchtitan"));  // only with --for torchtitan

  // With --for torchtitan, the JSON carries the settings the text prints.
  Result titan =
      Zb("partition --layers " + Layers() + " -p 4 -m 8 --evaluations 300 --json --for torchtitan");
  ASSERT_EQ(titan.exit_code, 0) << titan.err;
  const auto settings = nlohmann::json::parse(titan.out)["torchtitan"];
  EXPECT_EQ(settings["pipeline_parallel_degree"], 4);
  EXPECT_EQ(settings["module_fqns_per_model_part"], best["stages"]);
  EXPECT_TRUE(settings["pipeline_parallel_schedule"].is_string());
}

TEST_F(PartitionCliTest, StageTotalsAreSharedOutAndSaySo) {
  Result shared = Zb("partition --costs " + Data("costs/hetero4.json") +
                     " --blocks 4,4,4,4 -p 2 -m 4 --layout loop:1 --evaluations 0");
  ASSERT_EQ(shared.exit_code, 0) << shared.err;
  EXPECT_NE(shared.err.find("only stage totals were measured"), std::string::npos) << shared.err;
  EXPECT_NE(shared.out.find("(even share of stages)"), std::string::npos) << shared.out;
  // torchtitan cannot build modules named after shares.
  ExpectOneLineError(Zb("partition --costs " + Data("costs/hetero4.json") +
                        " --blocks 4,4,4,4 -p 2 -m 4 --for torchtitan"),
                     2, "partition", "not modules the model has");
}

TEST_F(PartitionCliTest, BadInputIsOneLine) {
  const std::string base = "partition --layers " + Layers() + " -p 4 -m 8 ";
  ExpectOneLineError(Zb(base + "--mem-limit 2x"), 2, "partition", "give a size");
  ExpectOneLineError(
      Zb("partition --costs " + Data("costs/hetero4.json") + " --blocks 4,4x,4,4 -p 2 -m 4"), 2,
      "partition", "--blocks: \"4x\" is not a count");
  ExpectOneLineError(Zb(base + "--layout loop:0"), 2, "partition", "--layout must be");
  ExpectOneLineError(Zb("partition --layers " + Layers() + " -p 16 -m 8 --layout v"), 2,
                     "partition", "19 blocks cannot make 32 stages");
  ExpectOneLineError(Zb("partition --layers " + Path("missing.json") + " -p 4 -m 8"), 1,
                     "partition", "missing.json");
  ExpectOneLineError(Zb("partition --layers " + Data("costs/hetero4.json") + " -p 4 -m 8"), 1,
                     "partition", "format: expected \"zb-layers/1\"");
  Result tight = Zb(base + "--mem-limit 20 --evaluations 0 --split-out " + Path("never.json"));
  EXPECT_EQ(tight.exit_code, 1) << tight.err;
  EXPECT_NE(tight.err.find("no split of any layout asked for fits --mem-limit 20"),
            std::string::npos)
      << tight.err;
  EXPECT_FALSE(fs::exists(Path("never.json")));
  ExpectOneLineError(Zb(base + "--checkpointing selective"), 2, "partition",
                     "--checkpointing: \"selective\" is not as-run, plan or a list");
  ExpectOneLineError(Zb(base + "--checkpointing none,op"), 1, "partition",
                     "--checkpointing op: no block of the profile has costs measured under it");
}

// The memory plan (docs/memory-plan.md): the uniform rows and the plan side by side, the split
// file carrying every block's mode; derived options said so.
TEST_F(PartitionCliTest, MemoryPlanRowsAndTheSplitFileCarryEachBlocksMode) {
  const std::string model = std::string(ZBKIT_TUNER_DATA_DIR) + "/memory-plan/llama8b-8k.json";
  Result text = Zb("partition --layers " + model +
                   " -p 8 -m 16 --layout loop:1 --mem-limit 32GiB --checkpointing none,full "
                   "--evaluations 0 --split-out " +
                   Path("split.json"));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const char* row : {"uniform-none", "uniform-full", "co-tuned", "checkpointing full: "})
    EXPECT_NE(text.out.find(row), std::string::npos) << row << "\n" << text.out;
  EXPECT_EQ(text.out.find("uniform-op"), std::string::npos) << text.out;
  const auto split = nlohmann::json::parse(Slurp(Path("split.json")));
  ASSERT_TRUE(split.contains("checkpointing")) << split.dump();
  EXPECT_EQ(split["checkpointing"].size(), 35u);
  EXPECT_EQ(split["checkpointing"]["tok_embeddings"], "none");
  int full = 0;
  for (const auto& [block, mode] : split["checkpointing"].items())
    full += mode == "full" ? 1 : 0;
  EXPECT_GT(full, 0);
  EXPECT_LT(full, 32);  // a plan: some blocks, not every one

  Result derived = Zb("partition --layers " + Layers() +
                      " -p 4 -m 8 --layout loop:1 --checkpointing plan --derive-full "
                      "--evaluations 0 --json");
  ASSERT_EQ(derived.exit_code, 0) << derived.err;
  EXPECT_NE(derived.err.find("18 blocks got a derived full-checkpointing option"),
            std::string::npos)
      << derived.err;
  const auto rows = nlohmann::json::parse(derived.out)["rows"];
  std::set<std::string> names;
  for (const auto& row : rows) {
    names.insert(row["split"].get<std::string>());
    EXPECT_EQ(row["checkpointing"].size(), 19u);
  }
  EXPECT_EQ(names, (std::set<std::string>{"even", "torchtitan", "min-max", "uniform-none",
                                          "uniform-full", "co-tuned"}));
}

}  // namespace
}  // namespace zb
