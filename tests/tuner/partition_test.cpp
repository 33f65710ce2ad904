// SPDX-License-Identifier: Apache-2.0
// Choosing the layer split with the schedule (partition.h, docs/partition.md).
#include "zbkit/tuner/partition.h"

#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <random>
#include <string>

#include "assert_ok.h"
#include "zbkit/schemas/json_io.h"

namespace zb::tuner {
namespace {

// A small LLM as torchtitan builds it: the embedding (a lookup: cheap, but its table and the
// optimizer's state are large), `body` equal transformer blocks, the norm and the head, whose
// matmul over a large vocabulary costs several blocks and whose logits dominate activations.
LayerProfile SmallLlm(int body) {
  LayerProfile profile;
  profile.comm = 100'000;  // 0.1 ms
  profile.layers.push_back({"tok_embeddings", 200'000, 0, 400'000, 1.0, 0.0, 12.0, 1.0});
  for (int i = 0; i < body; ++i) {
    profile.layers.push_back(
        {"layers." + std::to_string(i), 1'000'000, 1'100'000, 900'000, 4.0, 1.5, 3.0, 1.0});
  }
  profile.layers.push_back({"norm", 50'000, 60'000, 10'000, 0.5, 0.0, 0.01, 1.0});
  profile.layers.push_back({"output", 3'000'000, 3'200'000, 2'900'000, 16.0, 2.0, 12.0, 8.0});
  return profile;
}

TimeNs LargestStage(const LayerProfile& profile, const LayerSplit& split) {
  TimeNs largest = 0;
  for (const StageCost& stage : StageCostsOf(profile, split).stages)
    largest = std::max(largest, stage.f + stage.b + stage.w);
  return largest;
}

TEST(PartitionTest, ShapeFindsTheRepeatedBlocks) {
  const ModelShape llm = ShapeOf(SmallLlm(8));
  EXPECT_EQ(llm.head, 1);
  EXPECT_EQ(llm.body, 8);
  EXPECT_EQ(llm.tail, 2);
  LayerProfile plain;
  for (const char* name : {"0", "1", "relu", "fc"})
    plain.layers.push_back({name, 1, 0, 0, 0, 0, 0, 0});
  const ModelShape none = ShapeOf(plain);
  const auto layer = ParseRepeatedBlockName("model.layers.12");
  ASSERT_TRUE(layer.has_value());
  EXPECT_EQ(layer->prefix, "model.layers");
  EXPECT_EQ(layer->index, 12);
  for (const char* name : {"norm", "layers.", ".3", "layers.x", "layers.1a", "layers.1234567890"})
    EXPECT_FALSE(ParseRepeatedBlockName(name).has_value()) << name;
  EXPECT_EQ(none.head, 0);
  EXPECT_EQ(none.body, 4);
  EXPECT_EQ(none.tail, 0);
}

// torchtitan's own example (generate_llm_fqn_per_model_part's docstring): 2 stages, 3 layers,
// weights 2 and 2 -> [tok_embeddings, layers.0, layers.1], [layers.2, norm, output].
TEST(PartitionTest, TorchtitanSplitFollowsItsGenerator) {
  const ModelShape shape{1, 3, 2};
  auto split = TorchtitanSplit(shape, 2, 2, 2);
  ASSERT_TRUE(split.ok()) << split.status().message();
  EXPECT_EQ(*split, (LayerSplit{3, 3}));
  // The default (1, 1) on 8 layers and 4 stages: 10 effective layers, 3 3 2 2.
  auto even = TorchtitanSplit({1, 8, 2}, 4, 1, 1);
  ASSERT_TRUE(even.ok());
  EXPECT_EQ(*even, (LayerSplit{1 + 2, 3, 2, 1 + 2}));
  // torchtitan refuses a weight above the layers per stage.
  EXPECT_FALSE(TorchtitanSplit({1, 8, 2}, 4, 4, 1).ok());
}

// The dynamic programme against every split of small random models.
TEST(PartitionTest, MinMaxSplitIsExact) {
  std::mt19937 random(7);
  std::uniform_int_distribution<int> time(1, 50);
  for (int trial = 0; trial < 40; ++trial) {
    LayerProfile profile;
    const int n = 4 + trial % 6;
    for (int i = 0; i < n; ++i)
      profile.layers.push_back({"b" + std::to_string(i), time(random), time(random), time(random),
                                double(time(random)), 0, double(time(random)), 0});
    const int stages = 2 + trial % 3;
    if (stages > n) continue;
    const double cap = trial % 2 == 0 ? std::numeric_limits<double>::infinity() : 260.0;
    std::vector<int> in_flight;
    for (int s = 0; s < stages; ++s)
      in_flight.push_back(stages - s);
    // Brute force over every composition of n into `stages` positive parts.
    TimeNs brute = std::numeric_limits<TimeNs>::max();
    LayerSplit split(stages, 1);
    std::function<void(int, int)> walk = [&](int stage, int left) {
      if (stage == stages - 1) {
        split[stage] = left;
        int first = 0;
        for (int s = 0; s < stages; ++s) {
          const StageCost cost = StageCostOfLayers(profile, first, split[s]);
          const double held = StateOfLayers(profile, first, split[s]) + in_flight[s] * cost.m_b;
          if (held > cap) return;
          first += split[s];
        }
        brute = std::min(brute, LargestStage(profile, split));
        return;
      }
      for (int count = 1; count <= left - (stages - 1 - stage); ++count) {
        split[stage] = count;
        walk(stage + 1, left - count);
      }
    };
    walk(0, n);
    auto dp = MinMaxSplit(profile, stages, in_flight, cap);
    SCOPED_TRACE("trial " + std::to_string(trial));
    if (brute == std::numeric_limits<TimeNs>::max()) {
      EXPECT_FALSE(dp.ok());
      continue;
    }
    ASSERT_TRUE(dp.ok()) << dp.status().message();
    EXPECT_EQ(LargestStage(profile, *dp), brute);
  }
}

TEST(PartitionTest, CoTunedBeatsTheMinMaxSplitOnAnUnbalancedModel) {
  for (const JobLayout layout : {JobLayout{Placement::kLoop, 1}, JobLayout{Placement::kLoop, 2},
                                 JobLayout{Placement::kV, 2}}) {
    SCOPED_TRACE(JobLayoutName(layout));
    PartitionOptions options;
    options.ranks = 4;
    options.microbatches = 8;
    options.layout = layout;
    options.order_evaluations = 500;
    auto result = Partition(SmallLlm(16), options);
    ASSERT_TRUE(result.ok()) << result.status().message();
    ASSERT_EQ(result->splits.size(), 4u);
    const SplitEvaluation& co_tuned = result->splits.back();
    ASSERT_TRUE(co_tuned.status.ok()) << co_tuned.status.message();
    ASSERT_EQ(result->best, 3);
    for (const SplitEvaluation& row : result->splits) {
      ASSERT_TRUE(row.status.ok()) << row.name << ": " << row.status.message();
      int blocks = 0;
      for (int count : row.split)
        blocks += count;
      EXPECT_EQ(blocks, 19) << row.name;
      EXPECT_EQ(static_cast<int>(row.split.size()), 4 * layout.chunks) << row.name;
      EXPECT_LE(co_tuned.iteration, row.iteration) << row.name;
    }
    EXPECT_LT(co_tuned.iteration, result->splits[2].iteration);  // strictly below min-max
  }
}

// Under a cap the rows that run keep everything a rank holds (state + activations) within it; the
// rows that cannot say why, and the co-tuned split is never slower than one that runs.
TEST(PartitionTest, EveryRowHoldsTheCapOrSaysWhy) {
  PartitionOptions options;
  options.ranks = 4;
  options.microbatches = 8;
  options.order_evaluations = 200;
  options.cap = 48;
  auto result = Partition(SmallLlm(16), options);
  ASSERT_TRUE(result.ok()) << result.status().message();
  int infeasible = 0;
  const SplitEvaluation& co_tuned = result->splits.back();
  ASSERT_TRUE(co_tuned.status.ok()) << co_tuned.status.message();
  for (const SplitEvaluation& row : result->splits) {
    if (!row.status.ok()) {
      ++infeasible;
      EXPECT_FALSE(row.status.message().empty()) << row.name;
      continue;
    }
    ASSERT_EQ(row.peak.size(), 4u);
    for (double peak : row.peak)
      EXPECT_LE(peak, options.cap + 1e-6) << row.name;
    EXPECT_LE(co_tuned.iteration, row.iteration) << row.name;
  }
  // The cap binds: without it the co-tuned split is faster, or some compared split cannot run.
  options.cap = std::numeric_limits<double>::infinity();
  auto free = Partition(SmallLlm(16), options);
  ASSERT_TRUE(free.ok());
  EXPECT_TRUE(infeasible > 0 || free->splits.back().iteration < co_tuned.iteration);
}

TEST(PartitionTest, StateAboveTheCapIsRefusedNamingTheRank) {
  PartitionOptions options;
  options.ranks = 4;
  options.microbatches = 8;
  options.order_evaluations = 0;
  options.cap = 10;  // the embedding's and the head's state alone are 12
  auto result = Partition(SmallLlm(16), options);
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(result->best, -1);
  for (const SplitEvaluation& row : result->splits) {
    ASSERT_FALSE(row.status.ok()) << row.name;
  }
  EXPECT_NE(result->splits[0].status.message().find(
                "rank 0's weights, gradients and optimizer state (24) leave nothing of the cap 10"),
            std::string::npos)
      << result->splits[0].status.message();
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// The per-layer models of docs/memory-plan.md §4 (scripts/make_memory_plan_models.py).
LayerProfile MemoryPlanModel(const std::string& name) {
  auto profile = ReadLayersFile(std::string(ZBKIT_TUNER_DATA_DIR) + "/memory-plan/" + name);
  EXPECT_TRUE(profile.ok()) << profile.status().message();
  return profile.ok() ? *profile : LayerProfile{};
}

const SplitEvaluation& Row(const PartitionResult& result, const std::string& name) {
  for (const SplitEvaluation& row : result.splits) {
    if (row.name == name) return row;
  }
  ADD_FAILURE() << "no row " << name;
  return result.splits.back();
}

// The memory plan's rows: the uniform modes, each with its own co-tuned split, and the co-tuned
// plan, never slower than any row, every peak within the cap, every block given a mode it has.
TEST(PartitionTest, MemoryPlanIsNeverSlowerThanAUniformModeAndHoldsTheCap) {
  LayerProfile profile = SmallLlm(16);
  for (LayerCost& layer : profile.layers)
    layer.send = 1.0;
  ASSERT_EQ(DeriveFullCheckpointing(profile), 18);
  PartitionOptions options;
  options.ranks = 4;
  options.microbatches = 8;
  options.order_evaluations = 0;
  options.cap = 48;
  options.plan_modes = {"none", "full"};
  ZB_ASSERT_OK_AND_ASSIGN(PartitionResult result, Partition(profile, options));
  ASSERT_EQ(result.splits.size(), 6u);
  const SplitEvaluation& co_tuned = result.splits.back();
  ASSERT_TRUE(co_tuned.status.ok()) << co_tuned.status.message();
  EXPECT_EQ(co_tuned.name, "co-tuned");
  const SplitEvaluation& full = Row(result, "uniform-full");
  ASSERT_TRUE(full.status.ok()) << full.status.message();
  EXPECT_EQ(full.checkpointing.front(), "none");  // the embedding has no input to keep
  for (size_t i = 1; i < full.checkpointing.size(); ++i)
    EXPECT_EQ(full.checkpointing[i], "full") << i;
  for (const SplitEvaluation& row : result.splits) {
    ASSERT_EQ(row.checkpointing.size(), profile.layers.size()) << row.name;
    if (!row.status.ok()) continue;
    EXPECT_LE(co_tuned.iteration, row.iteration) << row.name;
    for (double peak : row.peak)
      EXPECT_LE(peak, options.cap + 1e-6) << row.name;
  }
  // The plan gives every block a mode it has figures for.
  ZB_ASSERT_OK_AND_ASSIGN(LayerProfile planned, WithCheckpointing(profile, co_tuned.checkpointing));
  EXPECT_EQ(AsRunPlan(planned), co_tuned.checkpointing);

  // Without a cap nothing is checkpointed: the fastest mode of every block.
  options.cap = std::numeric_limits<double>::infinity();
  ZB_ASSERT_OK_AND_ASSIGN(PartitionResult free, Partition(profile, options));
  EXPECT_EQ(free.splits.back().checkpointing, CheckpointingPlan(profile.layers.size(), "none"));
  EXPECT_EQ(free.splits.back().iteration, Row(free, "uniform-none").iteration);

  options.plan_modes = {"selective"};
  auto bad = Partition(profile, options);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kUsage);
}

// docs/memory-plan.md §4: where memory binds, the co-tuned plan at least 10 % faster than the best
// uniform mode of none and full (each with its co-tuned split); where it does not, the same.
TEST(PartitionTest, MemoryPlanGainsWhereMemoryBinds) {
  struct Case {
    const char* model;
    int ranks;
    int microbatches;
    double cap_gib;
    double gain;  // at least, against the best uniform mode
  };
  for (const Case& c :
       {Case{"llama70b-4k.json", 16, 32, 80, 0.10}, Case{"llama8b-8k.json", 8, 16, 32, 0.10},
        Case{"uniform-32.json", 8, 16, 0, 0.0}}) {
    SCOPED_TRACE(c.model);
    PartitionOptions options;
    options.ranks = c.ranks;
    options.microbatches = c.microbatches;
    options.order_evaluations = 0;
    options.split_evaluations = 1000;
    options.cap = c.cap_gib > 0 ? c.cap_gib * kGiB : std::numeric_limits<double>::infinity();
    options.plan_modes = {"none", "full"};
    ZB_ASSERT_OK_AND_ASSIGN(PartitionResult result, Partition(MemoryPlanModel(c.model), options));
    TimeNs best_uniform = std::numeric_limits<TimeNs>::max();
    for (const char* name : {"uniform-none", "uniform-full"}) {
      const SplitEvaluation& row = Row(result, name);
      if (row.status.ok()) best_uniform = std::min(best_uniform, row.iteration);
    }
    const SplitEvaluation& co_tuned = result.splits.back();
    ASSERT_TRUE(co_tuned.status.ok()) << co_tuned.status.message();
    const double gain = 1.0 - static_cast<double>(co_tuned.iteration) / best_uniform;
    EXPECT_GE(gain, c.gain) << co_tuned.iteration << " against " << best_uniform;
    for (double peak : co_tuned.peak)
      EXPECT_LE(peak, options.cap);
  }
}

// A split to keep (--split): only the plan and the order are chosen, every row on that split.
TEST(PartitionTest, AGivenSplitGetsItsPlanAndOrderOnly) {
  PartitionOptions options;
  options.ranks = 8;
  options.microbatches = 16;
  options.order_evaluations = 0;
  options.cap = 32 * kGiB;
  options.plan_modes = {"none", "full"};
  options.fixed_split = {5, 4, 4, 4, 4, 5, 4, 5};
  ZB_ASSERT_OK_AND_ASSIGN(PartitionResult result,
                          Partition(MemoryPlanModel("llama8b-8k.json"), options));
  std::vector<std::string> names;
  for (const SplitEvaluation& row : result.splits) {
    names.push_back(row.name);
    EXPECT_EQ(row.split, options.fixed_split) << row.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"given", "uniform-none", "uniform-full", "co-tuned"}));
  const SplitEvaluation& co_tuned = result.splits.back();
  ASSERT_TRUE(co_tuned.status.ok());
  for (const SplitEvaluation& row : result.splits) {
    if (row.status.ok()) EXPECT_LE(co_tuned.iteration, row.iteration) << row.name;
  }
  EXPECT_LT(co_tuned.iteration, Row(result, "uniform-full").iteration);
  options.fixed_split = {5, 4};
  auto bad = Partition(MemoryPlanModel("llama8b-8k.json"), options);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kUsage);
  EXPECT_NE(bad.status().message().find("the layout has 8 stages"), std::string::npos);
}

TEST(PartitionTest, RefusesFewerBlocksThanStages) {
  PartitionOptions options;
  options.ranks = 4;
  options.microbatches = 8;
  options.layout = {Placement::kV, 2};
  auto result = Partition(SmallLlm(3), options);  // 6 blocks, 8 stages
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kUsage);
  EXPECT_NE(result.status().message().find("6 blocks cannot make 8 stages"), std::string::npos)
      << result.status().message();
}

}  // namespace
}  // namespace zb::tuner
