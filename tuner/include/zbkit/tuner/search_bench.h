// SPDX-License-Identifier: Apache-2.0
// `zb bench search` (docs/search.md §benchmark): the search against the paper's heuristic
// (zb-auto) by the paper's bubble convention (span from each rank's first F), on the paper's
// twelve settings over a grid of caps and on seeded random uneven instances; on small random
// instances also against the optimum the exact solver proves.
#ifndef ZBKIT_TUNER_SEARCH_BENCH_H_
#define ZBKIT_TUNER_SEARCH_BENCH_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"

namespace zb::tuner {

struct SearchBenchOptions {
  double time_limit_s = 1;                                    // per search
  std::vector<double> cap_factors = {1, 1.25, 1.5, 1.75, 2};  // the paper settings' grid
  int random_instances = 12;
  uint64_t seed = 1;
  int exact_instances = 6;         // small random instances the exact solver certifies
  double exact_time_limit_s = 20;  // per instance
  // Called after each measurement with a line saying what was done (for a progress display).
  std::function<void(const std::string&)> progress;
};

// Paper bubble rates; nullopt where nothing of that method fits the cap.
struct SearchBenchPoint {
  double cap_factor = 0;
  std::optional<double> heuristic;    // zb-auto (loop)
  std::optional<double> search_loop;  // search, loop placement
  std::optional<double> search_any;   // search, any placement
  TimeNs heuristic_span = 0;          // the spans behind the three rates (0 where none fits)
  TimeNs loop_span = 0;
  TimeNs any_span = 0;
  std::string any_placement;  // the placement search_any ended with
  double t_over_lb = 0;       // search_any's span / span lower bound
  double seconds = 0;         // both searches together
};

struct SearchBenchSetting {
  std::string name;  // "1.5B p8 m24", or "random 3: p4 m8"
  int p = 0;
  int m = 0;
  std::vector<SearchBenchPoint> points;
  // Trapezoid areas under the bubble-vs-cap curve from the first to the last cap factor; only
  // where every point of the method fits (else nullopt).
  std::optional<double> area_heuristic;
  std::optional<double> area_loop;
  std::optional<double> area_any;
};

// One small instance solved exactly: the search's span against the proved optimum of its op set.
struct SearchBenchExact {
  std::string name;
  int p = 0;
  int m = 0;
  double cap_factor = 0;
  TimeNs search = 0;
  TimeNs lower = 0;
  TimeNs upper = 0;
  bool optimal = false;
  double seconds = 0;
};

struct SearchBenchReport {
  std::vector<SearchBenchSetting> paper;
  std::vector<SearchBenchSetting> random;  // at 1x and 1.5x
  std::vector<SearchBenchExact> exact;     // empty when zbkit was built without Z3
  bool exact_available = false;
};

Expected<SearchBenchReport> RunSearchBench(const SearchBenchOptions& options);

// A random uneven instance: p stages with F, B, W and M_B drawn around 1 (B above F, W below),
// the first and last stage 40 % heavier (embedding, loss), comm 0..10 % of F; costs in ms,
// rounded to multiples of `grain` (coarser grains keep the exact solver's time units few).
CostProfile RandomUnevenProfile(uint64_t seed, int p, TimeNs grain = 1);

}  // namespace zb::tuner

#endif  // ZBKIT_TUNER_SEARCH_BENCH_H_
