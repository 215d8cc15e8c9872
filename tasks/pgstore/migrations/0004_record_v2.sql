-- Schema 4: record v2 (package record). A message stored in a task (its
-- history, and the status messages of its head and events) leaves out
-- its contextId and taskId where they are the task's, which tasks holds
-- once (issue 25: a context id of up to 256 bytes was repeated in every
-- message and event). Reads fill them in, so rows of both versions read
-- alike and none is rewritten. No table changes; a replica of schema 3
-- would answer such messages without their ids, so a store writes
-- record v1 while one holds a live lease (layout.go).

COMMENT ON TABLE messages IS 'a2ad record v2: a body leaves out the contextId and taskId that are its task''s';
