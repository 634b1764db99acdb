-- Fallback cooldowns (provider.fallback_cooldown) that outlive the process that saw the
-- failure: a model that failed is passed over by new turns until until_us (unix microseconds),
-- in every process on this store. model is the agent's key of the model (fallback name or
-- "main", and the model name); a row whose time has passed is ignored and overwritten.
CREATE TABLE model_cooldowns (
    model      TEXT PRIMARY KEY,
    until_us   INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
