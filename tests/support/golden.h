// SPDX-License-Identifier: Apache-2.0
// Test helpers shared by the tuner tests: the reference golden vectors and compact order strings.
#ifndef ZBKIT_TESTS_SUPPORT_GOLDEN_H_
#define ZBKIT_TESTS_SUPPORT_GOLDEN_H_

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "zbkit/schemas/types.h"

namespace zb::testing {

// tuner/data/paper_tables.json (the paper's tables and the reference golden vectors,
// docs/schedules.md §8), parsed once; a missing or broken file fails the test that asked, not
// silently.
inline const nlohmann::json& PaperTables() {
  static const nlohmann::json tables = [] {
    std::ifstream in(ZBKIT_PAPER_TABLES);
    EXPECT_TRUE(in.good()) << "cannot open " << ZBKIT_PAPER_TABLES;
    nlohmann::json all = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    EXPECT_TRUE(all.is_object()) << ZBKIT_PAPER_TABLES << " does not parse";
    return all.is_object() ? all : nlohmann::json::object();
  }();
  return tables;
}

inline const nlohmann::json& GoldenVectors() {
  static const nlohmann::json empty = nlohmann::json::object();
  const auto& tables = PaperTables();
  return tables.contains("golden_vectors_repo_algorithms")
             ? tables["golden_vectors_repo_algorithms"]
             : empty;
}

// p identical stages with integer costs (the golden vectors' unit-free numbers used as ns).
inline CostProfile UniformCosts(int stages, TimeNs f, TimeNs b, TimeNs w, TimeNs comm, double m_b,
                                double m_w) {
  CostProfile costs;
  costs.comm = comm;
  costs.stages.assign(stages, StageCost{f, b, w, m_b, m_w});
  return costs;
}

// "F0 F1 B0 W0 ..." for one loop-placement rank, the notation of docs/schedules.md §8.
inline std::string LoopOrderString(const RankProgram& program) {
  std::ostringstream out;
  for (size_t i = 0; i < program.ops.size(); ++i) {
    out << (i ? " " : "") << OpKindName(program.ops[i].kind) << program.ops[i].microbatch;
  }
  return out.str();
}

}  // namespace zb::testing

#endif  // ZBKIT_TESTS_SUPPORT_GOLDEN_H_
