-- Schema 1 of a2ad's PostgreSQL store. Strings a client chose (ids,
-- owners, context and message ids) are bytea: they may hold any byte,
-- NUL included, which text refuses, and bytea compares byte by byte, as
-- the listing's order wants. Times are Unix nanoseconds (bigint), as
-- tasks.ListTime and the cursors count them.

CREATE TABLE tasks (
	id          bytea    PRIMARY KEY,
	owner       bytea    NOT NULL,
	context_id  bytea    NOT NULL,
	state       text     NOT NULL,
	function_id bytea    NOT NULL,
	terminal    boolean  NOT NULL,
	version     bigint   NOT NULL, -- optimistic concurrency: +1 on every write
	seq         bigint   NOT NULL, -- the sequence of the task's last event
	list_at     bigint   NOT NULL, -- tasks.ListTime
	status_at   bigint   NOT NULL, -- tasks.StatusTime
	updated_at  bigint   NOT NULL,
	history_len integer  NOT NULL,
	art_ids     bytea[]  NOT NULL, -- the artifacts' index: ids,
	art_chunks  integer[] NOT NULL, -- rows in artifacts,
	art_bytes   bigint[] NOT NULL, -- tasks.PartBytes,
	art_stored  bigint[] NOT NULL, -- and what their rows take
	stored      bigint   NOT NULL, -- what the task takes, for the quotas
	head        bytea    NOT NULL, -- the record without what grows (package record)
	input       bytea              -- the current call's input, JSON
);
-- Listing (tasks.Store.List): an owner's tasks by list time and id, with
-- or without a context or state filter; the cursor is a row comparison.
CREATE INDEX tasks_listing ON tasks (owner, list_at, id);
CREATE INDEX tasks_listing_context ON tasks (owner, context_id, list_at, id);
CREATE INDEX tasks_listing_state ON tasks (owner, state, list_at, id);
-- The operator's view of one owner's tasks, by id.
CREATE INDEX tasks_owner ON tasks (owner, id);
-- The non-terminal set (Active, ActiveStates, recovery).
CREATE INDEX tasks_active ON tasks (id) WHERE NOT terminal;
-- Retention (Expire): terminal tasks by age.
CREATE INDEX tasks_expiry ON tasks (updated_at, id) WHERE terminal;

-- A task's events, its stream: seq rises by one from 1.
CREATE TABLE events (
	task_id bytea  NOT NULL,
	seq     bigint NOT NULL,
	body    bytea  NOT NULL,
	PRIMARY KEY (task_id, seq)
);

-- A task's history: message n, from 0.
CREATE TABLE messages (
	task_id bytea   NOT NULL,
	n       integer NOT NULL,
	body    bytea   NOT NULL,
	PRIMARY KEY (task_id, n)
);

-- A task's artifacts: artifact i is row (i, 0), and the parts appended to
-- it rows (i, 1), (i, 2), ...
CREATE TABLE artifacts (
	task_id bytea   NOT NULL,
	i       integer NOT NULL,
	j       integer NOT NULL,
	body    bytea   NOT NULL,
	PRIMARY KEY (task_id, i, j)
);

-- Idempotency keys: an owner's messageId, bound to a task, with the hash
-- of its message.
CREATE TABLE idem (
	owner      bytea NOT NULL,
	message_id bytea NOT NULL,
	task_id    bytea NOT NULL,
	hash       bytea NOT NULL,
	PRIMARY KEY (owner, message_id)
);
CREATE INDEX idem_task ON idem (task_id);

-- What each owner stores, for the quotas, in a few shards per owner so
-- that the writes of one owner do not all wait for one row; an owner's
-- usage is the sum of its shards.
CREATE TABLE usage (
	owner bytea    NOT NULL,
	shard smallint NOT NULL,
	tasks bigint   NOT NULL,
	bytes bigint   NOT NULL,
	PRIMARY KEY (owner, shard)
);

-- The push outbox: at most one delivery per webhook of a task, reporting
-- the transition at seq. claimed_by (a store instance) holds a delivery
-- until claimed_until, so that one replica sends it at a time.
CREATE SEQUENCE outbox_ids;
CREATE TABLE outbox (
	id            bigint  PRIMARY KEY,
	task_id       bytea   NOT NULL,
	config_id     bytea   NOT NULL,
	seq           bigint  NOT NULL,
	attempts      integer NOT NULL,
	next_at       bigint  NOT NULL,
	last_error    bytea   NOT NULL,
	created_at    bigint  NOT NULL,
	claimed_by    bytea,
	claimed_until bigint  NOT NULL,
	UNIQUE (task_id, config_id)
);
CREATE INDEX outbox_due ON outbox (next_at, id);

-- Deliveries given up on; a dead letter keeps its delivery's id.
CREATE TABLE dead_letters (
	id         bigint  PRIMARY KEY,
	task_id    bytea   NOT NULL,
	config_id  bytea   NOT NULL,
	url        bytea   NOT NULL,
	attempts   integer NOT NULL,
	last_error bytea   NOT NULL,
	created_at bigint  NOT NULL,
	dead_at    bigint  NOT NULL
);
