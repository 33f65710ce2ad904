// SPDX-License-Identifier: Apache-2.0
#include "zbkit/tuner/torch_export.h"

#include <sstream>

namespace zb::tuner {

std::string ToTorchCsv(const Schedule& schedule, TorchDialect dialect) {
  auto token = [dialect](OpKind kind) {
    switch (kind) {
      case OpKind::kF:
        return "F";
      case OpKind::kB:
        return dialect == TorchDialect::kModern ? "I" : "B";
      case OpKind::kW:
        return "W";
      case OpKind::kBW:
        return dialect == TorchDialect::kModern ? "B" : "BW";
      case OpKind::kComm:  // never in a valid schedule
        return "?";
    }
    return "?";
  };
  std::ostringstream out;
  for (const RankProgram& program : schedule.programs) {
    for (size_t i = 0; i < program.ops.size(); ++i) {
      const Op& op = program.ops[i];
      out << (i ? "," : "") << program.stages[op.chunk] << token(op.kind) << op.microbatch;
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace zb::tuner
