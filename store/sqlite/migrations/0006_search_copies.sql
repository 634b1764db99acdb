-- Search without the noise:
--
-- * copy_of links a row that a compaction re-inserted verbatim (a protected head carried into
--   the next generation) to the original it copies (the first row of the chain, never another
--   copy). Copies are not indexed: a search finds the original once and lists its copies, and
--   the display view shows the newest copy in place of the rows it copies. Only compaction
--   (and import, for bundles that predate the link) set it; the partial index holds only copies.
-- * The tool-call column of the word index holds call_text: tool names and argument values only
--   (written by the writer, the first 8,192 characters, like a tool row's prefix), not the JSON
--   envelope ("id", "type", "function", "arguments", call ids, braces), so "function" no longer
--   matches every call. Arguments that are not JSON are indexed as they are. (It is a column
--   rather than JSON functions in the view: FTS5's integrity check cannot read a content view
--   with subqueries.)
-- * Tool rows still index an 8,192-character prefix; the rows longer than that are listed by a
--   partial index so a tool search can read their full bodies without scanning every row.
--
-- Each index's projection lives in its content view only; the triggers and the batch indexer
-- read those views, so what is indexed and what is deleted from the index are computed the same
-- way. The triggers run BEFORE the change to read the row's indexed form while it still exists,
-- and AFTER an update to index the new one.
ALTER TABLE messages ADD COLUMN copy_of INTEGER;
ALTER TABLE messages ADD COLUMN call_text TEXT;
CREATE INDEX messages_copy ON messages(copy_of) WHERE copy_of IS NOT NULL;
CREATE INDEX messages_long_tool ON messages(id) WHERE role = 'tool' AND length(content) > 8192;

DROP TRIGGER messages_fts_ad;
DROP TRIGGER messages_fts_au;
DROP VIEW messages_fts_src;
DROP VIEW messages_trigram_src;

CREATE VIEW messages_fts_src AS
  SELECT id, CASE WHEN role = 'tool' THEN substr(content, 1, 8192) ELSE content END AS content,
         tool_name, call_text AS tool_calls
  FROM messages WHERE copy_of IS NULL AND id <= (SELECT upto FROM fts_state);

CREATE VIEW messages_trigram_src AS
  SELECT id, CASE WHEN role = 'tool' THEN substr(content, 1, 8192) ELSE content END AS content
  FROM messages WHERE cjk = 1 AND copy_of IS NULL AND id <= (SELECT upto FROM fts_state);

CREATE TRIGGER messages_fts_bd BEFORE DELETE ON messages BEGIN
  INSERT INTO messages_fts(messages_fts, rowid, content, tool_name, tool_calls)
    SELECT 'delete', id, content, tool_name, tool_calls FROM messages_fts_src WHERE id = old.id;
  INSERT INTO messages_trigram(messages_trigram, rowid, content)
    SELECT 'delete', id, content FROM messages_trigram_src WHERE id = old.id;
END;

CREATE TRIGGER messages_fts_bu BEFORE UPDATE OF content, role, tool_name, call_text, cjk, copy_of ON messages BEGIN
  INSERT INTO messages_fts(messages_fts, rowid, content, tool_name, tool_calls)
    SELECT 'delete', id, content, tool_name, tool_calls FROM messages_fts_src WHERE id = old.id;
  INSERT INTO messages_trigram(messages_trigram, rowid, content)
    SELECT 'delete', id, content FROM messages_trigram_src WHERE id = old.id;
END;

CREATE TRIGGER messages_fts_au AFTER UPDATE OF content, role, tool_name, call_text, cjk, copy_of ON messages BEGIN
  INSERT INTO messages_fts(rowid, content, tool_name, tool_calls)
    SELECT id, content, tool_name, tool_calls FROM messages_fts_src WHERE id = new.id;
  INSERT INTO messages_trigram(rowid, content)
    SELECT id, content FROM messages_trigram_src WHERE id = new.id;
END;

-- Re-index from scratch with the new projection: the Go step fills call_text and links the
-- copies already stored (with nothing indexed, its updates touch no index), then indexes every
-- row.
INSERT INTO messages_fts(messages_fts) VALUES ('delete-all');
INSERT INTO messages_trigram(messages_trigram) VALUES ('delete-all');
UPDATE fts_state SET upto = 0;
