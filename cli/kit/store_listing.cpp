// SPDX-License-Identifier: Apache-2.0
#include "zbkit/cli/store_listing.h"

#include "zbkit/cli/text_table.h"

namespace zb::cli {

void StoreListing::Print(bool json, std::ostream& out) const {
  if (json) {
    nlohmann::json doc = {{"format", format_}, {key_, nlohmann::json::array()}};
    for (const nlohmann::json& row : json_rows_)
      doc[key_].push_back(row);
    out << doc.dump(2) << "\n";
    return;
  }
  TextTable table(header_);
  for (const std::vector<std::string>& row : text_rows_)
    table.AddRow(row);
  table.Render(out);
}

int RunStoreListing(const std::string& command, const Args& args, std::ostream& out,
                    std::ostream& err, StoreListing listing,
                    const std::function<Status(const Store& store, StoreListing& listing)>& fill) {
  po::options_description options("options");
  po::options_description_easy_init add = options.add_options();
  add("store", po::value<std::string>()->required(), "SQLite store");
  add("json", "print JSON");
  po::variables_map values;
  int exit_code = 0;
  const std::string example = "example:\n  zb " + command +
                              " --store zb.db --json\n      the listing as JSON, for scripts\n";
  if (!ParseCommandLine(command, "--store DB [--json]", args, options, {}, values, out, err,
                        exit_code, example)) {
    return exit_code;
  }
  auto store = Store::Open(values["store"].as<std::string>(), Store::Mode::kReadOnly);
  if (!store.ok()) return ReportError(err, command, store.status());
  Status filled = fill(*store, listing);
  if (!filled.ok()) return ReportError(err, command, filled);
  listing.Print(values.count("json") > 0, out);
  return 0;
}

}  // namespace zb::cli
