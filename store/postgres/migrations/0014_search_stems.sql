-- Word forms meet: each row's tsvector gains the English stems of its content and tool-call
-- words that differ from the words (weight C, at the word's position; the words stay weight D),
-- as SQLite's word index gains its stems column. The tsvector is computed by the writer, so the
-- migration's Go step (reindexWords) recomputes it for every row.
SELECT 1;
