-- SPDX-License-Identifier: Apache-2.0
-- zbkit store, migration 14 -> 15: the gradients a stage's data-parallel reduction takes in per
-- step (docs/data-parallel.md §3), cost_profile_stages.reduced (StageCost::reduced, in the
-- profile's memory unit); 0 for stages stored before and where nothing is reduced. Only an
-- addition.
--
-- Released: never edit this file (schemas/README.md, "Versions and migration").
ALTER TABLE cost_profile_stages ADD COLUMN reduced REAL NOT NULL DEFAULT 0
  CHECK (reduced >= 0);
