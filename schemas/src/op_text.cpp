// SPDX-License-Identifier: Apache-2.0
#include "zbkit/schemas/op_text.h"

#include "zbkit/schemas/range_name.h"

namespace zb {

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
