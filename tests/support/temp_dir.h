// SPDX-License-Identifier: Apache-2.0
// A temporary directory for one test body, removed with everything in it when it goes out of
// scope; Path(name) names a file in it.
#ifndef ZBKIT_TESTS_SUPPORT_TEMP_DIR_H_
#define ZBKIT_TESTS_SUPPORT_TEMP_DIR_H_

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace zb::testing_support {

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/zbkit_test_XXXXXX";
    const char* made = ::mkdtemp(pattern);
    path_ = made != nullptr ? made : "";
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string Path(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }  // the directory itself

 private:
  std::string path_;
};

}  // namespace zb::testing_support

#endif  // ZBKIT_TESTS_SUPPORT_TEMP_DIR_H_
