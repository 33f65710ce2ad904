// SPDX-License-Identifier: Apache-2.0
// The range-name contract (range_name.h). Hand-written, no regex: the profiler runs the parser on
// every distinct range name of a trace.
#include "zbkit/schemas/range_name.h"

#include <algorithm>
#include <climits>
#include <iterator>
#include <utility>

#include "zbkit/schemas/op_text.h"

namespace zb {

namespace range_scan {
std::optional<int32_t> ParseDigits(std::string_view text, size_t& pos) {
  const size_t begin = pos;
  int64_t value = 0;
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
    value = value * 10 + (text[pos] - '0');
    if (value > INT32_MAX) return std::nullopt;
    ++pos;
  }
  if (pos == begin) return std::nullopt;
  return static_cast<int32_t>(value);
}

bool Consume(std::string_view text, size_t& pos, std::string_view token) {
  if (text.substr(pos, token.size()) != token) return false;
  pos += token.size();
  return true;
}

}  // namespace range_scan

namespace {

using range_scan::Consume;
using range_scan::ParseDigits;

// The contract's name of a transfer: the vocabulary's (op_text.h); nullptr for kNone.
const char* CommToken(CommDirection direction) {
  return direction == CommDirection::kNone ? nullptr : ActionKindName(ActionOf(direction));
}

std::string Format(const char* token, int32_t stage, int32_t microbatch) {
  if (token == nullptr || stage < 0 || microbatch < 0) return {};
  return std::string("zb:") + token + ":s" + std::to_string(stage) + ":mb" +
         std::to_string(microbatch);
}

}  // namespace

std::string FormatRangeName(OpKind kind, int32_t stage, int32_t microbatch) {
  if (kind == OpKind::kComm) return {};
  return Format(OpKindName(kind), stage, microbatch);
}

std::string FormatCommRangeName(CommDirection direction, int32_t stage, int32_t microbatch) {
  return Format(CommToken(direction), stage, microbatch);
}

std::string FormatIterationRangeName(int32_t iteration) {
  if (iteration < 0) return {};
  return "zb:iter:" + std::to_string(iteration);
}

std::string FormatTorchActionName(OpKind kind, int32_t stage, int32_t microbatch) {
  // COMM: torch labels transfers by direction, which a kind alone does not say.
  if (kind == OpKind::kComm || stage < 0 || microbatch < 0) return {};
  return "PP:" + FormatTorchAction(ActionOf(kind), stage, microbatch);
}

std::optional<RangeName> ParseTorchActionName(std::string_view name) {
  size_t pos = 0;
  if (!Consume(name, pos, "PP:")) return std::nullopt;
  const std::optional<int32_t> stage = ParseDigits(name, pos);
  if (!stage) return std::nullopt;
  const std::optional<ActionKind> action = ConsumeTorchToken(name, pos);
  const std::optional<OpKind> kind = action ? ComputeKindOf(*action) : std::nullopt;
  if (!kind) return std::nullopt;
  const std::optional<int32_t> microbatch = ParseDigits(name, pos);
  if (!microbatch || pos != name.size()) return std::nullopt;
  RangeName parsed;
  parsed.role = RangeName::Role::kOp;
  parsed.kind = *kind;
  parsed.stage = *stage;
  parsed.microbatch = *microbatch;
  return parsed;
}

std::optional<RangeName> ParseRangeName(std::string_view name) {
  size_t pos = 0;
  if (!Consume(name, pos, "zb:")) return std::nullopt;
  RangeName parsed;
  if (Consume(name, pos, "iter:")) {
    auto iteration = ParseDigits(name, pos);
    if (!iteration || pos != name.size()) return std::nullopt;
    parsed.role = RangeName::Role::kIteration;
    parsed.iteration = *iteration;
    return parsed;
  }
  // The action's name up to its ':' (the vocabulary's, op_text.h): a compute op or a transfer.
  const size_t colon = name.find(':', pos);
  if (colon == std::string_view::npos) return std::nullopt;
  const std::optional<ActionKind> action = ParseActionKindName(name.substr(pos, colon - pos));
  pos = colon + 1;
  const std::optional<OpKind> compute = action ? ComputeKindOf(*action) : std::nullopt;
  const CommDirection direction = action ? DirectionOf(*action) : CommDirection::kNone;
  const bool found = compute.has_value() || direction != CommDirection::kNone;
  if (!found || !Consume(name, pos, "s")) return std::nullopt;
  auto stage = ParseDigits(name, pos);
  if (!stage || !Consume(name, pos, ":mb")) return std::nullopt;
  auto microbatch = ParseDigits(name, pos);
  if (!microbatch || pos != name.size()) return std::nullopt;
  parsed.role = compute ? RangeName::Role::kOp : RangeName::Role::kComm;
  parsed.kind = compute.value_or(OpKind::kComm);
  parsed.direction = direction;
  parsed.stage = *stage;
  parsed.microbatch = *microbatch;
  return parsed;
}

}  // namespace zb
