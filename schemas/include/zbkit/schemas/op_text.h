// SPDX-License-Identifier: Apache-2.0
// How zbkit writes one pipeline op in words, wherever a person reads it (error messages, zbview's
// tooltips and details, the store browser): "B stage 3 mb 5", the kind's name (types.h), the
// global stage and the microbatch. The machine-read names are elsewhere: the range-name contract
// "zb:B:s3:mb5" (range_name.h) and PyTorch's action text "3I5" (tuner/torch_export.h).
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

#include "zbkit/schemas/types.h"

namespace zb {

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
