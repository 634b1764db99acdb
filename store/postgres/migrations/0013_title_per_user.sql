-- A title is unique among one principal's sessions (user_id), not across principals: one
-- principal's titles neither block nor number another's.
DROP INDEX sessions_title;
CREATE UNIQUE INDEX sessions_title ON sessions(user_id, title) WHERE title IS NOT NULL;
