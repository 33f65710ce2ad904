// SPDX-License-Identifier: Apache-2.0
// The torch schedule CSV reader (zb tune --torch-csv, zb replay of a CSV): any text against a
// fixed two-rank profile either gets an error or a schedule the exporter's checks can judge.
#include "fuzz_support.h"
#include "zbkit/tuner/torch_export.h"
#include "zbkit/tuner/torch_orders.h"

namespace {

zb::CostProfile TwoRanks() {
  zb::CostProfile costs;
  for (int rank = 0; rank < 2; ++rank) {
    zb::StageCost stage;
    stage.f = 1000;
    stage.b = 1000;
    stage.w = 1000;
    stage.m_b = 1.0;
    stage.m_w = 0.5;
    costs.stages.push_back(stage);
  }
  costs.comm = 10;
  return costs;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const zb::CostProfile costs = TwoRanks();
  for (int microbatches : {2, 4}) {
    auto schedule = zb::tuner::ScheduleFromTorchCsv(zb::fuzz::AsText(data, size), "fuzz.csv", costs,
                                                    microbatches);
    if (schedule.ok()) {
      (void)zb::tuner::CheckTorchExportable(*schedule, zb::tuner::TorchCsvFormat::kComputeOnly);
    }
  }
  return 0;
}
