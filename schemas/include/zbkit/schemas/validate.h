// SPDX-License-Identifier: Apache-2.0
// Structural validation of model objects, independent of how they were read.
#ifndef ZBKIT_SCHEMAS_VALIDATE_H_
#define ZBKIT_SCHEMAS_VALIDATE_H_

#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"

namespace zb {

// Every time finite and >= 0, F > 0, memory finite and >= 0, comm >= 0, at least one stage.
Status ValidateCostProfile(const CostProfile& costs);

// p >= 1, m >= 1, v >= 1 (v == 2 for placement v), costs for p*v stages, each rank holds the
// stages its placement says, and every (kind, stage, microbatch) op appears exactly once
// (a BW op stands for both B and W; a stage is either fully split or fully fused per microbatch).
// Errors name the path, e.g. `ranks[1].ops[7]: duplicate W of stage 1 microbatch 3`.
Status ValidateSchedule(const Schedule& schedule);

}  // namespace zb

#endif  // ZBKIT_SCHEMAS_VALIDATE_H_
