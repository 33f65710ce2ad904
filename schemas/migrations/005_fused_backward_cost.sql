-- SPDX-License-Identifier: Apache-2.0
-- zbkit store, migration 4 -> 5: a stage's cost may carry its fused backward's duration
-- (StageCost::bw), measured where a profile holds both split and fused backwards. Only an
-- addition: 0 means "not measured", and a BW op then lasts B + W as before.
ALTER TABLE cost_profile_stages ADD COLUMN bw_ns INTEGER NOT NULL DEFAULT 0 CHECK (bw_ns >= 0);
