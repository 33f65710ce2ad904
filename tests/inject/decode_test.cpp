// SPDX-License-Identifier: Apache-2.0
// CUPTI activity decoding on CPU: buffers packed by hand with the CUDA 13.0 record structs and
// walked by the real cuptiActivityGetNextRecord of libcupti (which needs no driver).
#include <cupti.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "activity_decode.h"

namespace zb::profiler::inject {
namespace {

// An 8-byte aligned buffer that records are appended to back to back, as CUPTI lays them out.
class PackedBuffer {
 public:
  PackedBuffer() : storage_(8192 / sizeof(uint64_t), 0) {}
  template <typename T>
  void Append(const T& record) {
    static_assert(sizeof(T) % 8 == 0);
    ASSERT_LE(size_ + sizeof(T), storage_.size() * sizeof(uint64_t));
    std::memcpy(data() + size_, &record, sizeof(T));
    size_ += sizeof(T);
  }
  uint8_t* data() { return reinterpret_cast<uint8_t*>(storage_.data()); }
  size_t size() const { return size_; }

 private:
  std::vector<uint64_t> storage_;
  size_t size_ = 0;
};

CUpti_ActivityKernel10 Kernel(const char* name, uint64_t start, uint64_t end, uint32_t corr) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start;
  k.end = end;
  k.deviceId = 3;
  k.contextId = 1;
  k.streamId = 7;
  k.correlationId = corr;
  k.name = name;
  k.gridX = 128;
  k.blockX = 256;
  return k;
}

CUpti_ActivityMarker2 Marker(CUpti_ActivityFlag flag, uint32_t id, uint64_t time, const char* name,
                             const char* domain) {
  CUpti_ActivityMarker2 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MARKER;
  m.flags = flag;
  m.timestamp = time;
  m.id = id;
  m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  m.objectId.pt.processId = 100;
  m.objectId.pt.threadId = 4242;
  m.name = name;
  m.domain = domain;
  return m;
}

CUpti_ActivityMemory4 Memory(CUpti_ActivityMemoryOperationType op, CUpti_ActivityMemoryKind kind,
                             uint64_t bytes, uint64_t time) {
  CUpti_ActivityMemory4 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  m.memoryOperationType = op;
  m.memoryKind = kind;
  m.bytes = bytes;
  m.timestamp = time;
  m.deviceId = 1;
  m.address = 0xdead0000;
  return m;
}

TEST(ActivityDecodeTest, RecordSizesAreThoseOfCuda13) {
  // The layouts activity_decode.cpp pins with static_asserts, and the header it was built with.
  EXPECT_EQ(sizeof(CUpti_ActivityKernel10), 216U);
  EXPECT_EQ(sizeof(CUpti_ActivityMarker2), 56U);
  EXPECT_EQ(sizeof(CUpti_ActivityAPI), 40U);
  EXPECT_EQ(sizeof(CUpti_ActivityMemory4), 128U);
  EXPECT_EQ(CUPTI_API_VERSION / 10000, 13);
  uint32_t version = 0;
  ASSERT_EQ(cuptiGetVersion(&version), CUPTI_SUCCESS);
  EXPECT_EQ(version / 10000, 13U) << "libcupti " << version;
}

// The layout of reference A12 ([Kernel10 @0][Marker2 @216][ActivityAPI @272], 312 bytes) plus
// Memory4: every field the shard keeps round-trips, then the walk ends with MAX_LIMIT_REACHED.
TEST(ActivityDecodeTest, HandPackedKernelMarkerApiMemory) {
  static const char kKernelName[] = "_Z10gemm_kernelPfS_S_";
  PackedBuffer buffer;
  buffer.Append(Kernel(kKernelName, 1000, 5000, 42));
  buffer.Append(Marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 9, 900, "F0.0.0", "zb"));
  CUpti_ActivityAPI api{};
  api.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  api.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  api.start = 950;
  api.end = 990;
  api.processId = 100;
  api.threadId = 4242;
  api.correlationId = 42;
  buffer.Append(api);
  ASSERT_EQ(buffer.size(), 312U);  // the offsets A12 was checked with
  buffer.Append(Memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
                       CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 1 << 20, 800));
  buffer.Append(Marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 9, 6000, nullptr, nullptr));

  ActivityDecoder decoder;
  DecodedActivities out;
  decoder.Decode(buffer.data(), buffer.size(), &out);
  EXPECT_EQ(out.status, CUPTI_ERROR_MAX_LIMIT_REACHED);
  EXPECT_FALSE(out.incomplete);
  EXPECT_EQ(out.records, 5);

  ASSERT_EQ(out.activities.size(), 1U);
  const DeviceActivity& k = out.activities[0];
  EXPECT_EQ(k.kind, ActivityKind::kKernel);
  EXPECT_EQ(k.name, kKernelName);
  EXPECT_EQ(k.device, 3);
  EXPECT_EQ(k.stream, 7);
  EXPECT_EQ(k.start, 1000);
  EXPECT_EQ(k.end, 5000);
  EXPECT_EQ(k.correlation, 42);
  EXPECT_EQ(k.bytes, 0);

  ASSERT_EQ(out.launches.size(), 1U);
  EXPECT_EQ(out.launches[0].correlation, 42);
  EXPECT_EQ(out.launches[0].thread, 4242);
  EXPECT_EQ(out.launches[0].time, 950);

  ASSERT_EQ(out.memory.size(), 1U);
  EXPECT_EQ(out.memory[0].time, 800);
  EXPECT_EQ(out.memory[0].bytes, 1 << 20);
  EXPECT_EQ(out.memory[0].device, 1);

  ASSERT_EQ(out.markers.size(), 1U);  // START and END paired by id
  EXPECT_EQ(out.markers[0].name, "F0.0.0");
  EXPECT_EQ(out.markers[0].domain, "zb");
  EXPECT_EQ(out.markers[0].thread, 4242);
  EXPECT_EQ(out.markers[0].start, 900);
  EXPECT_EQ(out.markers[0].end, 6000);
}

