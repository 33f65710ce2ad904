// SPDX-License-Identifier: Apache-2.0
// A fixture for store tests: a fresh temporary directory per test and the path of a store file in
// it (not created: Store::Open makes it), removed with everything in it afterwards.
#ifndef ZBKIT_TESTS_SUPPORT_STORE_DIR_H_
#define ZBKIT_TESTS_SUPPORT_STORE_DIR_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace zb::testing_support {

class StoreDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "zbkit_store_test_XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    path_ = dir_ + "/store.db";
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  std::string dir_;
  std::string path_;
};

}  // namespace zb::testing_support

#endif  // ZBKIT_TESTS_SUPPORT_STORE_DIR_H_
