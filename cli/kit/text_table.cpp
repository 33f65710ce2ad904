// SPDX-License-Identifier: Apache-2.0
#include "zbkit/cli/text_table.h"

#include <algorithm>
#include <cstdio>
#include <iomanip>

namespace zb::cli {

void TextTable::Render(std::ostream& out) const {
  std::vector<size_t> width(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) {
      width[i] = std::max(width[i], row[i].size());
    }
  };
  measure(header_);
  for (const auto& row : rows_)
    measure(row);
  const size_t last = width.size() - 1;
  if (last_column_text_) width[last] = header_.empty() ? 0 : header_[last].size();
  auto print = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < width.size(); ++i) {
      const std::string cell = i < row.size() ? row[i] : "";
      if (i) out << "  ";
      if (last_column_text_ && i == last) {
        out << cell;
      } else if (i == 0) {
        out << std::left << std::setw(static_cast<int>(width[i])) << cell;
      } else {
        out << std::right << std::setw(static_cast<int>(width[i])) << cell;
      }
    }
    out << std::left << "\n";
  };
  print(header_);
  size_t total = 0;
  for (size_t w : width)
    total += w;
  out << std::string(total + 2 * (width.size() - 1), '-') << "\n";
  for (const auto& row : rows_)
    print(row);
}

std::string FormatFixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

}  // namespace zb::cli
