// SPDX-License-Identifier: Apache-2.0
// Test helpers shared by the tuner tests: the reference golden vectors and compact order strings.
#ifndef ZBKIT_TESTS_SUPPORT_GOLDEN_H_
#define ZBKIT_TESTS_SUPPORT_GOLDEN_H_

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "zbkit/model/types.h"

namespace zb::testing {

// ../shared/reference/paper_tables.json, parsed once.
inline const nlohmann::json& PaperTables() {
  static const nlohmann::json tables = [] {
    std::ifstream in(std::string(ZBKIT_SHARED_DIR) + "/reference/paper_tables.json");
    return nlohmann::json::parse(in);
  }();
  return tables;
}

inline const nlohmann::json& GoldenVectors() {
  return PaperTables().at("golden_vectors_repo_algorithms");
}

// p identical stages with integer costs (the golden vectors' unit-free numbers used as ns).
inline CostProfile UniformCosts(int stages, TimeNs f, TimeNs b, TimeNs w, TimeNs comm, double m_b,
                                double m_w) {
  CostProfile costs;
  costs.comm = comm;
  costs.stages.assign(stages, StageCost{f, b, w, m_b, m_w});
  return costs;
}

// "F0 F1 B0 W0 ..." for one loop-placement rank, the notation of schedules.md §11.1.
inline std::string LoopOrderString(const RankProgram& program) {
  std::ostringstream out;
  for (size_t i = 0; i < program.ops.size(); ++i) {
    out << (i ? " " : "") << OpKindName(program.ops[i].kind) << program.ops[i].microbatch;
  }
  return out.str();
}

}  // namespace zb::testing

#endif  // ZBKIT_TESTS_SUPPORT_GOLDEN_H_
