// SPDX-License-Identifier: Apache-2.0
#include "zbkit/cli/options.h"

namespace zb::cli {

bool ParseCommandLine(const std::string& command, const std::string& usage, const Args& args,
                      const po::options_description& options,
                      const po::positional_options_description& positional,
                      po::variables_map& values, std::ostream& out, std::ostream& err,
                      int& exit_code, const std::string& epilogue) {
  po::options_description all = options;
  all.add_options()("help,h", "show this help");
  try {
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), values);
    if (values.count("help")) {
      out << "usage: zb " << command << " " << usage << "\n\n" << all;
      if (!epilogue.empty()) out << "\n" << epilogue;
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

}  // namespace zb::cli
