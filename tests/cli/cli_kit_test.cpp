// SPDX-License-Identifier: Apache-2.0
// zbkit::cli_kit, the pieces every component's `zb` subcommands share: option parsing and its
// exit codes, error lines, text tables, "-" or an atomic file, store listings.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "zbkit/cli/options.h"
#include "zbkit/cli/output.h"
#include "zbkit/cli/store_listing.h"
#include "zbkit/cli/text_table.h"

namespace zb::cli {
namespace {

namespace fs = std::filesystem;

TEST(CliKit, ParseCommandLineHelpUsageErrorsAndValues) {
  po::options_description options("options");
  options.add_options()("count", po::value<int>()->required(), "a count");
  po::variables_map help_values;
  std::ostringstream out, err;
  int code = -1;
  EXPECT_FALSE(
      ParseCommandLine("demo", "--count N", {"--help"}, options, {}, help_values, out, err, code));
  EXPECT_EQ(code, 0);
  EXPECT_EQ(out.str().rfind("usage: zb demo --count N\n", 0), 0u) << out.str();
  EXPECT_TRUE(err.str().empty());

  po::variables_map bad_values;
  std::ostringstream out2, err2;
  EXPECT_FALSE(ParseCommandLine("demo", "--count N", {"--count", "x"}, options, {}, bad_values,
                                out2, err2, code));
  EXPECT_EQ(code, 2);
  EXPECT_EQ(err2.str().rfind("zb demo: ", 0), 0u) << err2.str();
  EXPECT_NE(err2.str().find("(see zb demo --help)\n"), std::string::npos) << err2.str();

  po::variables_map values;
  EXPECT_TRUE(ParseCommandLine("demo", "--count N", {"--count", "3"}, options, {}, values, out2,
                               err2, code));
  EXPECT_EQ(values["count"].as<int>(), 3);
}

TEST(CliKit, ReportErrorWritesOneLineAndMapsTheExitCode) {
  std::ostringstream err;
  EXPECT_EQ(ReportError(err, "demo", UsageError("bad flag")), 2);
  EXPECT_EQ(ReportError(err, "demo", IoError("x.json: cannot read")), 1);
  EXPECT_EQ(err.str(), "zb demo: bad flag\nzb demo: x.json: cannot read\n");
}

TEST(CliKit, TextTableAlignsAndFormatsNumbers) {
  TextTable table({"name", "value"});
  table.AddRow({"a", "1.5"});
  table.AddRow({"longer", "10.25"});
  std::ostringstream out;
  table.Render(out);
  EXPECT_EQ(out.str(),
            "name    value\n"
            "-------------\n"
            "a         1.5\n"
            "longer  10.25\n");
  EXPECT_EQ(FormatMs(1234567), "1.235");
  EXPECT_EQ(FormatFixed(2.0 / 3, 4), "0.6667");
}

TEST(CliKit, WriteToFileOrStdout) {
  char pattern[] = "/tmp/zbkit_cli_kit_XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::string dir = pattern;
  std::ostringstream out;
  ASSERT_TRUE(WriteToFileOrStdout("-", "to stdout\n", out).ok());
  EXPECT_EQ(out.str(), "to stdout\n");
  ASSERT_TRUE(WriteToFileOrStdout(dir + "/f.txt", "to a file\n", out).ok());
  std::ifstream in(dir + "/f.txt");
  std::stringstream content;
  content << in.rdbuf();
  EXPECT_EQ(content.str(), "to a file\n");
  EXPECT_EQ(out.str(), "to stdout\n");  // nothing more on stdout
  EXPECT_FALSE(WriteToFileOrStdout(dir + "/no/such/dir/f.txt", "x", out).ok());
  fs::remove_all(dir);
}

TEST(CliKit, StoreListingPrintsJsonOrText) {
  StoreListing listing("zb-demo/1", "items", {"id", "name"});
  listing.Add({{"id", 7}, {"name", "seven"}}, {"7", "seven"});
  std::ostringstream json_out, text_out;
  listing.Print(true, json_out);
  const nlohmann::json doc = nlohmann::json::parse(json_out.str());
  EXPECT_EQ(doc["format"], "zb-demo/1");
  ASSERT_EQ(doc["items"].size(), 1u);
  EXPECT_EQ(doc["items"][0]["name"], "seven");
  listing.Print(false, text_out);
  EXPECT_EQ(text_out.str(), "id   name\n---------\n7   seven\n");

  // A missing store fails with one line and exit code 1, and is not created.
  std::ostringstream out, err;
  const int code =
      RunStoreListing("demo", {"--store", "/tmp/zbkit_cli_kit_absent.db"}, out, err, listing,
                      [](const Store&, StoreListing&) { return Status::Ok(); });
  EXPECT_EQ(code, 1);
  EXPECT_EQ(err.str().rfind("zb demo: ", 0), 0u) << err.str();
  EXPECT_FALSE(fs::exists("/tmp/zbkit_cli_kit_absent.db"));
}

}  // namespace
}  // namespace zb::cli
