-- The fallback model (provider.fallbacks[].name) that answered a call when the main model had
-- failed; '' for the main model and for calls recorded before fallbacks existed.
ALTER TABLE requests ADD COLUMN fallback TEXT NOT NULL DEFAULT '';
