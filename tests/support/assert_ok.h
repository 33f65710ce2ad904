// SPDX-License-Identifier: Apache-2.0
// ZB_ASSERT_OK_AND_ASSIGN(lhs, expr): in a test, evaluates an Expected<T>, fails the test (with
// the status message) when it is an error and otherwise moves the value into `lhs`, which may be
// a declaration. ZB_ASSERT_OK(expr): the same for a Status. One definition for the store and
// SQLite tests that each had their own.
#ifndef ZBKIT_TESTS_SUPPORT_ASSERT_OK_H_
#define ZBKIT_TESTS_SUPPORT_ASSERT_OK_H_

#include <gtest/gtest.h>

#include <utility>

#include "zbkit/schemas/status.h"

#define ZB_ASSERT_OK_AND_ASSIGN(lhs, expr) \
  ZB_ASSERT_OK_AND_ASSIGN_IMPL(ZB_STATUS_CONCAT(zb_result_, __LINE__), lhs, expr)
#define ZB_ASSERT_OK_AND_ASSIGN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  ASSERT_TRUE(tmp.ok()) << tmp.status().message();   \
  lhs = std::move(tmp).value()

#define ZB_ASSERT_OK(expr)                                \
  do {                                                    \
    const ::zb::Status zb_status_ = (expr);               \
    ASSERT_TRUE(zb_status_.ok()) << zb_status_.message(); \
  } while (0)

#endif  // ZBKIT_TESTS_SUPPORT_ASSERT_OK_H_
