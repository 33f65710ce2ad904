// SPDX-License-Identifier: Apache-2.0
// The shape shared by the `zb` commands that list what a store holds (`zb list`,
// `zb costs list`): `--store DB [--json]`, the store opened read-only, and the listing printed
// either as one JSON document {"format": ..., "<key>": [...]} or as a text table.
#ifndef ZBKIT_CLI_STORE_LISTING_H_
#define ZBKIT_CLI_STORE_LISTING_H_

#include <functional>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "zbkit/cli/options.h"
#include "zbkit/schemas/status.h"
#include "zbkit/schemas/store.h"

namespace zb::cli {

// One listing: the JSON document's format and array key, and the text table's header; the
// rows are added by the command's lister, once per item, in both forms.
class StoreListing {
 public:
  StoreListing(std::string format, std::string key, std::vector<std::string> header)
      : format_(std::move(format)), key_(std::move(key)), header_(std::move(header)) {}

  void Add(nlohmann::json json_row, std::vector<std::string> text_row) {
    json_rows_.push_back(std::move(json_row));
    text_rows_.push_back(std::move(text_row));
  }
  void Print(bool json, std::ostream& out) const;

 private:
  std::string format_;
  std::string key_;
  std::vector<std::string> header_;
  std::vector<nlohmann::json> json_rows_;
  std::vector<std::vector<std::string>> text_rows_;
};

// Parses `--store DB [--json]`, opens the store read-only, lets `fill` add the rows and prints
// them. Returns the exit code; errors (usage, store, `fill`) are one line on `err`.
int RunStoreListing(const std::string& command, const Args& args, std::ostream& out,
                    std::ostream& err, StoreListing listing,
                    const std::function<Status(const Store& store, StoreListing& listing)>& fill);

}  // namespace zb::cli

#endif  // ZBKIT_CLI_STORE_LISTING_H_
