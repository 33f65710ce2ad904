// SPDX-License-Identifier: Apache-2.0
// Malformed inputs get one-line errors and write nothing: the rows of docs/reliability.md's "Bad
// input" table, by kind of input (cost profiles, schedules, then traces, rules, hop files, torch
// orders and stores), each run as users run `zb`.
#include <vector>

#include "cli_test_support.h"

namespace zb {
namespace {

using namespace cli_testing;
namespace fs = std::filesystem;

// One malformed input: the file `zb` is given, how it is called ({} stands for the file), and
// the one-line error it must get. docs/reliability.md "Bad input" lists the same rows; keep them in
// step.
struct BadInput {
  std::string name;     // the file written into the test directory
  std::string content;  // its bytes
  std::string args;     // zb's arguments, {} for the file's path
  int exit_code;
  std::string command;   // "tune", "import", ... as the error line names it
  std::string fragment;  // what the line must say
};

std::string Replace(std::string text, const std::string& what, const std::string& with) {
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + with.size()))
    text.replace(at, what.size(), with);
  return text;
}

// A zbkit store of version `version` and application id `application_id`, written by patching
// the SQLite header of a real store (user_version at byte 60, application_id at byte 68).
std::string PatchedStore(const std::string& bytes, uint32_t version, uint32_t application_id) {
  std::string patched = bytes;
  for (int i = 0; i < 4; ++i) {
    patched[60 + i] = static_cast<char>((version >> (24 - 8 * i)) & 0xff);
    patched[68 + i] = static_cast<char>((application_id >> (24 - 8 * i)) & 0xff);
  }
  return patched;
}

// What the rows start from: a real zb-h1 schedule and a real store, made by zb itself.
class BadInputTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    costs_ = Data("costs/uniform4.json");
    ASSERT_EQ(Zb("tune --costs " + costs_ + " -m 4 --mem-limit 2x --family zb-h1 -o " +
                 Path("s.json") + " --store " + Path("real.db"))
                  .exit_code,
              0);
    schedule_ = nlohmann::json::parse(Slurp(Path("s.json")));
    const auto& rank0 = schedule_["ranks"][0]["ops"];
    while (rank0[first_w_]["type"] != "W")
      ++first_w_;
    store_ = Slurp(Path("real.db"));
    ASSERT_GT(store_.size(), 100u);
  }

  // The schedule with `edit` applied, as text.
  std::string Edited(const std::function<void(nlohmann::json&)>& edit) const {
    nlohmann::json copy = schedule_;
    edit(copy);
    return copy.dump();
  }

  // Writes each case's input, runs zb on it and checks the one-line error, that no output file
  // or store was created and that the input is as it was.
  void ExpectEachRejected(const std::vector<BadInput>& cases) {
    for (const BadInput& bad : cases) {
      SCOPED_TRACE(bad.name + ": " + bad.args + " -> " + bad.fragment);
      const fs::path input = dir_ / bad.name;
      if (bad.name.back() == '/') {
        fs::create_directories(input);
      } else {
        fs::create_directories(input.parent_path());
        std::ofstream(input, std::ios::binary) << bad.content;
      }
      Result result = Zb(Replace(bad.args, "{}", bad.name), dir_);
      ExpectOneLineError(result, bad.exit_code, bad.command, bad.fragment);
      for (const char* output : {"out.json", "out.db", "out.csv"}) {
        EXPECT_FALSE(fs::exists(dir_ / output)) << output;
        fs::remove(dir_ / output);  // one case's failure is not the next one's
      }
      if (bad.name.back() != '/') {
        EXPECT_EQ(Slurp(input), bad.content);
      }
      fs::remove_all(input);
    }
  }

  std::string costs_;
  nlohmann::json schedule_;
  size_t first_w_ = 0;
  std::string store_;
};

TEST_F(BadInputTest, CostProfiles) {
  const std::string c = R"({"format": "zb-costs/1", "comm": 0.1, "stages": [)";
  const std::string stage = R"({"F": 1, "B": 1, "W": 1, "M_B": 2, "M_W": 1})";
  const std::string tune = "tune --costs {} -m 4 --mem-limit 2x -o out.json --store out.db";
  ExpectEachRejected({
      {"c.json", "{", tune, 1, "tune", "c.json: not valid JSON: parse error at line 1, column 2"},
      {"c.json", c + R"({"F": NaN, "B": 1, "W": 1, "M_B": 2, "M_W": 1}]})", tune, 1, "tune",
       "(NaN and Infinity are not valid JSON numbers)"},
      {"c.json", R"({"format": "zb-costs/1", "comm": 1e999, "stages": []})", tune, 1, "tune",
       "c.json: not valid JSON: number overflow parsing '1e999'"},
      {"c.json", R"({"format": "zb-costs/2", "stages": []})", tune, 1, "tune",
       R"(c.json: format: expected "zb-costs/1", got "zb-costs/2")"},
      {"c.json", c + R"({"F": 1, "B": 1, "W": 1, "M_B": 2, "M_W": 1, "m_b": 3}]})", tune, 1, "tune",
       "c.json: stages[0].m_b: unknown field"},
      {"c.json", c + R"({"F": 1, "B": 1, "W": 1, "M_B": 2}]})", tune, 1, "tune",
       "c.json: stages[0].M_W: missing field"},
      {"c.json", c + R"({"F": -1, "B": 1, "W": 1, "M_B": 2, "M_W": 1}]})", tune, 1, "tune",
       "c.json: stages[0].F: must be a finite number > 0, got -1"},
      {"c.json", c + R"({"F": 1, "B": 1, "W": 1, "M_B": 1, "M_W": -3}]})", tune, 1, "tune",
       "c.json: stages[0].M_W: must be a finite number >= 0, got -3"},
      {"c.json", c + R"({"F": 1e12, "B": 1, "W": 1, "M_B": 2, "M_W": 1}]})", tune, 1, "tune",
       "c.json: stages[0].F: 1e+12 ms is more than an hour (3600000 ms)"},
      {"c.json", c + R"({"F": 1, "B": 1, "W": 1, "M_B": 1e308, "M_W": 1}]})", tune, 1, "tune",
       "c.json: stages[0].M_B: 1e+308 is more than 2^50 (1 PiB in bytes)"},
      {"c.json", c + "]}", tune, 1, "tune", "c.json: stages: must not be empty"},
      {"c.json", R"({"format": "zb-costs/1", "count": 2000, "stages": [)" + stage + "]}", tune, 2,
       "tune", "costs: 2000 stages, one per rank: more than the 1024 ranks zbkit tunes"},
      {"c.json", c + stage + "]}",
       "tune --costs {} -m 1000000 --mem-limit 2x -o out.json --store out.db", 2, "tune",
       "more than the 1048576 zbkit tunes in one schedule"},
      {"c.json", c + stage + "]}", "tune --costs {} -m 4 --mem-limit 0.5 -o out.json", 1, "tune",
       "rank 0's cap 0.5 is below one microbatch's activations"},
      {"c.json", c + stage + "]}", "tune --costs {} -m 4 --mem-limit 2x --bogus", 2, "tune",
       "unrecognised option '--bogus'"},
      {"c.json", c + stage + "]}", "tune --costs nosuch.json -m 4 --mem-limit 2x", 1, "tune",
       "nosuch.json: cannot open: No such file or directory"},
  });
}

