// SPDX-License-Identifier: Apache-2.0
// Merging the ranks' per-block files into per-layer costs (block_costs.h).
#include "zbkit/profiler/block_costs.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "zbkit/schemas/json_io.h"

namespace zb::profiler {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool EndsWith(const std::string& text, std::string_view suffix) {
  return text.size() > suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// What the ranks' files hold: per stage its blocks (zb-layers/1 entries, as the hook wrote them)
// and, for the last stage, the loss measured apart.
struct RankFiles {
  std::map<int, json> stages;
  std::map<int, json> losses;
  std::map<int, int> replicas;  // stage -> files beyond the first that held it
};

// The block names of one stage's entry, in order.
std::vector<std::string> NamesOf(const json& blocks);

// One rank's file into `files`.
Status ReadRankFile(const fs::path& path, RankFiles& files) {
  std::map<int, json>& stages = files.stages;
  const std::string where = path.string();
  std::ifstream in(path);
  if (!in) return IoError(where + ": cannot read");
  std::stringstream text;
  text << in.rdbuf();
  const json doc = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return InvalidInput(where + ": not valid JSON (torn or truncated?)");
  if (!doc.is_object() || !doc.contains("format") || !doc["format"].is_string() ||
      doc["format"].get<std::string>() != kBlockCostsFormat) {
    return InvalidInput(where + ": format: expected \"" + std::string(kBlockCostsFormat) + "\"");
  }
  if (!doc.contains("stages") || !doc["stages"].is_array()) {
    return InvalidInput(where + ": stages: must be an array");
  }
  for (const json& stage : doc["stages"]) {
    if (!stage.is_object() || !stage.contains("stage") || !stage["stage"].is_number_integer() ||
        !stage.contains("blocks") || !stage["blocks"].is_array()) {
      return InvalidInput(where + ": stages[]: each needs an integer stage and a blocks array");
    }
    const int index = stage["stage"].get<int>();
    if (stages.count(index)) {
      // Data-parallel replicas of one pipeline rank measure the same blocks: the first file
      // read stands for them; blocks that differ are two pipelines' stages, not replicas.
      if (NamesOf(stages[index]) != NamesOf(stage["blocks"])) {
        return InvalidInput(where + ": stage " + std::to_string(index) +
                            " is in two files with other blocks (replicas of one pipeline rank "
                            "hold the same blocks)");
      }
      ++files.replicas[index];
      continue;
    }
    stages[index] = stage["blocks"];
    if (stage.contains("loss")) files.losses[index] = stage["loss"];
  }
  return Status::Ok();
}

// A block's name, "" when it has none (ParseLayersJson then says so): the files are the job's,
// read without trusting them.
std::string NameOf(const json& block) {
  return block.is_object() && block.contains("name") && block["name"].is_string()
             ? block["name"].get<std::string>()
             : std::string();
}

std::vector<std::string> NamesOf(const json& blocks) {
  std::vector<std::string> names;
  for (const json& block : blocks)
    names.push_back(NameOf(block));
  return names;
}

// The loss runs on the last stage, after its last block, whatever the split: its F, B and saved
// activations are counted with that block (the head), so that a split's last stage costs what the
// schedule measures. A malformed loss entry: left out, said.
std::string FoldLoss(const json& loss, json& last_block) {
  for (const char* key : {"F", "B", "M_B"}) {
    if (!loss.is_object() || !loss.contains(key) || !loss[key].is_number() ||
        loss[key].get<double>() < 0) {
      return std::string("the loss's measurement left out: ") + key + " must be a number >= 0";
    }
  }
  if (!last_block.is_object()) return "the loss's measurement left out: no last block";
  // The block's own figures and those of every other checkpointing mode it was measured in
  // (docs/memory-plan.md §1): the loss runs after it in each.
  std::vector<json*> figures{&last_block};
  if (last_block.contains("options") && last_block["options"].is_array()) {
    for (json& option : last_block["options"])
      figures.push_back(&option);
  }
  for (json* costs : figures) {
    for (const char* key : {"F", "B", "M_B"}) {
      if (costs->is_object() && costs->contains(key) && (*costs)[key].is_number()) {
        (*costs)[key] = (*costs)[key].get<double>() + loss[key].get<double>();
      }
    }
  }
  char text[160];
  std::snprintf(text, sizeof(text), "the loss (F %.3f ms, B %.3f ms, M_B %.0f) is counted in ",
                loss["F"].get<double>(), loss["B"].get<double>(), loss["M_B"].get<double>());
  return text + NameOf(last_block) +
         ", the last stage's last block (the loss runs after it, whatever the split)";
}

// "stage 0 94/97 %, stage 1 ...": the blocks' share of each stage's F and backward (the fused BW
// where the profile measured it, else B + W).
std::string Coverage(const CostReport& report, const LayerProfile& layers,
                     const std::vector<int>& stage_of) {
  std::vector<double> f(report.num_stages, 0), bw(report.num_stages, 0);
  for (size_t i = 0; i < layers.layers.size(); ++i) {
    f[stage_of[i]] += static_cast<double>(layers.layers[i].f);
    bw[stage_of[i]] += static_cast<double>(layers.layers[i].b + layers.layers[i].w);
  }
  auto percent = [](double part, TimeNs whole) {
    return whole > 0 ? std::to_string(static_cast<int>(100.0 * part / whole + 0.5)) : "-";
  };
  std::string text;
  for (const StageStats& stats : report.stages) {
    const TimeNs backward =
        stats.bw.samples > 0 ? stats.bw.median : stats.b.median + stats.w.median;
    text += (text.empty() ? "stage " : ", stage ") + std::to_string(stats.stage) + " " +
            percent(f[stats.stage], stats.f.median) + "/" + percent(bw[stats.stage], backward) +
            " %";
  }
  return text;
}

}  // namespace

bool IsBlockCostsFileName(const std::string& name) {
  return name.rfind("rank", 0) == 0 && EndsWith(name, ".blocks.json");
}

BlockCosts ReadBlockCosts(const std::vector<std::string>& dirs, const CostReport& report,
                          TimeNs comm) {
  const int num_stages = report.num_stages;
  BlockCosts result;
  RankFiles files;
  std::map<int, json>& stages = files.stages;
  bool any = false;
  std::vector<fs::path> paths;
  for (const std::string& dir : dirs) {
    std::error_code error;
    for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
      if (IsBlockCostsFileName(it->path().filename().string())) paths.push_back(it->path());
    }
  }
  // In rank order, so that the lowest rank's file stands for its replicas whatever the
  // directory's order.
  std::sort(paths.begin(), paths.end(), [](const fs::path& a, const fs::path& b) {
    const std::string x = a.filename().string(), y = b.filename().string();
    return x.size() != y.size() ? x.size() < y.size() : x < y;
  });
  for (const fs::path& path : paths) {
    any = true;
    Status read = ReadRankFile(path, files);
    if (!read.ok()) {
      result.notes.push_back("per-block costs left out: " + read.message());
      return result;
    }
  }
  if (!any) return result;  // a job the hook did not measure per block: nothing to say
  if (!files.replicas.empty()) {
    result.notes.push_back(
        "per-block costs: data-parallel replicas of a stage measured the "
        "same blocks; the lowest rank's measurement is used");
  }
  std::vector<json> blocks;
  std::vector<int> stage_of;
  for (int s = 0; s < num_stages; ++s) {
    auto found = stages.find(s);
    if (found == stages.end() || found->second.empty()) {
      result.notes.push_back("per-block costs left out: stage " + std::to_string(s) +
                             " has no measured blocks (rank<R>.blocks.json)");
      return result;
    }
    for (const json& block : found->second) {
      blocks.push_back(block);
      stage_of.push_back(s);
    }
  }
  std::set<std::string> names, shared;
  for (const json& block : blocks) {
    const std::string name = NameOf(block);
    if (!names.insert(name).second) shared.insert(name);
  }
  if (!shared.empty()) {
    for (size_t i = 0; i < blocks.size(); ++i) {
      if (blocks[i].is_object() && blocks[i]["name"].is_string()) {
        blocks[i]["name"] =
            "stage" + std::to_string(stage_of[i]) + "." + blocks[i]["name"].get<std::string>();
      }
    }
    result.notes.push_back("per-block names are the stage modules', not the model's (\"" +
                           *shared.begin() +
                           "\" is in two stages): they are written stage<S>.<name>");
  }
  if (auto loss = files.losses.find(num_stages - 1); loss != files.losses.end()) {
    result.notes.push_back(FoldLoss(loss->second, blocks.back()));
  }
  const json doc = {{"format", kLayersFormat},
                    {"comm", NsToMs(comm)},
                    {"source", LayerSourceName(LayerSource::kMeasured)},
                    {"layers", blocks}};
  auto layers = ParseLayersJson(doc.dump(), "rank<R>.blocks.json");
  if (!layers.ok()) {
    result.notes.push_back("per-block costs left out: " + layers.status().message());
    return result;
  }
  layers->comm = comm;  // exactly the profile's, not its round trip through ms
  result.notes.push_back("per-block costs: " + std::to_string(layers->num_layers()) +
                         " blocks; their F and backward are this share of each stage's, measured "
                         "in the schedule: " +
                         Coverage(report, *layers, stage_of));
  result.layers = std::move(*layers);
  return result;
}

}  // namespace zb::profiler
