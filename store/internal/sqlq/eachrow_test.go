package sqlq

import (
	"errors"
	"testing"
)

type fakeRows struct {
	left int
	err  error
}

func (r *fakeRows) Next() bool             { r.left--; return r.left >= 0 }
func (r *fakeRows) Err() error             { return r.err }
func (r *fakeRows) Scan(dest ...any) error { return nil }

func TestEachRow(t *testing.T) {
	t.Parallel()
	stop, broken := errors.New("stop"), errors.New("broken set")
	for _, tc := range []struct {
		name      string
		rows      int
		setErr    error
		failAt    int // row number whose callback fails (0: none)
		wantCalls int
		want      error
	}{
		{"every row", 3, nil, 0, 3, nil},
		{"no rows", 0, nil, 0, 0, nil},
		{"the callback's error stops it", 5, nil, 2, 2, stop},
		{"the set's own error", 2, broken, 0, 2, broken},
	} {
		calls := 0
		err := EachRow(&fakeRows{left: tc.rows, err: tc.setErr}, func(Scanner) error {
			calls++
			if calls == tc.failAt {
				return stop
			}
			return nil
		})
		if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) || calls != tc.wantCalls {
			t.Errorf("%s: err %v, %d calls; want %v, %d calls", tc.name, err, calls, tc.want, tc.wantCalls)
		}
	}
}
