// SPDX-License-Identifier: Apache-2.0
#include "cli_support.h"

#include "zbkit/schemas/json_io.h"
#include "zbkit/schemas/store.h"

namespace zb::cli {

bool ParseCommandLine(const std::string& command, const std::string& usage, const Args& args,
                      const po::options_description& options,
                      const po::positional_options_description& positional,
                      po::variables_map& values, std::ostream& out, std::ostream& err,
                      int& exit_code) {
  po::options_description all = options;
  all.add_options()("help,h", "show this help");
  try {
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), values);
    if (values.count("help")) {
      out << "usage: zb " << command << " " << usage << "\n\n" << all;
      exit_code = 0;
      return false;
    }
    po::notify(values);
  } catch (const po::error& error) {
    err << "zb " << command << ": " << error.what() << " (see zb " << command << " --help)\n";
    exit_code = 2;
    return false;
  }
  return true;
}

int ReportError(std::ostream& err, const std::string& command, const Status& status) {
  err << "zb " << command << ": " << status.message() << "\n";
  return ExitCodeFor(status);
}

void AddScheduleSourceOptions(po::options_description& options,
                              po::positional_options_description& positional) {
  po::options_description_easy_init add = options.add_options();
  add("store", po::value<std::string>(), "SQLite store holding the schedule");
  add("schedule", po::value<int64_t>(), "schedule id in the store");
  add("file", po::value<std::string>(), "or a zb-schedule/1 file (also positional)");
  positional.add("file", 1);
}

Expected<Schedule> LoadScheduleFromArguments(const po::variables_map& values) {
  const bool has_file = values.count("file") > 0;
  const bool has_store = values.count("store") > 0;
  const bool has_id = values.count("schedule") > 0;
  if (has_file && has_store) return UsageError("give either a schedule FILE or --store, not both");
  if (has_file) {
    if (has_id) return UsageError("--schedule needs --store");
    return ReadScheduleFile(values["file"].as<std::string>());
  }
  if (!has_store) return UsageError("give a schedule FILE or --store DB --schedule ID");
  if (!has_id) return UsageError("--store needs --schedule ID");
  ZB_ASSIGN_OR_RETURN(Store store,
                      Store::Open(values["store"].as<std::string>(), Store::Mode::kReadOnly));
  return store.LoadSchedule(values["schedule"].as<int64_t>());
}

}  // namespace zb::cli
