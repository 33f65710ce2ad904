// SPDX-License-Identifier: Apache-2.0
// Shards: round trip, string interning, a process killed after some flushes keeps them, and the
// environment-derived process description.
#include "zbkit/profiler/shard.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace zb::profiler {
namespace {

namespace fs = std::filesystem;

class ShardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/zbkit_shard_test_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TraceProcess SomeProcess() {
  TraceProcess process;
  process.rank = 3;
  process.local_rank = 1;
  process.world_size = 8;
  process.pid = 4242;
  process.host = "node-a";
  process.command = "python train.py --pp 4";
  return process;
}

TEST_F(ShardTest, RoundTripKeepsEveryRecordInOrder) {
  const std::string path = ShardPath(dir_, SomeProcess());
  EXPECT_EQ(path, dir_ + "/rank3.zbshard");
  auto writer = ShardWriter::Create(path, SomeProcess());
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  std::vector<TraceRange> ranges;
  std::vector<DeviceActivity> activities;
  for (int i = 0; i < 300; ++i) {
    TraceRange range{"F" + std::to_string(i % 7) + ".0.0",
                     i % 3 == 0 ? "NCCL" : "",
                     100 + i % 2,
                     1000 * i,
                     1000 * i + 500,
                     i % 4};
    ranges.push_back(range);
    writer->Add(range);
    DeviceActivity activity{static_cast<ActivityKind>(i % 3),
                            "kernel_" + std::to_string(i % 5),
                            i % 2,
                            7 + i % 3,
                            1000 * i + 10,
                            1000 * i + 400,
                            50'000 + i,
                            64 * i};
    activities.push_back(activity);
    writer->Add(activity);
    writer->Add(Launch{50'000 + i, 100 + i % 2, 1000 * i + 5});
    writer->Add(MemoryEvent{1000 * i + 1, i % 2 == 0 ? 4096 : -4096, i % 2});
    if (i == 150) {
      ASSERT_TRUE(writer->Flush().ok());
    }
  }
  writer->AddDroppedRecords(5);
  ASSERT_TRUE(writer->Flush().ok());
  writer->AddDroppedRecords(2);
  ASSERT_TRUE(writer->Flush().ok());
  EXPECT_EQ(writer->records_added(), 1200);
  EXPECT_EQ(writer->records_written(), 1200);

  auto trace = ReadShard(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->process.rank, 3);
  EXPECT_EQ(trace->process.local_rank, 1);
  EXPECT_EQ(trace->process.world_size, 8);
  EXPECT_EQ(trace->process.pid, 4242);
  EXPECT_EQ(trace->process.host, "node-a");
  EXPECT_EQ(trace->process.command, "python train.py --pp 4");
  EXPECT_EQ(trace->source, "inject");
  EXPECT_EQ(trace->dropped_records, 7);
  ASSERT_EQ(trace->ranges.size(), ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i) {
    EXPECT_EQ(trace->ranges[i].name, ranges[i].name);
    EXPECT_EQ(trace->ranges[i].domain, ranges[i].domain);
    EXPECT_EQ(trace->ranges[i].thread, ranges[i].thread);
    EXPECT_EQ(trace->ranges[i].start, ranges[i].start);
    EXPECT_EQ(trace->ranges[i].end, ranges[i].end);
    EXPECT_EQ(trace->ranges[i].depth, ranges[i].depth);
  }
  ASSERT_EQ(trace->activities.size(), activities.size());
  for (size_t i = 0; i < activities.size(); ++i) {
    const DeviceActivity& a = trace->activities[i];
    const DeviceActivity& b = activities[i];
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.device, b.device);
    EXPECT_EQ(a.stream, b.stream);
    EXPECT_EQ(a.start, b.start);
    EXPECT_EQ(a.end, b.end);
    EXPECT_EQ(a.correlation, b.correlation);
    EXPECT_EQ(a.bytes, b.bytes);
  }
  ASSERT_EQ(trace->launches.size(), 300u);
  EXPECT_EQ(trace->launches[299].correlation, 50'299);
  EXPECT_EQ(trace->launches[299].thread, 101);
  EXPECT_EQ(trace->launches[299].time, 299'005);
  ASSERT_EQ(trace->memory.size(), 300u);
  EXPECT_EQ(trace->memory[1].bytes, -4096);
  EXPECT_EQ(trace->memory[1].device, 1);
}

TEST_F(ShardTest, CreateTruncatesAndPidNamesUnrankedProcess) {
  TraceProcess process;
  process.pid = 77;
  const std::string path = ShardPath(dir_ + "/", process);
  EXPECT_EQ(path, dir_ + "/pid77.zbshard");
  {
    auto writer = ShardWriter::Create(path, process);
    ASSERT_TRUE(writer.ok());
    writer->Add(TraceRange{"old", "", 1, 0, 1, 0});
  }  // the destructor flushes
  auto first = ReadShard(path);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->ranges.size(), 1u);
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u) << "a shard (timings, command line) is the user's alone";
  {
    auto writer = ShardWriter::Create(path, process, "test");
    ASSERT_TRUE(writer.ok());
  }
  auto second = ReadShard(path);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->ranges.empty());
  EXPECT_EQ(second->source, "test");
  auto list = ListShards(dir_);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0], path);
}

