-- SPDX-License-Identifier: Apache-2.0
-- zbkit store, migration 7 -> 8: what the profiled job was built with, kept with its cost profile
-- (CostProfile::layout and schedule_class in zbkit/schemas/types.h, the `layout` of zb-costs/1 in
-- docs/formats.md §1): its stage placement, its stages per rank and the torch schedule class it
-- ran. `zb tune` proposes by default only orders of that layout. Only additions: three nullable
-- columns; NULL placement = the layout is not known (every profile stored before this version).
-- The placement and the stage count are both set or both NULL; a class only with a layout.
--
-- Released: never edit this file (schemas/README.md, "Versions and migration").
ALTER TABLE cost_profiles ADD COLUMN layout_placement TEXT
  CHECK (layout_placement IS NULL OR layout_placement IN ('loop', 'v'));
ALTER TABLE cost_profiles ADD COLUMN layout_stages_per_rank INTEGER
  CHECK ((layout_stages_per_rank IS NULL) = (layout_placement IS NULL)
         AND (layout_stages_per_rank IS NULL OR layout_stages_per_rank >= 1));
ALTER TABLE cost_profiles ADD COLUMN schedule_class TEXT
  CHECK (schedule_class IS NULL OR (schedule_class <> '' AND layout_placement IS NOT NULL));
