// SPDX-License-Identifier: Apache-2.0
#include "zbkit/schemas/op_text.h"

#include <array>

#include "zbkit/schemas/range_name.h"

namespace zb {
namespace {

struct ActionEntry {
  ActionKind kind;
  const char* name;
  const char* torch;
};
// The table, in the enum's order (checked by op_text_test).
constexpr std::array<ActionEntry, kNumActionKinds> kActions = {{
    {ActionKind::kF, "F", "F"},
    {ActionKind::kB, "B", "I"},
    {ActionKind::kW, "W", "W"},
    {ActionKind::kBW, "BW", "B"},
    {ActionKind::kSendF, "SEND_F", "SEND_F"},
    {ActionKind::kRecvF, "RECV_F", "RECV_F"},
    {ActionKind::kSendB, "SEND_B", "SEND_B"},
    {ActionKind::kRecvB, "RECV_B", "RECV_B"},
    {ActionKind::kOther, "OTHER", ""},
    {ActionKind::kUnshard, "UNSHARD", "UNSHARD"},
    {ActionKind::kReshard, "RESHARD", "RESHARD"},
    {ActionKind::kReduceGrad, "REDUCE_GRAD", "REDUCE_GRAD"},
    {ActionKind::kOverlapFB, "OVERLAP_F_B", "OVERLAP_F_B"},
}};

const ActionEntry* Entry(ActionKind kind) {
  const int index = static_cast<int>(kind);
  return index >= 0 && index < kNumActionKinds ? &kActions[index] : nullptr;
}

}  // namespace

const char* ActionKindName(ActionKind kind) {
  const ActionEntry* entry = Entry(kind);
  return entry != nullptr ? entry->name : "?";
}

std::optional<ActionKind> ParseActionKindName(std::string_view name) {
  for (const ActionEntry& entry : kActions) {
    if (name == entry.name) return entry.kind;
  }
  return std::nullopt;
}

const char* TorchToken(ActionKind kind) {
  const ActionEntry* entry = Entry(kind);
  return entry != nullptr ? entry->torch : "";
}

std::optional<ActionKind> ConsumeTorchToken(std::string_view text, size_t& pos) {
  const ActionEntry* best = nullptr;
  for (const ActionEntry& entry : kActions) {
    const std::string_view token = entry.torch;
    if (token.empty() || text.substr(pos, token.size()) != token) continue;
    if (best == nullptr || token.size() > std::string_view(best->torch).size()) best = &entry;
  }
  if (best == nullptr) return std::nullopt;
  pos += std::string_view(best->torch).size();
  return best->kind;
}

ActionKind ActionOf(OpKind kind) {
  switch (kind) {
    case OpKind::kF:
      return ActionKind::kF;
    case OpKind::kB:
      return ActionKind::kB;
    case OpKind::kW:
      return ActionKind::kW;
    case OpKind::kBW:
      return ActionKind::kBW;
    case OpKind::kComm:
      break;
  }
  return ActionKind::kOther;
}

ActionKind ActionOf(CommDirection direction) {
  switch (direction) {
    case CommDirection::kSendForward:
      return ActionKind::kSendF;
    case CommDirection::kRecvForward:
      return ActionKind::kRecvF;
    case CommDirection::kSendBackward:
      return ActionKind::kSendB;
    case CommDirection::kRecvBackward:
      return ActionKind::kRecvB;
    case CommDirection::kNone:
      break;
  }
  return ActionKind::kOther;
}

std::optional<OpKind> ComputeKindOf(ActionKind kind) {
  for (const OpKind op : {OpKind::kF, OpKind::kB, OpKind::kW, OpKind::kBW}) {
    if (ActionOf(op) == kind) return op;
  }
  return std::nullopt;
}

CommDirection DirectionOf(ActionKind kind) {
  for (const CommDirection direction :
       {CommDirection::kSendForward, CommDirection::kRecvForward, CommDirection::kSendBackward,
        CommDirection::kRecvBackward}) {
    if (ActionOf(direction) == kind) return direction;
  }
  return CommDirection::kNone;
}

std::string FormatAction(ActionKind kind, int32_t stage, int32_t microbatch) {
  std::string text = std::string(ActionKindName(kind)) + " stage " + std::to_string(stage);
  if (microbatch >= 0) text += " mb " + std::to_string(microbatch);
  return text;
}

std::string FormatTorchAction(ActionKind kind, int32_t stage, int32_t microbatch) {
  return std::to_string(stage) + TorchToken(kind) +
         (microbatch >= 0 ? std::to_string(microbatch) : std::string());
}

std::string FormatSliceLabel(OpKind kind, int32_t stage, int32_t microbatch, bool with_stage) {
  if (kind == OpKind::kComm) {
    return "COMM s" + std::to_string(stage) + " mb" + std::to_string(microbatch);
  }
  return std::string(OpKindName(kind)) + std::to_string(microbatch) +
         (with_stage ? " s" + std::to_string(stage) : std::string());
}

std::string FormatOp(OpKind kind, int32_t stage, int32_t microbatch) {
  return std::string(OpKindName(kind)) + " stage " + std::to_string(stage) + " mb " +
         std::to_string(microbatch);
}

std::optional<OpText> ParseOp(std::string_view text) {
  const size_t space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const std::optional<OpKind> kind = ParseOpKind(text.substr(0, space));
  if (!kind || *kind == OpKind::kComm) return std::nullopt;
  size_t pos = space;
  const auto number = [&](std::string_view token) -> std::optional<int32_t> {
    if (!range_scan::Consume(text, pos, token)) return std::nullopt;
    // No leading zeros: FormatOp never writes them, and "mb 05" must not read as "mb 5".
    if (pos + 1 < text.size() && text[pos] == '0' && text[pos + 1] >= '0' && text[pos + 1] <= '9')
      return std::nullopt;
    return range_scan::ParseDigits(text, pos);
  };
  const std::optional<int32_t> stage = number(" stage ");
  if (!stage) return std::nullopt;
  const std::optional<int32_t> microbatch = number(" mb ");
  if (!microbatch || pos != text.size()) return std::nullopt;
  return OpText{*kind, *stage, *microbatch};
}

}  // namespace zb
