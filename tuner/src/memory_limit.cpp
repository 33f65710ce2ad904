// SPDX-License-Identifier: Apache-2.0
#include "zbkit/tuner/memory_limit.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>

namespace zb::tuner {

bool FitsCap(double memory, double cap, double scale) {
  if (std::isinf(cap) && cap > 0) return true;
  return memory <= cap + kCapTolerance * std::max({1.0, std::abs(cap), scale});
}
namespace {

// Parses a whole string as a finite double; std::from_chars for double is in GCC 11+.
bool ParseNumber(std::string_view text, double& value) {
  if (text.empty()) return false;
  const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
  return result.ec == std::errc() && result.ptr == text.data() + text.size() &&
         std::isfinite(value);
}

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

}  // namespace

Expected<MemoryLimit> ParseMemoryLimit(std::string_view text) {
  const std::string quoted = "--mem-limit \"" + std::string(text) + "\"";
  if (text == "none") return MemoryLimit{};
  MemoryLimit limit;
  std::string_view number = text;
  double scale = 1;
  if (EndsWith(text, "x")) {
    limit.kind = MemoryLimit::Kind::kRelative;
    number.remove_suffix(1);
  } else {
    limit.kind = MemoryLimit::Kind::kAbsolute;
    for (auto [suffix, factor] : {std::pair<std::string_view, double>{"KiB", 1024.0},
                                  {"MiB", 1024.0 * 1024},
                                  {"GiB", 1024.0 * 1024 * 1024}}) {
      if (EndsWith(text, suffix)) {
        number.remove_suffix(suffix.size());
        scale = factor;
        break;
      }
    }
  }
  double value = 0;
  if (!ParseNumber(number, value)) {
    return UsageError(quoted +
                      ": expected Nx (e.g. 1x, 1.5x), a size (e.g. 4096, 512MiB, 24GiB) or none");
  }
  if (value <= 0) return UsageError(quoted + ": must be > 0");
  limit.value = value * scale;
  return limit;
}

std::vector<double> MemoryLimit::RankCaps(const CostProfile& rank_costs) const {
  const int ranks = rank_costs.num_stages();
  std::vector<double> caps(ranks, std::numeric_limits<double>::infinity());
  if (kind == Kind::kNone) return caps;
  if (kind == Kind::kAbsolute) {
    // The device's memory also holds what FSDP gathers (docs/data-parallel.md §5): a rank's
    // stages all stay unsharded from its first op while it has at most kMaxUnshardedStages of them
    // (every layout zbkit builds), so the rank's whole `unsharded` comes off its budget.
    for (int rank = 0; rank < ranks; ++rank) {
      caps[rank] = std::max(0.0, value - rank_costs.stages[rank].unsharded);
    }
    return caps;
  }
  if (kind == Kind::kPerRank) {
    for (int rank = 0; rank < ranks && rank < static_cast<int>(per_rank.size()); ++rank)
      caps[rank] = per_rank[rank];
    return caps;
  }
  double one_f_one_b_peak = 0;
  for (int rank = 0; rank < ranks; ++rank) {
    one_f_one_b_peak = std::max(one_f_one_b_peak, (ranks - rank) * rank_costs.stages[rank].m_b);
  }
  caps.assign(ranks, value * one_f_one_b_peak);
  return caps;
}

std::string MemoryLimit::ToString() const {
  std::ostringstream out;
  switch (kind) {
    case Kind::kNone:
      return "none";
    case Kind::kRelative:
      out << value << "x";
      break;
    case Kind::kAbsolute:
      out << value;
      break;
    case Kind::kPerRank:
      return "per rank";
  }
  return out.str();
}

std::string CapBelowOneMicrobatch(const CostProfile& rank_costs, const std::vector<double>& caps,
                                  int most_chunks) {
  const int chunks = std::max(most_chunks, 1);
  for (size_t r = 0; r < caps.size() && r < rank_costs.stages.size(); ++r) {
    const double smallest = rank_costs.stages[r].m_b / chunks;
    if (caps[r] < smallest) {
      std::ostringstream out;
      out << "rank " << r << "'s cap " << caps[r] << " is below one microbatch's activations of "
          << "its stage, even split in " << chunks << " (M_B " << rank_costs.stages[r].m_b << " / "
          << chunks << " = " << smallest << "): no order can run under it";
      return out.str();
    }
  }
  return "";
}

}  // namespace zb::tuner
