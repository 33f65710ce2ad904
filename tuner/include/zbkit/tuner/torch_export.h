// SPDX-License-Identifier: Apache-2.0
// Exporters to torch.distributed.pipelining's schedule CSV (docs/formats.md §4):
// no header, row i = rank i, one action per cell as <stage><TOKEN><mb> with the global stage id.
// The meaning of "B" changed in PyTorch 2.6, so the dialect is explicit:
//   modern (>= 2.6): F forward, I input grad, W weight grad, B full backward
//   legacy (<= 2.5): F forward, B input grad, W weight grad, BW full backward
#ifndef ZBKIT_TUNER_TORCH_EXPORT_H_
#define ZBKIT_TUNER_TORCH_EXPORT_H_

#include <string>

#include "zbkit/schemas/types.h"

namespace zb::tuner {

enum class TorchDialect { kModern, kLegacy };

std::string ToTorchCsv(const Schedule& schedule, TorchDialect dialect);

}  // namespace zb::tuner

#endif  // ZBKIT_TUNER_TORCH_EXPORT_H_
