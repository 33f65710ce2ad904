// SPDX-License-Identifier: Apache-2.0
// Placeholder until the profiler tests land.
#include <gtest/gtest.h>
TEST(ProfilerPlaceholder, Builds) { SUCCEED(); }
