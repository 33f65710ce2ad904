// SPDX-License-Identifier: Apache-2.0
// PyTorch's own schedules as orders zbkit can simulate: a compute-only schedule CSV (the format
// `zb export --format torch-csv` writes, docs/formats.md §4) read back into a Schedule over the
// same costs as zbkit's families, so that `zb tune --torch-orders DIR` shows torch's built-in
// classes (their exact orders, written by the installed torch: `python -m
// zbkit_harness.torch_orders`) side by side with zbkit's candidates under the same cap
// (docs/schedules.md §7).
#ifndef ZBKIT_TUNER_TORCH_ORDERS_H_
#define ZBKIT_TUNER_TORCH_ORDERS_H_

#include <string>

#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"

namespace zb::tuner {

// `csv`: row r = rank r's actions, `<stage><F|I|W|B><mb>` (I input gradient, B full backward);
// communication and REDUCE_GRAD cells are passed over. The stages must lie in loop or V
// placement over the rows (chunks = stages / ranks); `rank_costs` (one stage per rank) is split
// into those chunks as every family splits it. The schedule is not simulated. kInvalidInput with
// one line naming `where`, the row and the cell for anything else (an unknown cell, a stage on
// two ranks, another placement, a rank count or microbatch count other than the profile's).
Expected<Schedule> ScheduleFromTorchCsv(const std::string& csv, const std::string& where,
                                        const CostProfile& rank_costs, int microbatches);

}  // namespace zb::tuner

#endif  // ZBKIT_TUNER_TORCH_ORDERS_H_
