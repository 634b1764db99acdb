-- The search indexes take new rows through GIN's pending list again (fastupdate = on), kept
-- small (256 kB): with fastupdate = off every append inserted each of its words into the GIN
-- tree, about 20 kB of WAL per one-row append on a fresh index and 47 kB once it held 6,000
-- messages (full-page writes off; more with them), against about 5 kB through the pending list,
-- and two to three times the server time. Searches read the pending list as well as the tree,
-- so every committed row is found either way; the list is merged into the tree in bulk by the
-- append that fills it or by autovacuum, and its 256 kB bound keeps what a search scans small.
ALTER INDEX messages_tsv SET (fastupdate = on, gin_pending_list_limit = 256);
ALTER INDEX messages_trgm SET (fastupdate = on, gin_pending_list_limit = 256);
