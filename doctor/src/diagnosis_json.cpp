// SPDX-License-Identifier: Apache-2.0
// zb-diagnosis/1 (docs/formats.md §7): a Diagnosis as JSON, and read back (the GUI reads what
// zb replay / zb profile kept as <run dir>/diagnosis.json).
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "zbkit/doctor/diagnosis.h"

namespace zb::doctor {

std::string DiagnosisJson(const Diagnosis& d) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const RankFinding& f : d.ranks) {
    nlohmann::json recent = nlohmann::json::array();
    for (const RecentOp& op : f.recent) {
      recent.push_back({{"op", op.op},
                        {"step", op.iteration},
                        {"op_index", op.op_index},
                        {"began_s", op.began_s},
                        {"ms", op.ms >= 0 ? nlohmann::json(op.ms) : nullptr}});
    }
    ranks.push_back({{"rank", f.rank},
                     {"pid", f.pid},
                     {"host", f.host},
                     {"process", ProcessStateName(f.process)},
                     {"phase", PhaseName(f.phase)},
                     {"step", f.iteration},
                     {"op_index", f.op_index},
                     {"op", f.op},
                     {"for_s", f.for_s},
                     {"waits_for", f.waits_for >= 0 ? nlohmann::json(f.waits_for) : nullptr},
                     {"message", f.message},
                     {"producer", f.producer},
                     {"producer_index", f.producer_index},
                     {"recent", recent}});
  }
  nlohmann::json doc = {
      {"format", "zb-diagnosis/1"},
      {"run_dir", d.directory},
      {"job", d.job},
      {"world", d.world},
      {"state", d.state},
      {"quiet_s", d.quiet_s},
      {"culprit",
       {{"kind", CulpritName(d.culprit)},
        {"rank", d.culprit_rank >= 0 ? nlohmann::json(d.culprit_rank) : nullptr},
        {"headline", d.headline}}},
      {"chain", d.chain},
      {"advice", d.advice},
      {"ended_by", d.ended_by.empty() ? nlohmann::json(nullptr) : nlohmann::json(d.ended_by)},
      {"ranks", ranks},
      {"problems", d.problems},
      {"flight_recorder", d.flight_recorder},
  };
  // Names come from records and dumps a rank may have torn: bytes that are not UTF-8 are replaced,
  // not thrown at the reader.
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

namespace {

// The enum value whose name (CulpritName, PhaseName, ...) is `name`; `fallback` for none of the
// first `count` values.
template <typename Enum, typename NameOf>
Enum FromName(const std::string& name, int count, NameOf name_of, Enum fallback) {
  for (int i = 0; i < count; ++i) {
    if (name == name_of(static_cast<Enum>(i))) return static_cast<Enum>(i);
  }
  return fallback;
}

}  // namespace

Expected<Diagnosis> ReadDiagnosisJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound(path + ": cannot open");
  nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return InvalidInput(path + ": not JSON");
  if (doc.value("format", "") != "zb-diagnosis/1") {
    return InvalidInput(path + ": format: not zb-diagnosis/1");
  }
  try {
    Diagnosis d;
    d.directory = doc.at("run_dir").get<std::string>();
    d.job = doc.at("job").get<std::string>();
    d.world = doc.at("world").get<int>();
    d.state = doc.at("state").get<std::string>();
    d.quiet_s = doc.at("quiet_s").get<double>();
    const auto& culprit = doc.at("culprit");
    d.culprit = FromName(culprit.at("kind").get<std::string>(),
                         static_cast<int>(Culprit::kFinished) + 1, CulpritName, Culprit::kNone);
    d.culprit_rank = culprit.at("rank").is_null() ? -1 : culprit.at("rank").get<int>();
    d.headline = culprit.at("headline").get<std::string>();
    d.chain = doc.at("chain").get<std::vector<std::string>>();
    d.advice = doc.at("advice").get<std::string>();
    if (doc.contains("ended_by") && doc.at("ended_by").is_string()) {
      d.ended_by = doc.at("ended_by").get<std::string>();
    }
    d.problems = doc.at("problems").get<std::vector<std::string>>();
    d.flight_recorder = doc.value("flight_recorder", std::vector<std::string>{});
    for (const auto& r : doc.at("ranks")) {
      RankFinding f;
      f.rank = r.at("rank").get<int>();
      f.pid = r.at("pid").get<int>();
      f.host = r.value("host", "");
      f.process =
          FromName(r.at("process").get<std::string>(), static_cast<int>(ProcessState::kUnknown) + 1,
                   ProcessStateName, ProcessState::kUnknown);
      f.phase = FromName(r.at("phase").get<std::string>(), static_cast<int>(Phase::kRaised) + 1,
                         PhaseName, Phase::kStarting);
      f.iteration = r.at("step").get<int64_t>();
      f.op_index = r.at("op_index").get<int64_t>();
      f.op = r.at("op").get<std::string>();
      f.for_s = r.at("for_s").get<double>();
      f.waits_for = r.at("waits_for").is_null() ? -1 : r.at("waits_for").get<int>();
      f.message = r.at("message").get<std::string>();
      f.producer = r.at("producer").get<std::string>();
      f.producer_index = r.value("producer_index", -1);
      for (const auto& op : r.value("recent", nlohmann::json::array())) {
        f.recent.push_back({op.at("op").get<std::string>(), op.at("step").get<int64_t>(),
                            op.at("op_index").get<int64_t>(), op.at("began_s").get<double>(),
                            op.at("ms").is_null() ? -1.0 : op.at("ms").get<double>()});
      }
      d.ranks.push_back(std::move(f));
    }
    return d;
  } catch (const nlohmann::json::exception& error) {
    return InvalidInput(path + ": " + error.what());
  }
}

}  // namespace zb::doctor