TEST_F(ShardTest, RejectsWhatIsNotAShard) {
  EXPECT_EQ(ReadShard(dir_ + "/missing.zbshard").status().code(), ErrorCode::kNotFound);
  const std::string junk = dir_ + "/junk.zbshard";
  FILE* file = std::fopen(junk.c_str(), "w");
  std::fputs("not sqlite at all, just text that is long enough to be a header.............", file);
  std::fclose(file);
  auto trace = ReadShard(junk);
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.status().message().find("not a zbkit shard"), std::string::npos)
      << trace.status().message();
  EXPECT_FALSE(ShardWriter::Create(dir_ + "/no/such/dir/x.zbshard", SomeProcess()).ok());
  EXPECT_EQ(ListShards(dir_ + "/nope").status().code(), ErrorCode::kNotFound);
}

TEST_F(ShardTest, ConcurrentAddersAndFlusherLoseNothing) {
  auto writer = ShardWriter::Create(dir_ + "/c.zbshard", SomeProcess());
  ASSERT_TRUE(writer.ok());
  std::atomic<bool> done{false};
  std::thread flusher([&] {
    while (!done.load())
      EXPECT_TRUE(writer->Flush().ok());
  });
  std::vector<std::thread> adders;
  for (int t = 0; t < 4; ++t) {
    adders.emplace_back([&, t] {
      for (int i = 0; i < 5000; ++i) {
        writer->Add(TraceRange{"r" + std::to_string(i % 13), "", t, i, i + 1, 0});
        writer->Add(Launch{t * 100000 + i, t, i});
      }
    });
  }
  for (auto& adder : adders)
    adder.join();
  done = true;
  flusher.join();
  ASSERT_TRUE(writer->Flush().ok());
  auto trace = ReadShard(dir_ + "/c.zbshard");
  ASSERT_TRUE(trace.ok());
  EXPECT_EQ(trace->ranges.size(), 20000u);
  EXPECT_EQ(trace->launches.size(), 20000u);
  for (const TraceRange& range : trace->ranges)
    ASSERT_EQ(range.name[0], 'r');
}

// A child writes three flushed batches and one unflushed one, then waits to be killed. What was
// flushed must be readable; the unflushed batch is gone.
void KilledChildKeepsFlushedBatches(const std::string& dir, int signal_number) {
  const std::string path = dir + "/killed.zbshard";
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(ready[0]);
    auto writer = ShardWriter::Create(path, SomeProcess());
    if (!writer.ok()) _exit(3);
    for (int batch = 0; batch < 4; ++batch) {
      for (int i = 0; i < 1000; ++i) {
        writer->Add(TraceRange{"F" + std::to_string(batch), "", 1, i, i + 1, 0});
        writer->Add(DeviceActivity{ActivityKind::kKernel, "k", 0, 7, i, i + 1, i, 0});
      }
      if (batch < 3 && !writer->Flush().ok()) _exit(4);
    }
    const char byte = 'x';
    if (write(ready[1], &byte, 1) != 1) _exit(5);
    for (;;)
      pause();
  }
  close(ready[1]);
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  close(ready[0]);
  ASSERT_EQ(kill(child, signal_number), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), signal_number);
  auto trace = ReadShard(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->ranges.size(), 3000u);
  EXPECT_EQ(trace->activities.size(), 3000u);
  EXPECT_EQ(trace->ranges.back().name, "F2");
}

TEST_F(ShardTest, SigkilledProcessKeepsFlushedBatches) {
  KilledChildKeepsFlushedBatches(dir_, SIGKILL);
}
TEST_F(ShardTest, SigtermedProcessKeepsFlushedBatches) {
  KilledChildKeepsFlushedBatches(dir_, SIGTERM);
}

TEST_F(ShardTest, WriterRefusesToFlushInForkedChild) {
  auto writer = ShardWriter::Create(dir_ + "/f.zbshard", SomeProcess());
  ASSERT_TRUE(writer.ok());
  writer->Add(TraceRange{"parent", "", 1, 0, 1, 0});
  ASSERT_TRUE(writer->Flush().ok());
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    writer->Add(TraceRange{"child", "", 1, 0, 1, 0});
    // Must fail, and destroying the writer must not touch the parent's database.
    const bool refused = !writer->Flush().ok();
    _exit(refused ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  writer->Add(TraceRange{"parent2", "", 1, 0, 1, 0});
  ASSERT_TRUE(writer->Flush().ok());
  auto trace = ReadShard(dir_ + "/f.zbshard");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->ranges.size(), 2u);
  EXPECT_EQ(trace->ranges[1].name, "parent2");
}

TEST(CurrentProcessTest, ReadsRankVariables) {
  setenv("RANK", "5", 1);
  setenv("LOCAL_RANK", "1", 1);
  setenv("WORLD_SIZE", "x8", 1);
  TraceProcess process = CurrentProcess();
  EXPECT_EQ(process.rank, 5);
  EXPECT_EQ(process.local_rank, 1);
  EXPECT_EQ(process.world_size, -1);  // not an integer
  EXPECT_EQ(process.pid, getpid());
  EXPECT_FALSE(process.command.empty());
  unsetenv("RANK");
  unsetenv("LOCAL_RANK");
  unsetenv("WORLD_SIZE");
  EXPECT_EQ(CurrentProcess().rank, -1);
}

}  // namespace
}  // namespace zb::profiler
