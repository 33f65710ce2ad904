// SPDX-License-Identifier: Apache-2.0
// Exporters to torch.distributed.pipelining's schedule CSV (docs/formats.md §4):
// no header, row i = rank i, one action per cell as <stage><TOKEN><mb> with the global stage id.
// The meaning of "B" changed in PyTorch 2.6, so the dialect is explicit:
//   modern (>= 2.6): F forward, I input grad, W weight grad, B full backward
//   legacy (<= 2.5): F forward, B input grad, W weight grad, BW full backward
// Two contents in the modern dialect: compute only (PyTorch's loader adds the communication,
// `_load_csv(path)`), or compute plus SEND_F/RECV_F/SEND_B/RECV_B and REDUCE_GRAD in the order the
// runtime posts them (`_load_csv(path, format="compute_comms")`, run verbatim by PyTorch).
//
// ExportTorchCsv checks first what PyTorch would not (it runs a schedule as given and hangs on a
// deadlock): every W after its B on the rank, and an order that can finish, by simulating it.
#ifndef ZBKIT_TUNER_TORCH_EXPORT_H_
#define ZBKIT_TUNER_TORCH_EXPORT_H_

#include <string>

#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"

namespace zb::tuner {

enum class TorchDialect { kModern, kLegacy };

enum class TorchCsvFormat {
  kComputeOnly,        // modern dialect, compute ops (zb export --format torch-csv)
  kLegacyComputeOnly,  // legacy dialect, compute ops (torch-csv-legacy)
  kComputeComms,       // modern dialect, compute and communication ops (torch-csv-comms)
};

// The compute-only CSV of `schedule` as it stands, without checks.
std::string ToTorchCsv(const Schedule& schedule, TorchDialect dialect);

// OK when PyTorch can run `schedule` in `format`: the schedule is structurally valid, every W
// comes after its B on its rank, the order does not deadlock, and for the legacy dialect the
// backwards are either all split or all fused (PyTorch <= 2.5 decides what B means for the whole
// schedule, with use_full_backward). Otherwise kInfeasible (kInvalidInput for a malformed
// schedule) with one line naming the op and the reason.
Status CheckTorchExportable(const Schedule& schedule, TorchCsvFormat format);

// Checks, then writes the CSV in `format`.
Expected<std::string> ExportTorchCsv(const Schedule& schedule, TorchCsvFormat format);

}  // namespace zb::tuner

#endif  // ZBKIT_TUNER_TORCH_EXPORT_H_
