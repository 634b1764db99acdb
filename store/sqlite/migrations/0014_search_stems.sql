-- Word forms meet: the word index gains a fourth column, stems, holding the English stems of the
-- row's words that differ from the words (tested, tests, testing: test), computed by the writer
-- (fts.StemText over the indexed content and the tool-call text) into messages.stem_text. A
-- query's bare words match their stem there or in the written words; phrases, identifiers and
-- prefixes match the written words only (store/sqlite/search.go, ftsExpr).
--
-- FTS5 cannot add a column to a table, so the word index is made again and every row indexed
-- anew by the Go step, which fills stem_text first (the index is empty meanwhile, so those
-- updates touch no index). The substring index is rebuilt with it, since both follow
-- fts_state.upto.
ALTER TABLE messages ADD COLUMN stem_text TEXT;

DROP TRIGGER messages_fts_bd;
DROP TRIGGER messages_fts_bu;
DROP TRIGGER messages_fts_au;
DROP VIEW messages_fts_src;
DROP TABLE messages_fts;

CREATE VIEW messages_fts_src AS
  SELECT id, CASE WHEN role = 'tool' THEN substr(content, 1, 8192) ELSE content END AS content,
         tool_name, call_text AS tool_calls, stem_text AS stems
  FROM messages WHERE copy_of IS NULL AND id <= (SELECT upto FROM fts_state);

CREATE VIRTUAL TABLE messages_fts USING fts5(
  content, tool_name, tool_calls, stems,
  content = 'messages_fts_src', content_rowid = 'id', tokenize = 'unicode61'
);

CREATE TRIGGER messages_fts_bd BEFORE DELETE ON messages BEGIN
  INSERT INTO messages_fts(messages_fts, rowid, content, tool_name, tool_calls, stems)
    SELECT 'delete', id, content, tool_name, tool_calls, stems FROM messages_fts_src WHERE id = old.id;
  INSERT INTO messages_trigram(messages_trigram, rowid, content)
    SELECT 'delete', id, content FROM messages_trigram_src WHERE id = old.id;
END;

CREATE TRIGGER messages_fts_bu BEFORE UPDATE OF content, role, tool_name, call_text, stem_text, cjk, copy_of ON messages BEGIN
  INSERT INTO messages_fts(messages_fts, rowid, content, tool_name, tool_calls, stems)
    SELECT 'delete', id, content, tool_name, tool_calls, stems FROM messages_fts_src WHERE id = old.id;
  INSERT INTO messages_trigram(messages_trigram, rowid, content)
    SELECT 'delete', id, content FROM messages_trigram_src WHERE id = old.id;
END;

CREATE TRIGGER messages_fts_au AFTER UPDATE OF content, role, tool_name, call_text, stem_text, cjk, copy_of ON messages BEGIN
  INSERT INTO messages_fts(rowid, content, tool_name, tool_calls, stems)
    SELECT id, content, tool_name, tool_calls, stems FROM messages_fts_src WHERE id = new.id;
  INSERT INTO messages_trigram(rowid, content)
    SELECT id, content FROM messages_trigram_src WHERE id = new.id;
END;

INSERT INTO messages_trigram(messages_trigram) VALUES ('delete-all');
UPDATE fts_state SET upto = 0;
