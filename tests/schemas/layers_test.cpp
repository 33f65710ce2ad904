// SPDX-License-Identifier: Apache-2.0
// zb-layers/1 (docs/formats.md §6) and the per-layer cost helpers (layers.h).
#include "zbkit/schemas/layers.h"

#include <gtest/gtest.h>

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
