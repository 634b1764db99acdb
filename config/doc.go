// Package config loads spool's settings in three layers: built-in defaults, then the YAML file
// $SPOOL_HOME/config.yaml (SPOOL_HOME defaults to ~/.spool; the --home flag overrides it), then
// SPOOL_* environment variables (SPOOL_COMPRESSION_THRESHOLD for compression.threshold). Command
// flags are applied last by the caller.
//
// Key names follow Hermes Agent where it has one (compression.threshold,
// compression.tail_mode, auxiliary.compression.model, ...). Unknown keys and bad values are
// errors, never ignored: each names the key and where it came from (file:line or the variable).
package config
