-- SPDX-License-Identifier: Apache-2.0
-- zbkit store, migration 8 -> 9: what a measured op did inside its span (TimelineOp::busy,
-- kernels and name in zbkit/schemas/types.h; docs/zbview.md §6): the device's busy
-- time (the union of its kernels' intervals; NULL = not known apart from the span, so the whole
-- span is busy, as for every op stored before), how many kernels were attributed to it, and the
-- range name it was recognized from (NULL = none, as for predicted ops). Only additions.
--
-- Released: never edit this file (schemas/README.md, "Versions and migration").
ALTER TABLE timeline_ops ADD COLUMN busy_ns INTEGER
  CHECK (busy_ns IS NULL OR (busy_ns >= 0 AND busy_ns <= end_ns - start_ns));
ALTER TABLE timeline_ops ADD COLUMN kernels INTEGER NOT NULL DEFAULT 0 CHECK (kernels >= 0);
ALTER TABLE timeline_ops ADD COLUMN name TEXT;
