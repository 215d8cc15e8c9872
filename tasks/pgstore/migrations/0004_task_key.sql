-- Schema 4: the idempotency key a task was created with is held in its
-- row (key_id, the message id, and key_hash), unique per owner, instead
-- of a row of idem and its two index entries (issue 31). The keys a later
-- message binds to a task are rows of idem, as before, and so are the
-- keys of tasks written before; the task_keys view reads both. A key is
-- bound in one place only: its binds take turns under an advisory lock
-- of the key and look in both before they bind it.

ALTER TABLE tasks ADD COLUMN key_id bytea, ADD COLUMN key_hash bytea;
CREATE UNIQUE INDEX tasks_key ON tasks (owner, key_id) WHERE key_id IS NOT NULL;

CREATE VIEW task_keys (owner, message_id, task_id, hash) AS
	SELECT owner, message_id, task_id, hash FROM idem
	UNION ALL SELECT owner, key_id, id, key_hash FROM tasks WHERE key_id IS NOT NULL;
