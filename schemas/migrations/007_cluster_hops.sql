-- SPDX-License-Identifier: Apache-2.0
-- zbkit store, migration 6 -> 7: per-hop communication times measured on a cluster (`zb rehearse
-- --store`, HopMeasurement in zbkit/schemas/store.h), which `zb tune --comm cluster` uses in place
-- of a profile's comm. Only additions: two new tables, nothing existing changes.
--  - hop_measurements: one row per measurement, hanging off its cluster (deleted with it), with
--    the message size it was measured with and what measured it;
--  - measured_hops: the median one-way time of each neighbouring pair of ranks it measured.
-- num_hops is kept in hop_measurements so that a reader can tell a measurement is complete;
-- RecordHops writes it in the same transaction as the hops.
--
-- Released: never edit this file (schemas/README.md, "Versions and migration").
CREATE TABLE hop_measurements (
  id             INTEGER PRIMARY KEY,
  cluster_id     INTEGER NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
  message_bytes  INTEGER NOT NULL CHECK (message_bytes >= 1),
  source         TEXT    NOT NULL CHECK (source <> ''),
  num_hops       INTEGER NOT NULL CHECK (num_hops >= 1),
  measured_at    TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  schema_version INTEGER NOT NULL CHECK (schema_version >= 1)
);
CREATE INDEX hop_measurements_by_cluster ON hop_measurements (cluster_id, id);

CREATE TABLE measured_hops (
  measurement_id INTEGER NOT NULL REFERENCES hop_measurements (id) ON DELETE CASCADE,
  from_rank      INTEGER NOT NULL CHECK (from_rank >= 0),
  to_rank        INTEGER NOT NULL CHECK (to_rank >= 0 AND to_rank <> from_rank),
  time_ns        INTEGER NOT NULL CHECK (time_ns >= 0),
  PRIMARY KEY (measurement_id, from_rank, to_rank)
) WITHOUT ROWID;
