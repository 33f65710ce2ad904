// SPDX-License-Identifier: Apache-2.0
// The injection library's GPU-free pieces: interning, event rings, rank claims, helpers.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "event_ring.h"
#include "inject_util.h"
#include "name_table.h"

namespace zb::profiler::inject {
namespace {

TEST(NameTableTest, InternsOnceAndReadsBack) {
  NameTable table;
  EXPECT_EQ(table.Intern(""), 0U);
  const uint32_t f = table.Intern("F0.0.0");
  const uint32_t b = table.Intern("B0.0.0");
  EXPECT_NE(f, b);
  EXPECT_EQ(table.Intern(std::string("F0.0.0")), f);
  EXPECT_EQ(table.Get(f), "F0.0.0");
  EXPECT_EQ(table.Get(b), "B0.0.0");
  EXPECT_EQ(table.Get(12345), "");  // unknown ids read as ""
  const std::string long_name(100000, 'x');
  const uint32_t l = table.Intern(long_name);
  EXPECT_EQ(table.Get(l), long_name);
}

TEST(NameTableTest, FullTableAnswersNoId) {
  NameTable table(/*max_bytes=*/64);
  EXPECT_NE(table.Intern("0123456789"), NameTable::kNoId);
  uint32_t last = 0;
  for (int i = 0; i < 20; ++i)
    last = table.Intern("name_" + std::to_string(i));
  EXPECT_EQ(last, NameTable::kNoId);
  EXPECT_EQ(table.Intern("0123456789"), 1U);  // what is there stays
}

TEST(NameTableTest, ConcurrentInternAgrees) {
  NameTable table;
  std::vector<std::vector<uint32_t>> ids(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i)
        ids[t].push_back(table.Intern("n" + std::to_string(i)));
    });
  }
  for (auto& thread : threads)
    thread.join();
  for (int t = 1; t < 4; ++t)
    EXPECT_EQ(ids[t], ids[0]);
  for (int i = 0; i < 2000; ++i)
    EXPECT_EQ(table.Get(ids[0][i]), "n" + std::to_string(i));
}

TEST(NameCacheTest, KeysByContentNotPointer) {
  NameTable table;
  NameCache cache(&table);
  char buffer[16] = "F1.0.0";
  size_t length = 0;
  const uint32_t f1 = cache.Lookup(buffer, &length);
  EXPECT_EQ(length, 6U);
  // The same address now holds another name (what Python's allocator does all the time).
  std::snprintf(buffer, sizeof(buffer), "B1.0.0");
  const uint32_t b1 = cache.Lookup(buffer, &length);
  EXPECT_NE(f1, b1);
  EXPECT_EQ(table.Get(b1), "B1.0.0");
  const std::string copy = "F1.0.0";  // another address, same content
  EXPECT_EQ(cache.Lookup(copy.c_str(), &length), f1);
}

TEST(DomainTableTest, SameNameSameHandle) {
  NameTable names;
  DomainTable domains(&names);
  DomainTable::Domain* nccl = domains.Create("NCCL");
  ASSERT_NE(nccl, nullptr);
  EXPECT_EQ(domains.Create("NCCL"), nccl);
  DomainTable::Domain* other = domains.Create("DeepSpeed");
  EXPECT_NE(other->id, nccl->id);
  EXPECT_NE(nccl->id, 0);
  EXPECT_EQ(names.Get(domains.NameId(nccl->id)), "NCCL");
  EXPECT_EQ(DomainTable::IdOf(nccl), nccl->id);
  EXPECT_EQ(DomainTable::IdOf(nullptr), 0);
  EXPECT_EQ(domains.NameId(0), 0U);

  DomainTable::RegisteredString* send = domains.Register("ncclSend");
  ASSERT_NE(send, nullptr);
  EXPECT_EQ(send->magic, DomainTable::kStringMagic);
  EXPECT_EQ(names.Get(send->name_id), "ncclSend");
  EXPECT_EQ(domains.Register("ncclSend"), send);
}

