// SPDX-License-Identifier: Apache-2.0
// A plain-text table with aligned columns and the number formats of the `zb` commands'
// human-readable output.
#ifndef ZBKIT_CLI_TEXT_TABLE_H_
#define ZBKIT_CLI_TEXT_TABLE_H_

#include <ostream>
#include <string>
#include <vector>

#include "zbkit/schemas/time_text.h"  // FormatMs: times in the tables and messages

namespace zb::cli {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  // The last column holds free text (a verdict, or why a row has none): left-aligned, unpadded,
  // and its long cells do not widen the rule under the header.
  void SetLastColumnText() { last_column_text_ = true; }
  // The first column is left-aligned, the others right-aligned (they hold numbers).
  void Render(std::ostream& out) const;

 private:
  bool last_column_text_ = false;
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

std::string FormatFixed(double value, int decimals);  // printf "%.*f"

}  // namespace zb::cli

#endif  // ZBKIT_CLI_TEXT_TABLE_H_
