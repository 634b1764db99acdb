package sqlq

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"github.com/spoolhq/spool/store"
)

// SystemPrompt implements store.Sessions.
func (s Store) SystemPrompt(ctx context.Context, id string) (string, error) {
	var prompt sql.NullString
	err := s.db.Read().QueryRow(ctx, s.d.Rebind(`SELECT p.prompt FROM sessions s
		LEFT JOIN system_prompts p ON p.hash = s.system_prompt_hash WHERE s.id = ?`), id).Scan(&prompt)
	if errors.Is(err, sql.ErrNoRows) {
		return "", notFound("session", id)
	}
	if err != nil {
		return "", fmt.Errorf("system prompt of %s: %w", id, err)
	}
	return prompt.String, nil
}

// TitleNumber splits a numbered title "base #N" into base and N.
var TitleNumber = regexp.MustCompile(`^(.*) #(\d+)$`)

// TitleBase is what NextTitle numbers for base: base cleaned, without its own number.
func TitleBase(base string) (string, error) {
	t, err := store.CleanTitle(base)
	if err != nil {
		return "", err
	}
	if m := TitleNumber.FindStringSubmatch(t); m != nil {
		t = m[1]
	}
	if t == "" {
		return "", store.Invalid("title", "empty")
	}
	return t, nil
}

// NextNumbered is NextTitle's answer for base t given the user's titles that are t or may be
// "t #N" (a backend's query may return more; only exact numbered forms of t count): t when
// there are none, else t numbered one past the highest number taken.
func NextNumbered(t string, titles []string) (string, error) {
	if len(titles) == 0 {
		return t, nil
	}
	maxN := 1
	for _, title := range titles {
		if m := TitleNumber.FindStringSubmatch(title); m != nil && m[1] == t {
			if n, err := strconv.Atoi(m[2]); err == nil && n > maxN {
				maxN = n
			}
		}
	}
	next := fmt.Sprintf("%s #%d", t, maxN+1)
	if len([]rune(next)) > store.MaxTitleLength {
		return "", store.Invalid("title", "numbered title %q is longer than %d characters", next, store.MaxTitleLength)
	}
	return next, nil
}