TEST(ActivityDecodeTest, CopiesSetsSyncsAndCorrelations) {
  PackedBuffer buffer;
  CUpti_ActivityMemcpy6 copy{};
  copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  copy.bytes = 4096;
  copy.start = 10;
  copy.end = 20;
  copy.deviceId = 2;
  copy.streamId = 13;
  copy.correlationId = 77;
  buffer.Append(copy);
  CUpti_ActivityMemcpyPtoP4 peer{};
  peer.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
  peer.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  peer.bytes = 1 << 16;
  peer.start = 30;
  peer.end = 45;
  peer.deviceId = 0;
  peer.streamId = 14;
  peer.srcDeviceId = 0;
  peer.dstDeviceId = 1;
  peer.correlationId = 78;
  buffer.Append(peer);
  CUpti_ActivityMemset4 set{};
  set.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  set.value = 0;
  set.bytes = 512;
  set.start = 50;
  set.end = 55;
  set.deviceId = 2;
  set.streamId = 13;
  set.correlationId = 79;
  buffer.Append(set);
  CUpti_ActivitySynchronization2 sync{};
  sync.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  sync.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  sync.start = 60;
  sync.end = 90;
  sync.correlationId = 80;
  sync.streamId = 13;
  buffer.Append(sync);
  CUpti_ActivityExternalCorrelation external{};
  external.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  external.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;
  external.externalId = 555;
  external.correlationId = 81;
  buffer.Append(external);
  // Release, pinned host memory (skipped), an untimed kernel (counted, not stored).
  buffer.Append(Memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE,
                       CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 1 << 20, 100));
  buffer.Append(Memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
                       CUPTI_ACTIVITY_MEMORY_KIND_PINNED, 64, 101));
  buffer.Append(Kernel("untimed", 0, 0, 82));
  CUpti_ActivityAPI driver{};
  driver.kind = CUPTI_ACTIVITY_KIND_DRIVER;
  driver.cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx;
  driver.start = 5;
  driver.end = 6;
  driver.threadId = 99;
  driver.correlationId = 83;
  buffer.Append(driver);

  ActivityDecoder decoder;
  DecodedActivities out;
  decoder.Decode(buffer.data(), buffer.size(), &out);
  EXPECT_EQ(out.status, CUPTI_ERROR_MAX_LIMIT_REACHED);
  EXPECT_FALSE(out.incomplete);
  EXPECT_EQ(out.records, 9);

  ASSERT_EQ(out.activities.size(), 3U);
  EXPECT_EQ(out.activities[0].kind, ActivityKind::kMemcpy);
  EXPECT_EQ(out.activities[0].name, "memcpy HtoD");
  EXPECT_EQ(out.activities[0].bytes, 4096);
  EXPECT_EQ(out.activities[0].device, 2);
  EXPECT_EQ(out.activities[0].stream, 13);
  EXPECT_EQ(out.activities[0].start, 10);
  EXPECT_EQ(out.activities[0].end, 20);
  EXPECT_EQ(out.activities[0].correlation, 77);
  EXPECT_EQ(out.activities[1].kind, ActivityKind::kMemcpy);
  EXPECT_EQ(out.activities[1].name, "memcpy PtoP");
  EXPECT_EQ(out.activities[1].bytes, 1 << 16);
  EXPECT_EQ(out.activities[1].correlation, 78);
  EXPECT_EQ(out.activities[2].kind, ActivityKind::kMemset);
  EXPECT_EQ(out.activities[2].name, "memset");
  EXPECT_EQ(out.activities[2].bytes, 512);
  EXPECT_EQ(out.activities[2].start, 50);
  EXPECT_EQ(out.activities[2].correlation, 79);

  ASSERT_EQ(out.syncs.size(), 1U);
  EXPECT_EQ(out.syncs[0].type, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE);
  EXPECT_EQ(out.syncs[0].start, 60);
  EXPECT_EQ(out.syncs[0].end, 90);
  EXPECT_EQ(out.syncs[0].correlation, 80);
  ASSERT_EQ(out.external.size(), 1U);
  EXPECT_EQ(out.external[0].external_id, 555);
  EXPECT_EQ(out.external[0].correlation, 81);

  ASSERT_EQ(out.memory.size(), 1U);
  EXPECT_EQ(out.memory[0].bytes, -(1 << 20));  // a release is negative
  EXPECT_EQ(out.untimed_kernels, 1);
  EXPECT_EQ(out.skipped, 1);  // the pinned allocation

  ASSERT_EQ(out.launches.size(), 1U);
  EXPECT_EQ(out.launches[0].correlation, 83);
  EXPECT_EQ(out.launches[0].thread, 99);
}

