-- Rows of messages up to a page's size are stored inline and uncompressed (toast_tuple_target
-- 8160 instead of about 2 kB): a long message's tsvector was compressed or moved to the TOAST
-- table, and a search that tests or ranks it (the phrase check GIN leaves to the heap, the
-- newest-matches window, ts_rank) decompressed it or fetched its chunks for every candidate row.
-- On the benchmark's 66,000 messages the heap grows by about as much as the TOAST table
-- shrinks, and the server time of a common word's window halves. Applies to rows written from
-- now on.
ALTER TABLE messages SET (toast_tuple_target = 8160);
