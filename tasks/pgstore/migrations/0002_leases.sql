-- Schema 2: leases, so that several a2ad replicas share a database. A
-- task's runner is the replica running its call while it is submitted or
-- working ('' otherwise); a replica holds its lease until `until` (the
-- database's clock), renewed by its heartbeats. A submitted or working
-- task whose runner holds no lease is an orphan, which another replica
-- takes over (tasks.Leases).

ALTER TABLE tasks ADD COLUMN runner text NOT NULL DEFAULT '';

CREATE TABLE leases (
	replica text        PRIMARY KEY,
	until   timestamptz NOT NULL
);
