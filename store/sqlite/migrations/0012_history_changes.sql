-- history_changes counts the changes to a session's active history other than appending at its
-- end: every update and delete of one of its messages rows, and an active row inserted below
-- the session's newest active row. The triggers run in every process that writes the file, so
-- a reader that saw a value and sees it again knows, exactly, that the session's active rows
-- are the ones it saw plus rows appended after them (the store's history cache, messages.go).
ALTER TABLE sessions ADD COLUMN history_changes INTEGER NOT NULL DEFAULT 0;

CREATE TRIGGER messages_history_au AFTER UPDATE ON messages BEGIN
  UPDATE sessions SET history_changes = history_changes + 1 WHERE id IN (OLD.session_id, NEW.session_id);
END;

CREATE TRIGGER messages_history_ad AFTER DELETE ON messages BEGIN
  UPDATE sessions SET history_changes = history_changes + 1 WHERE id = OLD.session_id;
END;

-- An append gets the newest id (AUTOINCREMENT), so this only fires for a row inserted with an
-- explicit id below the session's newest active one; the check is one seek of messages_session.
CREATE TRIGGER messages_history_ai AFTER INSERT ON messages
WHEN NEW.active = 1 AND NEW.id < (SELECT max(id) FROM messages WHERE session_id = NEW.session_id AND active = 1)
BEGIN
  UPDATE sessions SET history_changes = history_changes + 1 WHERE id = NEW.session_id;
END;