TEST_F(BadInputTest, Schedules) {
  const size_t first_w = first_w_;
  auto edited = [this](const std::function<void(nlohmann::json&)>& edit) { return Edited(edit); };
  ExpectEachRejected({
      {"s.json", edited([](nlohmann::json& s) { s["ranks"][0]["ops"].erase(0); }), "show {}", 1,
       "show", "s.json: ranks[0].ops: missing F of stage 0 microbatch 0"},
      {"s.json",
       edited([](nlohmann::json& s) { s["ranks"][0]["ops"].push_back(s["ranks"][0]["ops"][0]); }),
       "show {}", 1, "show", "duplicate F of stage 0 microbatch 0"},
      {"s.json", edited([](nlohmann::json& s) { s["microbatches"] = 0; }), "show {}", 1, "show",
       "s.json: microbatches: must be in [1, 1048576], got 0"},
      {"s.json", edited([&](nlohmann::json& s) {
         auto& ops = s["ranks"][0]["ops"];
         nlohmann::json w = ops[first_w];
         ops.erase(first_w);
         ops.insert(ops.begin(), w);
       }),
       "show {}", 1, "show", "s.json: deadlock: rank 0 op 0 W"},
      {"s.json", edited([&](nlohmann::json& s) {
         auto& ops = s["ranks"][0]["ops"];
         nlohmann::json w = ops[first_w];
         ops.erase(first_w);
         ops.insert(ops.begin(), w);
       }),
       "export {} --format torch-csv -o out.csv", 1, "export",
       "PyTorch cannot run a weight gradient first"},
  });
}

TEST_F(BadInputTest, TracesRulesHopsOrdersAndStores) {
  const std::string gzip = Slurp(Data("traces/kineto_sampled_rank-0.json.gz"));
  const std::string& costs = costs_;
  const std::string& store = store_;
  ExpectEachRejected({
      {"t.json.gz", gzip.substr(0, gzip.size() / 2), "import {}", 1, "import",
       "t.json.gz: the gzip stream is cut short"},
      {"t.json", R"({"traceEvents": []})", "import {}", 1, "import",
       "t.json: no trace events (expected traceEvents with X or B/E events)"},
      {"t.json",
       R"({"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "fwd", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]})",
       "import {}", 1, "import",
       R"(most frequent annotations: "fwd" x1; give --rules FILE to map range names to F/B/W/BW)"},
      {"empty/", "", "import {}", 1, "import", "it holds no traces"},
      {"n.sqlite", store, "import {} --format nsys", 1, "import", "not an Nsight Systems export"},
      {"r.json", R"([{"regex": "(", "kind": "F"}])", "import " + Data("traces") + " --rules {}", 1,
       "import", R"(r.json: [0].regex: invalid regular expression "(")"},
      {"h.json",
       R"({"format": "zb-hops/1", "message_bytes": 1024, "source": "x", "hops": [{"from": 0, "to": 0, "ms": 0.1}]})",
       "costs record-hops --store out.db {}", 1, "costs record-hops",
       "h.json: hops[0]: ranks must be >= 0 and differ, got 0 -> 0"},
      {"orders/index.json",
       R"({"format": "zb-torch-orders/1", "schedules": [{"name": "Schedule1F1B", "csv": "../s.json"}]})",
       "tune --costs " + costs + " -m 4 --mem-limit 2x --torch-orders orders -o out.json", 1,
       "tune",
       R"(index.json: torch:Schedule1F1B: "csv" must name a file in orders, got "../s.json")"},
      {"x.db", "not a store\n", "list --store {}", 1, "list",
       "x.db: open store: read schema version: file is not a database"},
      {"x.db", PatchedStore(store, Store::kSchemaVersion, 42), "list --store {}", 1, "list",
       "not a zbkit store"},
      {"x.db", PatchedStore(store, 99, 0x7A626B74), "list --store {}", 1, "list",
       "store schema version 99 is newer than this zbkit supports"},
  });
}

}  // namespace
}  // namespace zb
