// SPDX-License-Identifier: Apache-2.0
// `zb bench paper`: the ZB paper's Table 5 (bubble rates of 1F1B, 1F1B-I, ZB-H1, ZB-H2, ZB-1p,
// ZB-2p on the twelve (model, p, m) settings) recomputed from its Table 6 profiled costs with
// zbkit's own generators and simulator, beside the published values.
//
// Conventions follow the authors' script (docs/schedules.md §9): costs in integer us, the
// analytic memory M_B = 34h + 5as (s = 1024), M_W = 32h; ZB-1p/2p caps p*M_B and 2p*M_B; 1F1B,
// ZB-H1 and 1F1B-I use the makespan from t = 0, ZB-H2 and ZB-1p/2p the span from each stage's
// first F. 1F1B-I is reported twice: with the authors' wrap-around quirk (which the published
// column used) and with every dependency enforced.
#ifndef ZBKIT_TUNER_PAPER_BENCH_H_
#define ZBKIT_TUNER_PAPER_BENCH_H_

#include <string>
#include <vector>

#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"

namespace zb::tuner {

inline constexpr const char* kPaperSchedules[] = {"1F1B",  "1F1B-I", "ZB-H1",
                                                  "ZB-H2", "ZB-1p",  "ZB-2p"};
inline constexpr int kNumPaperSchedules = 6;

struct PaperBenchRow {
  std::string model;
  int p = 0;
  int m = 0;
  double published[kNumPaperSchedules] = {};
  double computed[kNumPaperSchedules] = {};
  double interleaved_strict = 0;  // 1F1B-I with every dependency enforced
};

// Uses the paper tables compiled into zbkit (tuner/data/paper_tables.json).
Expected<std::vector<PaperBenchRow>> ComputePaperTable5();

// One of the twelve settings as an instance: Table 6's costs (integer us) on p uniform stages,
// M_B = 34h + 5as and M_W = 32h (Table 1, s = 1024, Table 3's h and a).
struct PaperSetting {
  std::string model;
  int p = 0;
  int m = 0;
  int layers = 0;
  CostProfile costs;
  std::vector<double> published;  // Table 5's row, in kPaperSchedules order
};
Expected<std::vector<PaperSetting>> PaperSettings();

}  // namespace zb::tuner

#endif  // ZBKIT_TUNER_PAPER_BENCH_H_
