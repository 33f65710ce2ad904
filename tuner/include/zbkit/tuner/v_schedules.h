// SPDX-License-Identifier: Apache-2.0
// The schedule families on the V placement, for code that wants all of them: zb-v (zb_v.h) and
// v-half / v-min (v_half_min.h).
#ifndef ZBKIT_TUNER_V_SCHEDULES_H_
#define ZBKIT_TUNER_V_SCHEDULES_H_

#include "zbkit/tuner/v_half_min.h"
#include "zbkit/tuner/zb_v.h"

#endif  // ZBKIT_TUNER_V_SCHEDULES_H_
