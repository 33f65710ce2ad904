// SPDX-License-Identifier: Apache-2.0
// The range-name contract (range_name.h). Hand-written, no regex: the profiler runs the parser on
// every distinct range name of a trace.
#include "zbkit/schemas/range_name.h"

#include <algorithm>
#include <climits>
#include <iterator>
#include <utility>

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

const char* CommToken(CommDirection direction) {
  switch (direction) {
    case CommDirection::kSendForward:
      return "SEND_F";
    case CommDirection::kRecvForward:
      return "RECV_F";
    case CommDirection::kSendBackward:
      return "SEND_B";
    case CommDirection::kRecvBackward:
      return "RECV_B";
    case CommDirection::kNone:
      break;
  }
  return nullptr;
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

namespace {

// torch's action letters of the compute kinds (docs/range-names.md §3): I is B, B is BW.
constexpr std::pair<OpKind, char> kTorchLetters[] = {
    {OpKind::kF, 'F'}, {OpKind::kB, 'I'}, {OpKind::kW, 'W'}, {OpKind::kBW, 'B'}};

}  // namespace

std::string FormatTorchActionName(OpKind kind, int32_t stage, int32_t microbatch) {
  if (stage < 0 || microbatch < 0) return {};
  for (const auto& [letter_kind, letter] : kTorchLetters) {
    if (letter_kind == kind) {
      return "PP:" + std::to_string(stage) + letter + std::to_string(microbatch);
    }
  }
  return {};  // COMM: torch labels transfers by direction, which a kind alone does not say
}

std::optional<RangeName> ParseTorchActionName(std::string_view name) {
  size_t pos = 0;
  if (!Consume(name, pos, "PP:")) return std::nullopt;
  const std::optional<int32_t> stage = ParseDigits(name, pos);
  if (!stage || pos >= name.size()) return std::nullopt;
  const char letter = name[pos++];
  const auto* match = std::find_if(std::begin(kTorchLetters), std::end(kTorchLetters),
                                   [&](const auto& entry) { return entry.second == letter; });
  if (match == std::end(kTorchLetters)) return std::nullopt;
  const std::optional<int32_t> microbatch = ParseDigits(name, pos);
  if (!microbatch || pos != name.size()) return std::nullopt;
  RangeName parsed;
  parsed.role = RangeName::Role::kOp;
  parsed.kind = match->first;
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
  struct Token {
    const char* text;
    OpKind kind;
    CommDirection direction;
  };
  // "BW:" before "B:" so that a fused backward is not read as a B.
  static constexpr Token kTokens[] = {
      {"BW:", OpKind::kBW, CommDirection::kNone},
      {"F:", OpKind::kF, CommDirection::kNone},
      {"B:", OpKind::kB, CommDirection::kNone},
      {"W:", OpKind::kW, CommDirection::kNone},
      {"SEND_F:", OpKind::kComm, CommDirection::kSendForward},
      {"RECV_F:", OpKind::kComm, CommDirection::kRecvForward},
      {"SEND_B:", OpKind::kComm, CommDirection::kSendBackward},
      {"RECV_B:", OpKind::kComm, CommDirection::kRecvBackward},
  };
  const Token* found = nullptr;
  for (const Token& token : kTokens) {
    if (Consume(name, pos, token.text)) {
      found = &token;
      break;
    }
  }
  if (found == nullptr || !Consume(name, pos, "s")) return std::nullopt;
  auto stage = ParseDigits(name, pos);
  if (!stage || !Consume(name, pos, ":mb")) return std::nullopt;
  auto microbatch = ParseDigits(name, pos);
  if (!microbatch || pos != name.size()) return std::nullopt;
  parsed.role = found->kind == OpKind::kComm ? RangeName::Role::kComm : RangeName::Role::kOp;
  parsed.kind = found->kind;
  parsed.direction = found->direction;
  parsed.stage = *stage;
  parsed.microbatch = *microbatch;
  return parsed;
}

}  // namespace zb
