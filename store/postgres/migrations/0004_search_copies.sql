-- Compaction copies and whole tool bodies (store/sqlite 0006_search_copies.sql): copy_of links
-- a row a compaction re-inserted verbatim to the original it copies (the first row of the
-- chain); searches leave copies out and list them on the original's hit, the display view shows
-- the newest copy. Tool rows longer than the indexed prefix are listed by a partial index so a
-- tool search can read their whole bodies.
ALTER TABLE messages ADD COLUMN copy_of bigint;
CREATE INDEX messages_copy ON messages(copy_of) WHERE copy_of IS NOT NULL;
CREATE INDEX messages_long_tool ON messages(id) WHERE role = 'tool' AND length(content) > 8192;