TEST(ActivityDecodeTest, MarkerPairsAcrossBuffersAndInstantaneousMarks) {
  ActivityDecoder decoder;
  PackedBuffer first;
  first.Append(Marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 1, 100, "B3.0.0", ""));
  first.Append(Marker(CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 2, 150, "tick", "NCCL"));
  DecodedActivities out;
  decoder.Decode(first.data(), first.size(), &out);
  ASSERT_EQ(out.markers.size(), 1U);
  EXPECT_EQ(out.markers[0].name, "tick");
  EXPECT_EQ(out.markers[0].start, out.markers[0].end);

  PackedBuffer second;
  second.Append(Marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 1, 400, nullptr, nullptr));
  second.Append(Marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 5, 410, nullptr, nullptr));  // unmatched
  out.Clear();
  decoder.Decode(second.data(), second.size(), &out);
  ASSERT_EQ(out.markers.size(), 1U);
  EXPECT_EQ(out.markers[0].name, "B3.0.0");
  EXPECT_EQ(out.markers[0].start, 100);
  EXPECT_EQ(out.markers[0].end, 400);
  EXPECT_EQ(out.skipped, 1);
}

TEST(ActivityDecodeTest, EmptyAndTruncatedBuffers) {
  ActivityDecoder decoder;
  DecodedActivities out;
  decoder.Decode(nullptr, 0, &out);
  EXPECT_EQ(out.records, 0);
  EXPECT_FALSE(out.incomplete);

  // validSize ends inside the second record: the first decodes, the walk stops cleanly.
  PackedBuffer buffer;
  buffer.Append(Kernel("k", 1, 2, 1));
  buffer.Append(Kernel("k", 3, 4, 2));
  out.Clear();
  decoder.Decode(buffer.data(), buffer.size() - 100, &out);
  ASSERT_GE(out.activities.size(), 1U);
  EXPECT_EQ(out.activities[0].correlation, 1);
  EXPECT_LE(out.activities.size(), 1U);
}

TEST(ActivityDecodeTest, MemcpyNames) {
  EXPECT_STREQ(MemcpyName(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH), "memcpy DtoH");
  EXPECT_STREQ(MemcpyName(CUPTI_ACTIVITY_MEMCPY_KIND_DTOD), "memcpy DtoD");
  EXPECT_STREQ(MemcpyName(999), "memcpy");
}

}  // namespace
}  // namespace zb::profiler::inject
