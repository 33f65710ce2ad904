// SPDX-License-Identifier: Apache-2.0
// Tests of the store's per-hop times measured on clusters (schema version 7): round trips, the
// latest of several, the median, input refused without leaving anything behind, the zb-hops/1
// reader, and the migration from a version-6 store.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "assert_ok.h"
#include "raw_db.h"
#include "store_dir.h"
#include "zbkit/schemas/json_io.h"
#include "zbkit/schemas/store.h"
#include "zbkit/schemas/types.h"

namespace zb {
namespace {

using testing_support::RawDb;
using testing_support::SchemaFile;

HopMeasurement Sample(const std::string& cluster, std::vector<TimeNs> times) {
  HopMeasurement measurement;
  measurement.cluster = cluster;
  measurement.message_bytes = 4096;
  measurement.source = "zb rehearse";
  for (size_t i = 0; i < times.size(); ++i) {
    measurement.hops.push_back({static_cast<int32_t>(i), static_cast<int32_t>(i + 1), times[i]});
  }
  return measurement;
}

using StoreHopsTest = testing_support::StoreDirTest;

TEST(HopMeasurementTest, MedianOfOddAndEvenCounts) {
  EXPECT_EQ(Sample("c", {}).MedianTime(), 0);
  EXPECT_EQ(Sample("c", {50, 10, 30}).MedianTime(), 30);
  EXPECT_EQ(Sample("c", {40, 10, 30, 2000}).MedianTime(), 35);
  const TimeNs big = int64_t{1} << 62;  // no overflow adding the two middle ones
  EXPECT_EQ(Sample("c", {big, big}).MedianTime(), big);
}

TEST_F(StoreHopsTest, RoundTripAndTheLatestOfACluster) {
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path_));
  ZB_ASSERT_OK_AND_ASSIGN(std::optional<HopMeasurement> none, store.LatestHops("node-a"));
  EXPECT_FALSE(none.has_value());
  ZB_ASSERT_OK_AND_ASSIGN(int64_t first, store.RecordHops(Sample("node-a", {900, 100, 300})));
  ZB_ASSERT_OK_AND_ASSIGN(int64_t other, store.RecordHops(Sample("node-b", {7})));
  ZB_ASSERT_OK_AND_ASSIGN(int64_t second, store.RecordHops(Sample("node-a", {60, 50})));
  EXPECT_LT(first, other);
  EXPECT_LT(other, second);

  ZB_ASSERT_OK_AND_ASSIGN(std::optional<HopMeasurement> latest, store.LatestHops("node-a"));
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->id, second);
  EXPECT_EQ(latest->cluster, "node-a");
  EXPECT_EQ(latest->message_bytes, 4096);
  EXPECT_EQ(latest->source, "zb rehearse");
  EXPECT_FALSE(latest->measured_at.empty());
  EXPECT_EQ(latest->hops, Sample("node-a", {60, 50}).hops);
  EXPECT_EQ(latest->MedianTime(), 55);

  ZB_ASSERT_OK_AND_ASSIGN(std::vector<HopMeasurement> all, store.ListHopMeasurements());
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].id, first);
  EXPECT_EQ(all[0].hops, Sample("node-a", {900, 100, 300}).hops);
  EXPECT_EQ(all[1].cluster, "node-b");
}

TEST_F(StoreHopsTest, BadInputIsRefusedNamingTheFieldAndLosesNothing) {
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path_));
  struct Case {
    HopMeasurement measurement;
    std::string says;
  };
  std::vector<Case> cases;
  cases.push_back({Sample("", {1}), "cluster is empty"});
  HopMeasurement no_bytes = Sample("c", {1});
  no_bytes.message_bytes = 0;
  cases.push_back({no_bytes, "message_bytes must be >= 1"});
  HopMeasurement no_source = Sample("c", {1});
  no_source.source.clear();
  cases.push_back({no_source, "source is empty"});
  cases.push_back({Sample("c", {}), "hops is empty"});
  HopMeasurement same = Sample("c", {1});
  same.hops[0].to_rank = 0;
  cases.push_back({same, "hops[0]: ranks must be >= 0 and differ"});
  HopMeasurement negative = Sample("c", {1, -1});
  cases.push_back({negative, "hops[1].time must be >= 0"});
  HopMeasurement twice = Sample("c", {1, 2});
  twice.hops[1] = twice.hops[0];
  cases.push_back({twice, "hops[1]: the pair 0 -> 1 appears twice"});
  for (const Case& c : cases) {
    auto id = store.RecordHops(c.measurement);
    ASSERT_FALSE(id.ok()) << c.says;
    EXPECT_EQ(id.status().code(), ErrorCode::kInvalidInput) << c.says;
    EXPECT_NE(id.status().message().find("record hops: " + c.says), std::string::npos)
        << id.status().message();
  }
  RawDb raw(path_);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM hop_measurements"), 0);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM measured_hops"), 0);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM clusters"), 0);
}

