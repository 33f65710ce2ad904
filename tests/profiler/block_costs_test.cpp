// SPDX-License-Identifier: Apache-2.0
// Merging the PyTorch hook's per-rank block files into per-layer costs (block_costs.h): stage
// order across ranks, names two stages share, and what is left out with a note (a stage
// without blocks, a torn file, a block the zb-layers/1 rules refuse).
#include "zbkit/profiler/block_costs.h"

#include <gtest/gtest.h>

#include <fstream>

#include "../support/temp_dir.h"
#include "zbkit/profiler/import.h"

namespace zb::profiler {
namespace {

using testing_support::TempDir;

void Write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

std::string Block(const std::string& name, double f, double m_b = 4096, double m_w = 1024) {
  return "{\"name\": \"" + name + "\", \"F\": " + std::to_string(f) +
         ", \"B\": 1.5, \"W\": 0.5, \"M_B\": " + std::to_string(m_b) +
         ", \"M_W\": " + std::to_string(m_w) + ", \"state\": 100, \"send\": 64}";
}

std::string RankFile(int rank, const std::string& stages) {
  return "{\"format\": \"zb-block-costs/1\", \"rank\": " + std::to_string(rank) +
         ", \"repeats\": 3, \"stages\": [" + stages + "]}";
}

// A V layout's report: rank 0 holds stages 0 and 3, rank 1 stages 1 and 2.
CostReport FourStages() {
  CostReport report;
  report.num_stages = 4;
  for (int s = 0; s < 4; ++s) {
    StageStats stats;
    stats.stage = s;
    stats.rank = s == 0 || s == 3 ? 0 : 1;
    stats.f.median = 4'000'000;
    stats.bw.median = 8'000'000;
    stats.bw.samples = 4;
    report.stages.push_back(stats);
  }
  return report;
}

void WriteVJob(const TempDir& dir, const std::string& rank1_stage2 = "") {
  Write(dir.Path("rank0.blocks.json"),
        RankFile(0, "{\"stage\": 0, \"blocks\": [" + Block("tok_embeddings", 0.5) + ", " +
                        Block("layers.0", 2) + "]}, {\"stage\": 3, \"blocks\": [" +
                        Block("norm", 0.1) + ", " + Block("output", 3) + "]}"));
  Write(dir.Path("rank1.blocks.json"),
        RankFile(1, "{\"stage\": 1, \"blocks\": [" + Block("layers.1", 2) +
                        "]}, {\"stage\": 2, \"blocks\": [" +
                        (rank1_stage2.empty() ? Block("layers.2", 2) : rank1_stage2) + "]}"));
}

TEST(BlockCosts, StagesOfEveryRankInModelOrderWithTheProfilesComm) {
  TempDir dir;
  WriteVJob(dir);
  Write(dir.Path("rank0.json"), "{\"traceEvents\": []}");  // a trace beside them: not read here
  BlockCosts costs = ReadBlockCosts({dir.Path("")}, FourStages(), 250'000);
  ASSERT_TRUE(costs.layers.has_value()) << (costs.notes.empty() ? "" : costs.notes[0]);
  std::vector<std::string> names;
  for (const LayerCost& layer : costs.layers->layers)
    names.push_back(layer.name);
  EXPECT_EQ(names, (std::vector<std::string>{"tok_embeddings", "layers.0", "layers.1", "layers.2",
                                             "norm", "output"}));
  EXPECT_EQ(costs.layers->comm, 250'000);
  EXPECT_EQ(costs.layers->source, LayerSource::kMeasured);
  EXPECT_EQ(costs.layers->layers[1].f, 2'000'000);
  EXPECT_EQ(costs.layers->layers[1].m_w, 1024);
  // The blocks' share of what the schedule measured: stage 0 has F 2.5 of 4 ms, backward
  // 2 x 2 of 8 ms.
  ASSERT_EQ(costs.notes.size(), 1u);
  EXPECT_NE(costs.notes[0].find("6 blocks"), std::string::npos) << costs.notes[0];
  EXPECT_NE(costs.notes[0].find("stage 0 63/50 %"), std::string::npos) << costs.notes[0];
}

TEST(BlockCosts, NamesTwoStagesShareAreQualifiedByTheirStage) {
  TempDir dir;
  Write(dir.Path("rank0.blocks.json"),
        RankFile(0, "{\"stage\": 0, \"blocks\": [" + Block("embed", 0.5) + ", " +
                        Block("blocks.0", 2) + "]}"));
  Write(dir.Path("rank1.blocks.json"),
        RankFile(1, "{\"stage\": 1, \"blocks\": [" + Block("blocks.0", 2) + ", " +
                        Block("head", 1) + "]}"));
  CostReport report = FourStages();
  report.num_stages = 2;
  report.stages.resize(2);
  BlockCosts costs = ReadBlockCosts({dir.Path("")}, report, 0);
  ASSERT_TRUE(costs.layers.has_value());
  EXPECT_EQ(costs.layers->layers[2].name, "stage1.blocks.0");
  EXPECT_EQ(costs.layers->layers[0].name, "stage0.embed");
  EXPECT_NE(costs.notes[0].find("\"blocks.0\" is in two stages"), std::string::npos);
}

TEST(BlockCosts, WhatCannotBeUsedIsANoteAndNoLayers) {
  {
    TempDir dir;  // no block files at all: nothing to say
    BlockCosts costs = ReadBlockCosts({dir.Path("")}, FourStages(), 0);
    EXPECT_FALSE(costs.layers.has_value());
    EXPECT_TRUE(costs.notes.empty());
  }
  struct Case {
    const char* what;
    std::string stage2;  // rank 1's stage 2 blocks, or a whole broken file below
    const char* says;
  } cases[] = {
      {"a block the format refuses", Block("layers.2", -1), "F"},
      {"a negative M_W", Block("layers.2", 2, 10, -20), "M_W"},
      {"a name twice", Block("layers.1", 2), "stage2.layers.1"},
      {"a name that is a number",
       "{\"name\": 5, \"F\": 1, \"B\": 1, \"W\": 1, \"M_B\": 1, "
       "\"M_W\": 0}",
       "name"},
  };
  for (const Case& c : cases) {
    TempDir dir;
    WriteVJob(dir, c.stage2);
    BlockCosts costs = ReadBlockCosts({dir.Path("")}, FourStages(), 0);
    if (std::string(c.what) == "a name twice") {  // made unique, not refused
      ASSERT_TRUE(costs.layers.has_value()) << c.what;
      EXPECT_EQ(costs.layers->layers[3].name, c.says);
      continue;
    }
    EXPECT_FALSE(costs.layers.has_value()) << c.what;
    ASSERT_FALSE(costs.notes.empty()) << c.what;
    EXPECT_NE(costs.notes[0].find("per-block costs left out"), std::string::npos) << costs.notes[0];
    EXPECT_NE(costs.notes[0].find(c.says), std::string::npos) << costs.notes[0];
  }
  {
    TempDir dir;
    WriteVJob(dir);
    Write(dir.Path("rank1.blocks.json"), "{\"format\": 1, \"stages\": []}");
    BlockCosts numbered = ReadBlockCosts({dir.Path("")}, FourStages(), 0);
    EXPECT_FALSE(numbered.layers.has_value());
    ASSERT_EQ(numbered.notes.size(), 1u);
    EXPECT_NE(numbered.notes[0].find("format: expected"), std::string::npos) << numbered.notes[0];
    Write(dir.Path("rank1.blocks.json"), "{\"format\": \"zb-block-costs/1\", \"stag");
    BlockCosts costs = ReadBlockCosts({dir.Path("")}, FourStages(), 0);
    EXPECT_FALSE(costs.layers.has_value());
    ASSERT_EQ(costs.notes.size(), 1u);
    EXPECT_NE(costs.notes[0].find("rank1.blocks.json: not valid JSON"), std::string::npos)
        << costs.notes[0];
  }
  {
    TempDir dir;  // rank 1 never wrote its file (it was killed, say)
    WriteVJob(dir);
    std::filesystem::remove(dir.Path("rank1.blocks.json"));
    BlockCosts costs = ReadBlockCosts({dir.Path("")}, FourStages(), 0);
    EXPECT_FALSE(costs.layers.has_value());
    ASSERT_EQ(costs.notes.size(), 1u);
    EXPECT_NE(costs.notes[0].find("stage 1 has no measured blocks"), std::string::npos)
        << costs.notes[0];
  }
}

// The loss, measured apart on the last stage, is counted with that stage's last block (it runs
// after it whatever the split); a malformed one is left out, said, and the blocks stand.
TEST(BlockCosts, TheLossCountsWithTheLastBlock) {
  for (const bool malformed : {false, true}) {
    TempDir dir;
    WriteVJob(dir);
    const std::string loss = malformed ? "{\"F\": -1, \"B\": 1, \"M_B\": 8}"
                                       : "{\"F\": 0.25, \"B\": 0.5, \"M_B\": 8192}";
    Write(dir.Path("rank0.blocks.json"),
          RankFile(0, "{\"stage\": 0, \"blocks\": [" + Block("tok_embeddings", 0.5) + ", " +
                          Block("layers.0", 2) + "]}, {\"stage\": 3, \"blocks\": [" +
                          Block("norm", 0.1) + ", " + Block("output", 3) + "], \"loss\": " + loss +
                          "}"));
    BlockCosts costs = ReadBlockCosts({dir.Path("")}, FourStages(), 0);
    ASSERT_TRUE(costs.layers.has_value()) << malformed;
    const LayerCost& output = costs.layers->layers.back();
    EXPECT_EQ(output.name, "output");
    EXPECT_EQ(output.f, malformed ? 3'000'000 : 3'250'000);
    EXPECT_EQ(output.b, malformed ? 1'500'000 : 2'000'000);
    EXPECT_EQ(output.w, 500'000);  // a loss has no weights
    EXPECT_EQ(output.m_b, malformed ? 4096 : 4096 + 8192);
    EXPECT_EQ(costs.layers->layers[4].f, 100'000);  // norm: untouched
    ASSERT_EQ(costs.notes.size(), 2u);
    EXPECT_NE(costs.notes[0].find(malformed ? "the loss's measurement left out: F"
                                            : "the loss (F 0.250 ms, B 0.500 ms, M_B 8192) is "
                                              "counted in output"),
              std::string::npos)
        << costs.notes[0];
  }
}

// A block measured in other checkpointing modes keeps them (the memory plan's input,
// docs/memory-plan.md §1), and the loss counts in each: it runs after the block in every mode.
TEST(BlockCosts, OtherCheckpointingModesRideAlongWithTheLossInEach) {
  TempDir dir;
  WriteVJob(dir);
  std::string output = Block("output", 3);
  output.pop_back();
  output +=
      ", \"checkpointing\": \"none\", \"options\": [{\"checkpointing\": \"full\", \"F\": 3, "
      "\"B\": 4.5, \"W\": 0.5, \"M_B\": 64, \"M_W\": 1024, \"source\": \"measured\"}]}";
  Write(dir.Path("rank0.blocks.json"),
        RankFile(0, "{\"stage\": 0, \"blocks\": [" + Block("tok_embeddings", 0.5) + ", " +
                        Block("layers.0", 2) + "]}, {\"stage\": 3, \"blocks\": [" +
                        Block("norm", 0.1) + ", " + output +
                        "], \"loss\": {\"F\": 0.25, \"B\": 0.5, \"M_B\": 8192}}"));
  BlockCosts costs = ReadBlockCosts({dir.Path("")}, FourStages(), 0);
  ASSERT_TRUE(costs.layers.has_value()) << (costs.notes.empty() ? "" : costs.notes[0]);
  const LayerCost& last = costs.layers->layers.back();
  EXPECT_EQ(last.modes(), (std::vector<std::string>{"none", "full"}));
  const CheckpointingOption& full = last.options.at(0);
  EXPECT_EQ(full.f, 3'250'000);
  EXPECT_EQ(full.b, 5'000'000);
  EXPECT_EQ(full.w, 500'000);
  EXPECT_EQ(full.m_b, 64 + 8192);
  EXPECT_TRUE(full.measured);
  EXPECT_EQ(last.b, 2'000'000);
}

TEST(BlockCosts, BlockFilesAreNotTraces) {
  EXPECT_TRUE(IsBlockCostsFileName("rank3.blocks.json"));
  EXPECT_FALSE(IsChromeTraceFileName("rank3.blocks.json"));
  EXPECT_TRUE(IsChromeTraceFileName("rank3.json"));
  EXPECT_FALSE(IsBlockCostsFileName("rank3.json.gz"));
}

}  // namespace
}  // namespace zb::profiler
