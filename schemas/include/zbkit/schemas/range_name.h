// SPDX-License-Identifier: Apache-2.0
// The range-name contract: how zbkit names the NVTX (or any profiler) ranges that mark pipeline
// ops, so that what the runtime writes is what the profiler reads. docs/range-names.md documents
// it together with the other conventions the profiler recognises.
//
//   zb:<F|B|W|BW>:s<stage>:mb<microbatch>                    a compute op, e.g. "zb:F:s3:mb7"
//   zb:<SEND_F|RECV_F|SEND_B|RECV_B>:s<stage>:mb<microbatch>  a stage-to-stage transfer
//   zb:iter:<n>                                               one training iteration
//   PP:<stage><F|I|W|B><microbatch>    torch's action labels, which zbkit's runtime writes
//
// <stage> is the global stage (model chunk) id, not the rank, so a name stays meaningful under
// any placement; all numbers are decimal, at most INT32_MAX. The writer never emits leading zeros;
// the parser accepts them (the profiler always has). Qt-, CUDA- and NVTX-free on purpose: the
// runtime, the profiler and tests share it.
#ifndef ZBKIT_SCHEMAS_RANGE_NAME_H_
#define ZBKIT_SCHEMAS_RANGE_NAME_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "zbkit/schemas/types.h"

namespace zb {

// Direction of a transfer, as seen by the stage whose range it is.
enum class CommDirection : uint8_t {
  kNone,
  kSendForward,   // activations to stage + 1
  kRecvForward,   // activations from stage - 1
  kSendBackward,  // input gradients to stage - 1
  kRecvBackward   // input gradients from stage + 1
};

// One parsed zbkit range name.
struct RangeName {
  enum class Role : uint8_t { kOp, kComm, kIteration };
  Role role = Role::kOp;
  OpKind kind = OpKind::kF;                        // F, B, W or BW for kOp; kComm for kComm
  CommDirection direction = CommDirection::kNone;  // kComm only
  int32_t stage = -1;                              // kOp and kComm
  int32_t microbatch = -1;                         // kOp and kComm
  int32_t iteration = -1;                          // kIteration only

  bool operator==(const RangeName& other) const = default;
};

// "zb:F:s3:mb7". Empty when `kind` is not F, B, W or BW or a number is negative: a range named ""
// is never recognised, so a caller's bug shows up as a missing op, not as a wrong one.
std::string FormatRangeName(OpKind kind, int32_t stage, int32_t microbatch);
// "zb:SEND_F:s3:mb7". Empty for CommDirection::kNone or a negative number.
std::string FormatCommRangeName(CommDirection direction, int32_t stage, int32_t microbatch);
// "zb:iter:12". Empty for a negative number.
std::string FormatIterationRangeName(int32_t iteration);
// torch.distributed.pipelining's label of a compute op, the one its schedule runtime puts on each
// action: "PP:3F7", "PP:3I7" (B, the input gradient), "PP:3W7", "PP:3B7" (BW, the full backward);
// docs/range-names.md §3. What zbkit's runtime names its ops, so that nsys and torch.profiler
// traces of a zbkit replay read like torch's. Empty for COMM or a negative number.
std::string FormatTorchActionName(OpKind kind, int32_t stage, int32_t microbatch);
// Its exact inverse: a whole "PP:<stage><F|I|W|B><mb>" as a RangeName of role kOp, else nullopt.
// (The profiler reads torch's labels more leniently, with its other conventions: rules.cpp.)
std::optional<RangeName> ParseTorchActionName(std::string_view name);

// The whole name must match one of the three forms above; anything else (another convention, a
// missing or extra field, a number over INT32_MAX) is nullopt.
std::optional<RangeName> ParseRangeName(std::string_view name);

// Scanning steps shared by this parser and the profiler's parsers of other naming conventions
// (profiler/src/rules.cpp).
namespace range_scan {
// Decimal digits at `pos`, advancing it; nullopt when there are none or the value overflows
// int32.
std::optional<int32_t> ParseDigits(std::string_view text, size_t& pos);
// Whether `token` stands at `pos`; advances past it when it does.
bool Consume(std::string_view text, size_t& pos, std::string_view token);
}  // namespace range_scan

}  // namespace zb

#endif  // ZBKIT_SCHEMAS_RANGE_NAME_H_
