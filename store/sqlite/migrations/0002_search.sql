-- Full-text search. The word index (unicode61) covers every row; tool rows index an 8,192-char
-- prefix so huge tool outputs do not bloat it. The projection depends only on the row itself,
-- which keeps FTS5's integrity check consistent. Flipping active/compacted never touches the
-- index: archived rows stay searchable.
--
-- The trigram index (substring search for scripts written without spaces) costs about 5x write
-- throughput, so it holds only rows flagged cjk=1 by the writer.
--
-- Indexing is batched: FTS5 writes a new segment for every transaction, so indexing each append
-- in its own commit would double its cost. Rows with id <= fts_state.upto are indexed; newer rows
-- are pending and are indexed in batches by the writer (every 512 appends, before every search,
-- at close). Message ids are assigned under the write lock, so every row at or below the highest
-- committed id is final when a batch runs.
ALTER TABLE messages ADD COLUMN cjk INTEGER NOT NULL DEFAULT 0;
CREATE INDEX messages_cjk ON messages(id) WHERE cjk = 1;

CREATE TABLE fts_state (
  id   INTEGER PRIMARY KEY CHECK (id = 1),
  upto INTEGER NOT NULL
);
INSERT INTO fts_state (id, upto) VALUES (1, 0);

CREATE VIEW messages_fts_src AS
  SELECT id,
         CASE WHEN role = 'tool' THEN substr(content, 1, 8192) ELSE content END AS content,
         tool_name,
         tool_calls
  FROM messages WHERE id <= (SELECT upto FROM fts_state);

CREATE VIEW messages_trigram_src AS
  SELECT id, CASE WHEN role = 'tool' THEN substr(content, 1, 8192) ELSE content END AS content
  FROM messages WHERE cjk = 1 AND id <= (SELECT upto FROM fts_state);

CREATE VIRTUAL TABLE messages_fts USING fts5(
  content, tool_name, tool_calls,
  content = 'messages_fts_src', content_rowid = 'id', tokenize = 'unicode61'
);

CREATE VIRTUAL TABLE messages_trigram USING fts5(
  content,
  content = 'messages_trigram_src', content_rowid = 'id', tokenize = 'trigram'
);

-- Only indexed rows have index entries to remove or replace.
CREATE TRIGGER messages_fts_ad AFTER DELETE ON messages
WHEN old.id <= (SELECT upto FROM fts_state) BEGIN
  INSERT INTO messages_fts(messages_fts, rowid, content, tool_name, tool_calls) VALUES (
    'delete', old.id,
    CASE WHEN old.role = 'tool' THEN substr(old.content, 1, 8192) ELSE old.content END,
    old.tool_name, old.tool_calls);
  INSERT INTO messages_trigram(messages_trigram, rowid, content)
    SELECT 'delete', old.id,
      CASE WHEN old.role = 'tool' THEN substr(old.content, 1, 8192) ELSE old.content END
    WHERE old.cjk = 1;
END;

CREATE TRIGGER messages_fts_au AFTER UPDATE OF content, role, tool_name, tool_calls, cjk ON messages
WHEN old.id <= (SELECT upto FROM fts_state) BEGIN
  INSERT INTO messages_fts(messages_fts, rowid, content, tool_name, tool_calls) VALUES (
    'delete', old.id,
    CASE WHEN old.role = 'tool' THEN substr(old.content, 1, 8192) ELSE old.content END,
    old.tool_name, old.tool_calls);
  INSERT INTO messages_fts(rowid, content, tool_name, tool_calls) VALUES (
    new.id,
    CASE WHEN new.role = 'tool' THEN substr(new.content, 1, 8192) ELSE new.content END,
    new.tool_name, new.tool_calls);
  INSERT INTO messages_trigram(messages_trigram, rowid, content)
    SELECT 'delete', old.id,
      CASE WHEN old.role = 'tool' THEN substr(old.content, 1, 8192) ELSE old.content END
    WHERE old.cjk = 1;
  INSERT INTO messages_trigram(rowid, content)
    SELECT new.id, CASE WHEN new.role = 'tool' THEN substr(new.content, 1, 8192) ELSE new.content END
    WHERE new.cjk = 1;
END;
