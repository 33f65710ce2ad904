// SPDX-License-Identifier: Apache-2.0
// zb-layers/1 (docs/formats.md §6) and the per-layer cost helpers (layers.h).
#include "zbkit/schemas/layers.h"

#include <gtest/gtest.h>

#include "assert_ok.h"
#include "zbkit/schemas/json_io.h"

namespace zb {
namespace {

LayerProfile ThreeBlocks() {
  LayerProfile profile;
  profile.comm = 250'000;
  profile.layers = {{"tok_embeddings", 100'000, 0, 300'000, 1024, 0, 4.5e6, 2048},
                    {"layers.0", 1'000'000, 1'200'000, 800'000, 8192, 4096, 1.2e6, 2048},
                    {"output", 2'000'000, 2'500'000, 1'500'000, 65536, 1024, 9e6, 0}};
  return profile;
}

TEST(LayersTest, RoundTripsThroughItsFormat) {
  const LayerProfile profile = ThreeBlocks();
  const std::string text = LayersToJson(profile);
  auto back = ParseLayersJson(text, "layers.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, profile);
  // One block per line.
  EXPECT_NE(text.find("\n  {\"B\":1.2,"), std::string::npos) << text;
  // A block's activation checkpointing rides along where known (and is left out where not).
  LayerProfile checkpointed = profile;
  checkpointed.layers[1].checkpointing = "op";
  checkpointed.layers[1].m_w = 3 * checkpointed.layers[1].m_b;
  const std::string with = LayersToJson(checkpointed);
  EXPECT_EQ(text.find("checkpointing"), std::string::npos) << text;
  auto again = ParseLayersJson(with, "layers.json");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(*again, checkpointed);
}

// A block measured without checkpointing and with it: the memory plan's input.
LayerProfile WithOptions() {
  LayerProfile profile = ThreeBlocks();
  LayerCost& block = profile.layers[1];
  block.checkpointing = "none";
  block.options = {{"full", 1'000'000, 2'200'000, 800'000, 2048, 4096, true},
                   {"op", 1'000'000, 1'500'000, 800'000, 3000, 4096, false}};
  return profile;
}

TEST(LayersTest, CheckpointingOptionsRoundTripAndSwapInAPlan) {
  const LayerProfile profile = WithOptions();
  const std::string text = LayersToJson(profile);
  EXPECT_NE(text.find("\"source\":\"derived\""), std::string::npos) << text;
  auto back = ParseLayersJson(text, "layers.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, profile);
  EXPECT_EQ(profile.layers[1].modes(), (std::vector<std::string>{"none", "full", "op"}));
  EXPECT_EQ(profile.layers[0].modes(), (std::vector<std::string>{"none"}));

  // The plan's figures are the option's; the block's own become an option; back again.
  const CheckpointingPlan plan{"none", "full", "none"};
  ZB_ASSERT_OK_AND_ASSIGN(LayerProfile planned, WithCheckpointing(profile, plan));
  EXPECT_EQ(planned.layers[1].checkpointing, "full");
  EXPECT_EQ(planned.layers[1].b, 2'200'000);
  EXPECT_EQ(planned.layers[1].m_b, 2048);
  EXPECT_EQ(planned.layers[1].modes(), (std::vector<std::string>{"full", "none", "op"}));
  EXPECT_EQ(StageCostOfLayers(planned, 0, 3).m_b, 1024 + 2048 + 65536);
  EXPECT_EQ(AsRunPlan(planned), plan);
  ZB_ASSERT_OK_AND_ASSIGN(LayerProfile derived, WithCheckpointing(planned, {"none", "op", "none"}));
  EXPECT_FALSE(derived.layers[1].own_measured);
  ZB_ASSERT_OK_AND_ASSIGN(LayerProfile again, WithCheckpointing(derived, AsRunPlan(profile)));
  EXPECT_EQ(again.layers[1].f, profile.layers[1].f);
  EXPECT_EQ(again.layers[1].b, profile.layers[1].b);
  EXPECT_TRUE(again.layers[1].own_measured);

  // A mode the block was not measured in is refused naming it.
  auto missing = WithCheckpointing(profile, {"full", "none", "none"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            "block tok_embeddings: no costs under checkpointing \"full\" (it has none)");
  EXPECT_FALSE(WithCheckpointing(profile, {"none"}).ok());
}

TEST(LayersTest, DerivedFullCheckpointingFollowsTheRule) {
  LayerProfile profile = ThreeBlocks();
  EXPECT_EQ(DeriveFullCheckpointing(profile), 2);  // not the first block: its input is unknown
  EXPECT_TRUE(profile.layers[0].options.empty());
  const CheckpointingOption& full = profile.layers[1].options.at(0);
  EXPECT_EQ(full.mode, "full");
  EXPECT_FALSE(full.measured);
  EXPECT_EQ(full.f, profile.layers[1].f);
  EXPECT_EQ(full.b, profile.layers[1].b + profile.layers[1].f);  // B recomputes the forward
  EXPECT_EQ(full.w, profile.layers[1].w);
  EXPECT_EQ(full.m_b, profile.layers[0].send);  // F keeps the block's input
  EXPECT_EQ(full.m_w, profile.layers[1].m_w);
  EXPECT_EQ(DeriveFullCheckpointing(profile), 0);  // it has one now
  // A block that runs checkpointed gets none derived.
  LayerProfile checkpointed = ThreeBlocks();
  checkpointed.layers[1].checkpointing = "full";
  checkpointed.layers[2].checkpointing = "op";
  EXPECT_EQ(DeriveFullCheckpointing(checkpointed), 0);
}

TEST(LayersTest, StageCostsAreTheSumsOfTheirBlocks) {
  const LayerProfile profile = ThreeBlocks();
  const StageCost last_two = StageCostOfLayers(profile, 1, 2);
  EXPECT_EQ(last_two.f, 3'000'000);
  EXPECT_EQ(last_two.b, 3'700'000);
  EXPECT_EQ(last_two.w, 2'300'000);
  EXPECT_EQ(last_two.m_b, 8192 + 65536);
  EXPECT_EQ(last_two.m_w, 4096 + 1024);
  EXPECT_EQ(StateOfLayers(profile, 0, 3), 4.5e6 + 1.2e6 + 9e6);
}

TEST(LayersTest, EvenShareOfStagesAddsUpAndSaysSo) {
  CostProfile stages;
  stages.comm = 7;
  stages.stages = {{10, 11, 7, 3, 1}, {20, 22, 14, 6, 2}};
  auto shared = EvenShareOfStages(stages, {3, 2});
  ASSERT_TRUE(shared.ok()) << shared.status().message();
  EXPECT_EQ(shared->source, LayerSource::kEvenShareOfStages);
  ASSERT_EQ(shared->num_layers(), 5);
  EXPECT_EQ(shared->layers[3].name, "stage1.0");
  EXPECT_EQ(StageCostOfLayers(*shared, 0, 3), stages.stages[0]);
  EXPECT_EQ(StageCostOfLayers(*shared, 3, 2), stages.stages[1]);
  EXPECT_FALSE(EvenShareOfStages(stages, {3}).ok());
  EXPECT_FALSE(EvenShareOfStages(stages, {3, 0}).ok());
}

TEST(LayersTest, BadFilesAreRefusedNamingTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"format": "zb-costs/1", "layers": []})", "format: expected \"zb-layers/1\""},
      {R"({"format": "zb-layers/1", "layers": []})", "layers: must not be empty"},
      {R"({"format": "zb-layers/1", "layers": [{"name": "a", "F": 1, "B": 1, "W": 1,
          "M_B": 1, "M_W": -2}]})",
       "layers[0].M_W: must be a finite number >= 0"},
      {R"({"format": "zb-layers/1", "layers": [{"name": "a", "F": 1, "B": 1, "W": 1,
          "M_B": 1, "M_W": 2, "checkpointing": "layer"}]})",
       "layers[0].checkpointing: must be one of none, full, op, reentrant, got \"layer\""},
      {R"({"format": "zb-layers/1", "layers": [{"name": "a", "F": 1, "B": 1, "W": 1, "M_B": 1,
          "M_W": 0}, {"name": "a", "F": 1, "B": 1, "W": 1, "M_B": 1, "M_W": 0}]})",
       "layers[1].name: \"a\" appears twice"},
      {R"({"format": "zb-layers/1", "layers": [{"name": "a", "F": -1, "B": 1, "W": 1,
          "M_B": 1, "M_W": 0}]})",
       "layers[0].F: must be a finite number >= 0"},
      {R"({"format": "zb-layers/1", "layers": [{"name": "a", "F": 0, "B": 1, "W": 1,
          "M_B": 1, "M_W": 0}]})",
       "layers: the forwards add up to 0 ms"},
      {R"({"format": "zb-layers/1", "source": "guessed", "layers": []})", "source: must be"},
      {R"({"format": "zb-layers/1", "layers": [{"name": "a", "F": 1, "B": 1, "W": 1, "M_B": 1,
          "M_W": 0, "options": [{"checkpointing": "reentrant", "F": 1, "B": 2, "W": 1,
          "M_B": 0, "M_W": 0}]}]})",
       "layers[0].options[0].checkpointing: must be one of none, full, op, got \"reentrant\""},
      {R"({"format": "zb-layers/1", "layers": [{"name": "a", "F": 1, "B": 1, "W": 1, "M_B": 1,
          "M_W": 0, "options": [{"checkpointing": "none", "F": 1, "B": 2, "W": 1,
          "M_B": 0, "M_W": 0}]}]})",
       "layers[0].options[0].checkpointing: \"none\" is the block's own mode or appears twice"},
      {R"({"format": "zb-layers/1", "layers": [{"name": "a", "F": 1, "B": 1, "W": 1, "M_B": 1,
          "M_W": 0, "options": [{"checkpointing": "full", "F": 1, "B": 2, "W": 1,
          "M_B": 0, "M_W": 0, "source": "guess"}]}]})",
       "layers[0].options[0].source: must be \"measured\" or \"derived\""},
      {R"({"format": "zb-layers/1", "layers": [{"name": "a", "F": 1, "B": 1, "W": 1, "M_B": 1,
          "M_W": 0, "options": [{"checkpointing": "full", "F": 1, "B": 2, "W": 1,
          "M_B": 0}]}]})",
       "layers[0].options[0].M_W: missing field"},
  };
  for (const auto& [text, fragment] : cases) {
    auto parsed = ParseLayersJson(text, "bad.json");
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_NE(parsed.status().message().find(std::string("bad.json: ") + fragment),
              std::string::npos)
        << parsed.status().message();
  }
}

}  // namespace
}  // namespace zb
