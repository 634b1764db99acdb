package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/spoolhq/spool/store"
)

var _ store.Cooldowns = (*DB)(nil)

// ModelCooldowns implements store.Cooldowns.
func (db *DB) ModelCooldowns(ctx context.Context) ([]store.ModelCooldown, error) {
	rows, err := db.pool.Query(ctx, `SELECT model, until_us FROM model_cooldowns ORDER BY model COLLATE "C"`)
	if err != nil {
		return nil, fmt.Errorf("model cooldowns: %w", err)
	}
	defer rows.Close()
	var out []store.ModelCooldown
	for rows.Next() {
		var c store.ModelCooldown
		var until int64
		if err := rows.Scan(&c.Model, &until); err != nil {
			return nil, fmt.Errorf("model cooldowns: %w", err)
		}
		c.Until = fromMicros(until)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("model cooldowns: %w", err)
	}
	return out, nil
}

// SetModelCooldown implements store.Cooldowns.
func (db *DB) SetModelCooldown(ctx context.Context, model string, until time.Time) error {
	var err error
	if until.IsZero() {
		_, err = db.pool.Exec(ctx, `DELETE FROM model_cooldowns WHERE model = $1`, cleanNUL(model))
	} else {
		_, err = db.pool.Exec(ctx, `INSERT INTO model_cooldowns (model, until_us, updated_at) VALUES ($1, $2, $3)
			ON CONFLICT (model) DO UPDATE SET until_us = excluded.until_us, updated_at = excluded.updated_at`,
			cleanNUL(model), micros(until), micros(time.Now()))
	}
	if err != nil {
		return fmt.Errorf("set cooldown of model %s: %w", model, err)
	}
	return nil
}
