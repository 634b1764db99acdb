package sqlq

import (
	"context"
	"fmt"
	"time"

	"github.com/spoolhq/spool/store"
)

var _ store.Cooldowns = Store{}

// ModelCooldowns implements store.Cooldowns.
func (s Store) ModelCooldowns(ctx context.Context) ([]store.ModelCooldown, error) {
	var out []store.ModelCooldown
	err := s.db.Read().Query(ctx, `SELECT model, until_us FROM model_cooldowns ORDER BY `+s.d.Binary("model"), nil,
		func(r Scanner) error {
			var c store.ModelCooldown
			var until int64
			if err := r.Scan(&c.Model, &until); err != nil {
				return err
			}
			c.Until = fromMicros(until)
			out = append(out, c)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("model cooldowns: %w", err)
	}
	return out, nil
}

// SetModelCooldown implements store.Cooldowns.
func (s Store) SetModelCooldown(ctx context.Context, model string, until time.Time) error {
	err := s.db.Write(ctx, false, TxFunc(func(ctx context.Context, x Executor) error {
		if until.IsZero() {
			_, err := x.Exec(ctx, s.d.Rebind(`DELETE FROM model_cooldowns WHERE model = ?`), s.d.Text(model))
			return err
		}
		_, err := x.Exec(ctx, s.d.Rebind(`INSERT INTO model_cooldowns (model, until_us, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (model) DO UPDATE SET until_us = excluded.until_us, updated_at = excluded.updated_at`),
			s.d.Text(model), micros(until), micros(time.Now()))
		return err
	}))
	if err != nil {
		return fmt.Errorf("set cooldown of model %s: %w", model, err)
	}
	return nil
}
