// SPDX-License-Identifier: Apache-2.0
// The one vocabulary of what a pipeline rank runs, and how zbkit writes it: ActionKind (after
// torch's `_ComputationType`: zbkit's compute ops, the transfers, and what torch's runtime runs
// besides), its names, torch's tokens ("3I5", what `_Action.from_str` reads), the op in words a
// person reads (error messages, zb doctor, zbview: "B stage 3 mb 5") and the short label of a
// slice in a trace ("B5 s3"). The range-name contract "zb:B:s3:mb5" is range_name.h's, built on
// these names. Python holds the same table in adapters/pytorch/zbkit/actions.py.
//
// FormatOp and ParseOp are exact inverses: ParseOp(FormatOp(k, s, m)) gives back k, s and m for
// every kind but COMM and every stage and microbatch >= 0, and ParseOp accepts only what FormatOp
// writes (single spaces, no leading zeros, nothing around it).
#ifndef ZBKIT_SCHEMAS_OP_TEXT_H_
#define ZBKIT_SCHEMAS_OP_TEXT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "zbkit/schemas/range_name.h"
#include "zbkit/schemas/types.h"

namespace zb {

// What a rank runs. The values are the progress record's codes (zb-progress, docs/formats.md §7),
// which zbkit.actions writes: keep both tables equal.
enum class ActionKind : int8_t {
  kF = 0,
  kB = 1,   // the input gradient (torch's I)
  kW = 2,   // the weight gradient
  kBW = 3,  // both (torch's full backward, B)
  kSendF = 4,
  kRecvF = 5,
  kSendB = 6,
  kRecvB = 7,
  kOther = 8,  // an action of a torch newer than this table
  kUnshard = 9,
  kReshard = 10,
  kReduceGrad = 11,
  kOverlapFB = 12,  // torch's OVERLAP_F_B: an F and a B run as one action
};
inline constexpr int kNumActionKinds = 13;

// zbkit's name: "F", "B", "W", "BW", "SEND_F", "RECV_F", "SEND_B", "RECV_B", "OTHER", "UNSHARD",
// "RESHARD", "REDUCE_GRAD", "OVERLAP_F_B"; "?" for a value outside the enum.
const char* ActionKindName(ActionKind kind);
// The kind whose ActionKindName is exactly `name`, else nullopt.
std::optional<ActionKind> ParseActionKindName(std::string_view name);
// torch's token (its `_ComputationType` value): "F", "I", "W", "B", then as the name; "" for OTHER.
const char* TorchToken(ActionKind kind);
// The torch token at text[pos], the longest one that matches, and pos moved past it.
std::optional<ActionKind> ConsumeTorchToken(std::string_view text, size_t& pos);

// The action of a compute op (kComm: kOther, a kind alone does not say which transfer).
ActionKind ActionOf(OpKind kind);
// The action of a transfer (kNone: kOther).
ActionKind ActionOf(CommDirection direction);
// F, B, W or BW for the compute actions, else nullopt.
std::optional<OpKind> ComputeKindOf(ActionKind kind);
// The direction of a transfer, kNone for every other action.
CommDirection DirectionOf(ActionKind kind);

// "SEND_B stage 2 mb 0": an action in words, as FormatOp writes the compute ones; a negative
// microbatch (an action of the whole stage: UNSHARD, REDUCE_GRAD) is left out ("UNSHARD stage 1").
std::string FormatAction(ActionKind kind, int32_t stage, int32_t microbatch);
// torch's action text: "3I7", "1UNSHARD" (a negative microbatch left out): what torch's
// `_Action.from_str` reads and its runtime labels its profiler range with ("PP:3I7").
std::string FormatTorchAction(ActionKind kind, int32_t stage, int32_t microbatch);
// The short label of an op's slice in a trace: "B5" (kind and microbatch, on its stage's track);
// with `with_stage`, for a label read away from that track (a bubble's cause), "B5 s3". A transfer
// (COMM) is "COMM s3 mb5" either way.
std::string FormatSliceLabel(OpKind kind, int32_t stage, int32_t microbatch, bool with_stage);

struct OpText {
  OpKind kind = OpKind::kF;
  int32_t stage = 0;
  int32_t microbatch = 0;
  bool operator==(const OpText& other) const = default;
};

// "B stage 3 mb 5". A negative stage or microbatch is written as it is ("F stage -1 mb 0"), so
// that a caller's bug shows in the text; ParseOp does not read it back.
std::string FormatOp(OpKind kind, int32_t stage, int32_t microbatch);

// The op `text` names, or nullopt when it is not exactly what FormatOp writes for F, B, W or BW.
std::optional<OpText> ParseOp(std::string_view text);

}  // namespace zb

#endif  // ZBKIT_SCHEMAS_OP_TEXT_H_
