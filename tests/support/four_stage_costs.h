// SPDX-License-Identifier: Apache-2.0
// The 4-stage pipeline the GUI's tests (app and model) tune: the last stage slower (the usual LM
// head), so that bubbles have a visible cause. Times in ms, memory in the profile's own units.
#ifndef ZBKIT_TESTS_SUPPORT_FOUR_STAGE_COSTS_H_
#define ZBKIT_TESTS_SUPPORT_FOUR_STAGE_COSTS_H_

#include "zbkit/schemas/types.h"

namespace zb::testing_support {

inline CostProfile FourStageCosts() {
  CostProfile costs;
  costs.comm = MsToNs(0.5);
  for (int s = 0; s < 4; ++s) {
    StageCost stage;
    stage.f = MsToNs(s == 3 ? 14.0 : 10.0);
    stage.b = MsToNs(s == 3 ? 15.0 : 10.5);
    stage.w = MsToNs(s == 3 ? 7.0 : 5.0);
    stage.m_b = 100;
    stage.m_w = 40;
    costs.stages.push_back(stage);
  }
  return costs;
}

}  // namespace zb::testing_support

#endif  // ZBKIT_TESTS_SUPPORT_FOUR_STAGE_COSTS_H_
