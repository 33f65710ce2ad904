-- SPDX-License-Identifier: Apache-2.0
-- zbkit store, migration 13 -> 14: the data-parallel work of a pipeline's stages
-- (docs/data-parallel.md §5). cost_profile_stages.reduce_ns (the stage's gradient reduction per
-- step), unshard_ns (FSDP's all-gather of its parameters) and unsharded (the memory the gathered
-- parameters add), StageCost::reduce/unshard/unsharded; 0 for stages stored before and for
-- pipelines without data parallelism. cost_profiles.reduce_wait: when the ranks wait for the
-- reductions (CostProfile::reduce_wait, 'in_place' or 'step_end'); NULL is in_place. Only
-- additions.
--
-- Released: never edit this file (schemas/README.md, "Versions and migration").
ALTER TABLE cost_profile_stages ADD COLUMN reduce_ns INTEGER NOT NULL DEFAULT 0
  CHECK (reduce_ns >= 0);
ALTER TABLE cost_profile_stages ADD COLUMN unshard_ns INTEGER NOT NULL DEFAULT 0
  CHECK (unshard_ns >= 0);
ALTER TABLE cost_profile_stages ADD COLUMN unsharded REAL NOT NULL DEFAULT 0
  CHECK (unsharded >= 0);
ALTER TABLE cost_profiles ADD COLUMN reduce_wait TEXT
  CHECK (reduce_wait IS NULL OR reduce_wait IN ('in_place', 'step_end'));