TEST_F(StoreHopsTest, ReadOnlyStoreRecordsNothing) {
  { ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path_)); }
  ZB_ASSERT_OK_AND_ASSIGN(Store read_only, Store::Open(path_, Store::Mode::kReadOnly));
  auto id = read_only.RecordHops(Sample("c", {1}));
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.status().message().find("read-only"), std::string::npos);
}

TEST(HopsJsonTest, ReadsTheFileAndNamesWhatIsWrong) {
  ZB_ASSERT_OK_AND_ASSIGN(
      HopMeasurement read,
      ParseHopsJson(R"({"format": "zb-hops/1", "message_bytes": 8192, "source": "zb rehearse",
                        "hops": [{"from": 0, "to": 1, "ms": 0.05}, {"from": 1, "to": 2, "ms": 2}]})",
                    "hops.json"));
  EXPECT_EQ(read.message_bytes, 8192);
  EXPECT_EQ(read.hops, (std::vector<MeasuredHop>{{0, 1, 50000}, {1, 2, 2000000}}));
  for (const auto& [text, says] : std::vector<std::pair<std::string, std::string>>{
           {R"({"format": "zb-costs/1"})", "format: expected \"zb-hops/1\""},
           {R"({"format": "zb-hops/1", "message_bytes": 0, "source": "x", "hops": []})",
            "message_bytes: must be in [1, "},
           {R"({"format": "zb-hops/1", "message_bytes": 1, "source": "x", "hops": []})",
            "hops: must not be empty"},
           {R"({"format": "zb-hops/1", "message_bytes": 1, "source": "x",
                "hops": [{"from": 0, "to": 1, "ms": -1}]})",
            "hops[0].ms: must be a finite number >= 0"},
           {R"({"format": "zb-hops/1", "message_bytes": 1, "source": "x",
                "hops": [{"from": 0, "to": 1, "ms": 1e12}]})",
            "hops[0].ms: must be at most"},
           {R"({"format": "zb-hops/1", "message_bytes": 1, "source": "x", "hops": [], "x": 1})",
            "x: unknown field"},
       }) {
    auto parsed = ParseHopsJson(text, "hops.json");
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_NE(parsed.status().message().find("hops.json: " + says), std::string::npos)
        << parsed.status().message();
  }
}

TEST_F(StoreHopsTest, VersionSixStoreMigratesAndTakesHops) {
  {
    RawDb raw(path_);
    raw.Exec(SchemaFile("store.sql"));
    for (const char* step :
         {"002_timeline_ops_comm.sql", "003_runs_and_measured_costs.sql",
          "004_timeline_op_iteration.sql", "005_fused_backward_cost.sql", "006_frontiers.sql"}) {
      raw.Exec(SchemaFile(std::string("migrations/") + step));
    }
    raw.Exec("PRAGMA user_version = 6; PRAGMA application_id = 2053270388;");
    raw.Exec("INSERT INTO clusters (id, name, schema_version) VALUES (1, 'node-a', 6);");
  }
  ZB_ASSERT_OK_AND_ASSIGN(Store store, Store::Open(path_));
  EXPECT_EQ(store.schema_version(), Store::kSchemaVersion);  // and on through later steps
  ZB_ASSERT_OK_AND_ASSIGN(int64_t id, store.RecordHops(Sample("node-a", {10, 20, 30})));
  ZB_ASSERT_OK_AND_ASSIGN(std::optional<HopMeasurement> latest, store.LatestHops("node-a"));
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->id, id);
  RawDb raw(path_);
  EXPECT_EQ(raw.Int("PRAGMA user_version"), Store::kSchemaVersion);
  EXPECT_EQ(raw.Text("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(raw.Int("SELECT count(*) FROM clusters"), 1);  // the existing cluster, reused
}

}  // namespace
}  // namespace zb