TEST(EventRingTest, SingleThreadFillDrain) {
  EventRing ring(4);
  for (int i = 0; i < 4; ++i)
    EXPECT_TRUE(ring.Push(RingEvent{i, i + 1, TagNameId(i), 0, 0, 0}));
  EXPECT_FALSE(ring.Push(RingEvent{}));  // full
  EXPECT_EQ(ring.Fill(), 4U);
  std::vector<int64_t> starts;
  EXPECT_EQ(ring.Drain([&](const RingEvent& e) { starts.push_back(e.start); }), 4U);
  EXPECT_EQ(starts, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_TRUE(ring.Empty());
  EXPECT_TRUE(ring.Push(RingEvent{9, 10, 0, 0, 0, 0}));
}

TEST(EventRingTest, ProducerConsumerLoseNothingInOrder) {
  EventRing ring(1024);
  constexpr int64_t kEvents = 500000;
  std::atomic<bool> done{false};
  int64_t pushed = 0;
  std::thread producer([&] {
    for (int64_t i = 0; i < kEvents;) {
      if (ring.Push(RingEvent{i, i, 0, 0, 0, 0})) {
        ++i;
        ++pushed;
      }
    }
    done.store(true);
  });
  int64_t expected = 0;
  bool in_order = true;
  while (!done.load() || !ring.Empty()) {
    ring.Drain([&](const RingEvent& e) {
      in_order = in_order && e.start == expected;
      ++expected;
    });
  }
  producer.join();
  EXPECT_TRUE(in_order);
  EXPECT_EQ(expected, kEvents);
}

TEST(EventRingTest, TaggedNames) {
  EXPECT_TRUE(IsNameId(TagNameId(0)));
  EXPECT_EQ(NameIdOf(TagNameId(123456)), 123456U);
  EXPECT_FALSE(IsNameId(0));
}

TEST(InjectUtilTest, WideToUtf8) {
  EXPECT_EQ(WideToUtf8(nullptr), "");
  EXPECT_EQ(WideToUtf8(L"F0.0.0"), "F0.0.0");
  EXPECT_EQ(WideToUtf8(L"\u00b5s"), "\xc2\xb5s");
  EXPECT_EQ(WideToUtf8(L"\u20ac"), "\xe2\x82\xac");
  EXPECT_EQ(WideToUtf8(L"\U0001F600"), "\xf0\x9f\x98\x80");
  const wchar_t bad[] = {static_cast<wchar_t>(0xD800), 0};
  EXPECT_EQ(WideToUtf8(bad), "\xef\xbf\xbd");
}

TEST(InjectUtilTest, LaunchLikeApis) {
  for (const char* name :
       {"cudaLaunchKernel_v7000", "cudaLaunchKernel_ptsz_v7000", "cudaLaunchKernelExC_v11060",
        "__cudaLaunchKernel_v13000", "cudaLaunchCooperativeKernel_v9000", "cudaGraphLaunch_v10000",
        "cudaMemcpyAsync_v3020", "cudaMemsetAsync_v3020", "cuLaunchKernel", "cuLaunchKernelEx",
        "cuLaunchKernelEx_ptsz", "cuGraphLaunch", "cuMemcpyHtoDAsync_v2"}) {
    EXPECT_TRUE(IsLaunchLikeApi(name)) << name;
  }
  for (const char* name :
       {"cudaLaunchHostFunc_v10000", "cudaGraphAddMemcpyNode_v10000", "cuKernelGetAttribute",
        "cudaGraphExecMemsetNodeSetParams_v10020", "cudaGetDevice_v3020", "cuCtxGetCurrent",
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor_v6000", "cuLaunchHostFunc"}) {
    EXPECT_FALSE(IsLaunchLikeApi(name)) << name;
  }
}

TEST(InjectUtilTest, ClaimRankIsExclusiveAndReleasedOnClose) {
  char pattern[] = "/tmp/zbkit_claim_XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::string dir = pattern;
  const int first = ClaimRank(dir, 3);
  ASSERT_GE(first, 0);
  EXPECT_LT(ClaimRank(dir, 3), 0);  // a second open file description cannot lock it
  const int other = ClaimRank(dir, 4);
  EXPECT_GE(other, 0);
  close(first);
  const int again = ClaimRank(dir, 3);  // a stale lock file does not block
  EXPECT_GE(again, 0);
  close(again);
  close(other);
  EXPECT_LT(ClaimRank(dir + "/missing", 0), 0);
  std::filesystem::remove_all(dir);
}

TEST(InjectUtilTest, EnvInt64) {
  setenv("ZBKIT_TEST_INT", "1500", 1);
  EXPECT_EQ(EnvInt64("ZBKIT_TEST_INT", 7), 1500);
  setenv("ZBKIT_TEST_INT", "15ms", 1);
  EXPECT_EQ(EnvInt64("ZBKIT_TEST_INT", 7), 7);
  unsetenv("ZBKIT_TEST_INT");
  EXPECT_EQ(EnvInt64("ZBKIT_TEST_INT", 7), 7);
}

}  // namespace
}  // namespace zb::profiler::inject
