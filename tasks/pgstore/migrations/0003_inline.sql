-- Schema 3: a new task's first events, history messages and artifacts
-- are held in its row, in the record format of their tables' bodies, when
-- they are small (issue 31: a row and an index entry fewer for each, in
-- the WAL of every send). events0 holds events 1, 2, ...; messages0
-- messages 0, 1, ...; artifacts0 artifact rows (i, 0), an element NULL
-- once a later write replaced that artifact with a row of artifacts.
-- What comes later is written to the tables, as before; the task_* views
-- read both, as the tables were read, and older tasks have only rows.

ALTER TABLE tasks ADD COLUMN events0 bytea[], ADD COLUMN messages0 bytea[], ADD COLUMN artifacts0 bytea[];

CREATE VIEW task_events (task_id, seq, body) AS
	SELECT task_id, seq, body FROM events
	UNION ALL SELECT t.id, x.seq, x.body FROM tasks t, unnest(t.events0) WITH ORDINALITY AS x(body, seq);

CREATE VIEW task_messages (task_id, n, body) AS
	SELECT task_id, n, body FROM messages
	UNION ALL SELECT t.id, (x.n - 1)::integer, x.body FROM tasks t, unnest(t.messages0) WITH ORDINALITY AS x(body, n);

CREATE VIEW task_artifacts (task_id, i, j, body) AS
	SELECT task_id, i, j, body FROM artifacts
	UNION ALL SELECT t.id, (x.i - 1)::integer, 0, x.body FROM tasks t, unnest(t.artifacts0) WITH ORDINALITY AS x(body, i)
		WHERE x.body IS NOT NULL;

-- While a replica of schema 2 holds a lease, newer ones write as it did,
-- which it reads: each lease says the schema of the a2ad holding it, 2
-- for one that predates the column.
ALTER TABLE leases ADD COLUMN schema integer NOT NULL DEFAULT 2;
