-- SPDX-License-Identifier: Apache-2.0
-- zbkit store, migration 10 -> 11: each rank's own memory cap (ScheduleInfo::rank_caps;
-- docs/store.md). The tuner judges a schedule against one cap per rank (a relative cap, "2x",
-- is twice that rank's 1F1B peak, so the ranks' caps differ), but schedules.memory_limit keeps
-- only the largest, and readers had to pretend every rank had it. NULL: the rank's cap is
-- schedules.memory_limit (every schedule stored before, and one cap given for every rank). Only
-- additions.
--
-- Released: never edit this file (schemas/README.md, "Versions and migration").
ALTER TABLE schedule_ranks ADD COLUMN memory_limit REAL
  CHECK (memory_limit IS NULL OR memory_limit >= 0);
