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
// deadlock, or trains wrong): every W after its B on the rank, an order that can finish, by
// simulating it, and the runtime's own rules (docs/formats.md §4.1).
#ifndef ZBKIT_TUNER_TORCH_EXPORT_H_
#define ZBKIT_TUNER_TORCH_EXPORT_H_

#include <optional>
#include <string>
#include <string_view>

#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"

namespace zb::tuner {

enum class TorchDialect { kModern, kLegacy };

enum class TorchCsvFormat {
  kComputeOnly,        // modern dialect, compute ops (zb export --format torch-csv)
  kLegacyComputeOnly,  // legacy dialect, compute ops (torch-csv-legacy)
  kComputeComms,       // modern dialect, compute and communication ops (torch-csv-comms)
};

// Which runtime replays an order. PyTorch's `_PipelineScheduleRuntime` (the shim, `zb export
// --format torch-csv*`) has a rule of its own beyond the data dependencies (docs/formats.md §4.1);
// zbkit's executor runs any order the simulator can run.
enum class ReplayRuntime { kTorch, kZbkit };
const char* ReplayRuntimeName(ReplayRuntime runtime);
std::optional<ReplayRuntime> ParseReplayRuntime(std::string_view name);

// The rule "the last stage's forwards in microbatch order" (docs/formats.md §4.1): PyTorch's
// runtime appends each loss in the order the last stage's forwards run and looks a backward's loss
// up by microbatch index, so an order that runs F(last, 7) before F(last, 6) starts microbatch 6's
// backward from microbatch 7's loss. True when that rule makes an op of kind `later_kind` on
// `later_stage` for `later_mb` wait for one of kind `earlier_kind` on `earlier_stage` for
// `earlier_mb` on the same rank, though no data flows between them.
bool TorchRuntimeOrders(int num_stages, OpKind later_kind, int later_stage, int later_mb,
                        OpKind earlier_kind, int earlier_stage, int earlier_mb);

// OK when PyTorch's runtime replays `schedule`'s order as written (the rule above); otherwise
// kInfeasible with one line naming the rule, the rank, the stage and the microbatches.
Status CheckTorchRuntimeRules(const Schedule& schedule);

// The costs as scheduled (p*v stages) as PyTorch's runtime spends them (docs/formats.md §4.1):
// it skips the first stage's input-gradient step (`backward_one_chunk`: the stage input needs
// none) and runs that stage's whole backward in its W (`backward_weight_one_chunk`). So stage 0's
// B takes no time and frees nothing, its W takes B + W and frees M_B: b = 0, w = b + w, m_w = m_b.
// A measured fused BW is unchanged. Every order tuned for the torch runtime is simulated with
// these; `zb rehearse` measured the difference (docs/rehearse.md §3).
CostProfile TorchRuntimeCosts(CostProfile scheduled);

// The token of an op kind in `dialect` (the table above): "F", "I", "W", "B" (modern).
const char* TorchToken(OpKind kind, TorchDialect dialect);

// The compute-only CSV of `schedule` as it stands, without checks.
std::string ToTorchCsv(const Schedule& schedule, TorchDialect dialect);

// OK when PyTorch can run `schedule` in `format`: the schedule is structurally valid, every W
// comes after its B on its rank, the order does not deadlock, it keeps the runtime's rule
// (CheckTorchRuntimeRules), and for the legacy dialect the
// backwards are either all split or all fused (PyTorch <= 2.5 decides what B means for the whole
// schedule, with use_full_backward). Otherwise kInfeasible (kInvalidInput for a malformed
// schedule) with one line naming the op and the reason.
Status CheckTorchExportable(const Schedule& schedule, TorchCsvFormat format);

// Checks, then writes the CSV in `format`.
Expected<std::string> ExportTorchCsv(const Schedule& schedule, TorchCsvFormat format);

}  // namespace zb::tuner

#endif  // ZBKIT_TUNER_TORCH_EXPORT_H_
