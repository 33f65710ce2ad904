-- SPDX-License-Identifier: Apache-2.0
-- zbkit store, migration 12 -> 13: a pipeline inside data parallelism (docs/data-parallel.md §3).
-- cost_profiles.data_parallel: how many data-parallel replicas of each pipeline rank the profiled
-- job ran (CostProfile::data_parallel, zb-costs/1 "data_parallel"), the replicas' ops folded into
-- the one pipeline's costs. NULL: not known (every profile stored before, and traces that do not
-- say). Only additions.
--
-- Released: never edit this file (schemas/README.md, "Versions and migration").
ALTER TABLE cost_profiles ADD COLUMN data_parallel INTEGER
  CHECK (data_parallel IS NULL OR data_parallel >= 1);
