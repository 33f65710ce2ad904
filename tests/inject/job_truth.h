// SPDX-License-Identifier: Apache-2.0
// What zbkit_nvtx_job really spun (--truth), and how a recording compares with it and with the
// planted durations of nvtx_job_plan.h.
#ifndef ZBKIT_TESTS_INJECT_JOB_TRUTH_H_
#define ZBKIT_TESTS_INJECT_JOB_TRUTH_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "nvtx_job_plan.h"

namespace zb::testing {

// Phase of a range name: "F", "B", "W" for "F3.0.0" etc., "ncclSend", or "" for anything else.
inline std::string PhaseOf(const std::string& name) {
  if (name == "ncclSend") return name;
  if (name.size() > 4 && (name[0] == 'F' || name[0] == 'B' || name[0] == 'W') &&
      name.compare(name.size() - 4, 4, ".0.0") == 0) {
    return name.substr(0, 1);
  }
  return {};
}

// The job's own measurement of each range, per phase, in the order it emitted them (ns).
inline std::map<std::string, std::vector<int64_t>> ReadTruth(const std::string& path) {
  std::map<std::string, std::vector<int64_t>> truth;
  std::ifstream in(path);
  std::string name;
  int64_t ns = 0;
  while (in >> name >> ns)
    truth[PhaseOf(name)].push_back(ns);
  return truth;
}

inline double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

inline int64_t PlantedUs(const std::string& phase, int stage) {
  if (phase == "F") return nvtx_job::ForwardUs(stage);
  if (phase == "B") return nvtx_job::BackwardUs(stage);
  if (phase == "W") return nvtx_job::WeightUs(stage);
  return nvtx_job::kSendUs;
}

// Whether the job managed to plant the durations: the median of what it really spun, per phase,
// within 5% of the plan (not so on a machine whose cores are taken by something else).
inline bool Planted(const std::map<std::string, std::vector<int64_t>>& truth, int stage) {
  for (const auto& [phase, values] : truth) {
    std::vector<double> us;
    for (int64_t ns : values)
      us.push_back(static_cast<double>(ns) / 1e3);
    const double planted = static_cast<double>(PlantedUs(phase, stage));
    if (std::abs(Median(us) - planted) / planted > 0.05) return false;
  }
  return !truth.empty();
}

}  // namespace zb::testing

#endif  // ZBKIT_TESTS_INJECT_JOB_TRUTH_H_
