-- SPDX-License-Identifier: Apache-2.0
-- zbkit store, migration 3 -> 4: each timeline op says which iteration (training step) it
-- belongs to (TimelineOp::iteration), so that a measured run of several iterations keeps its
-- iteration boundaries. Only an addition: ops stored before are iteration 0, as are the ops of a
-- predicted timeline (one iteration). ADD COLUMN works on a WITHOUT ROWID table and checks the
-- CHECK against the default; nothing is rebuilt.
ALTER TABLE timeline_ops ADD COLUMN iteration INTEGER NOT NULL DEFAULT 0 CHECK (iteration >= 0);
