// SPDX-License-Identifier: Apache-2.0
// A plain-text table with aligned columns, for the human-readable output of `zb` commands.
#ifndef ZBKIT_TUNER_CLI_TEXT_TABLE_H_
#define ZBKIT_TUNER_CLI_TEXT_TABLE_H_

#include <ostream>
#include <string>
#include <vector>

namespace zb::cli {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  // The first column is left-aligned, the others right-aligned (they hold numbers).
  void Render(std::ostream& out) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// Fixed-point formatting helpers shared by the commands.
std::string FormatFixed(double value, int decimals);
std::string FormatMs(long long ns);  // "123.456"

}  // namespace zb::cli

#endif  // ZBKIT_TUNER_CLI_TEXT_TABLE_H_
