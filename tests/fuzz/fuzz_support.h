// SPDX-License-Identifier: Apache-2.0
// What the fuzz targets share: the input as text, as a file (for the readers that take a path:
// SQLite stores, shards, Nsight exports, gzip traces), and the check that turns a broken
// invariant into a crash the fuzzer keeps. docs/reliability.md says how they are run.
#ifndef ZBKIT_TESTS_FUZZ_FUZZ_SUPPORT_H_
#define ZBKIT_TESTS_FUZZ_FUZZ_SUPPORT_H_

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace zb::fuzz {

inline std::string AsText(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// A property that must hold for every input the reader accepted (a round trip, say). Aborting
// makes libFuzzer keep the input; in the replay build it fails the test.
inline void Require(bool holds, const char* what) {
  if (!holds) {
    std::fprintf(stderr, "fuzz property violated: %s\n", what);
    std::abort();
  }
}

// The input written to a file of this process's own (in /dev/shm when it exists: the fuzzer
// rewrites it for every input), removed with its SQLite side files when this object goes.
class InputFile {
 public:
  InputFile(const uint8_t* data, size_t size, const char* suffix) {
    const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    path_ = std::string(dir) + "/zbkit-fuzz-" + std::to_string(getpid()) + suffix;
    Remove();
    if (FILE* file = std::fopen(path_.c_str(), "wb")) {
      if (size > 0) std::fwrite(data, 1, size, file);
      std::fclose(file);
    }
  }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile() { Remove(); }
  const std::string& path() const { return path_; }

 private:
  void Remove() const {
    for (const char* side : {"", "-wal", "-shm", "-journal"}) {
      std::remove((path_ + side).c_str());
    }
  }
  std::string path_;
};

}  // namespace zb::fuzz

#endif  // ZBKIT_TESTS_FUZZ_FUZZ_SUPPORT_H_
