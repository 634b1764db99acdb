package sqlq

import "testing"

func TestRebind(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in, sqlite, postgres string
	}{
		{"none", "SELECT 1", "SELECT 1", "SELECT 1"},
		{"numbered in order", "a = ? AND b = ?", "a = ? AND b = ?", "a = $1 AND b = $2"},
		{"quoted kept", "a = '?' AND b = ?", "a = '?' AND b = ?", "a = '?' AND b = $1"},
		{"empty string literal", "(? = '' OR u = ?)", "(? = '' OR u = ?)", "($1 = '' OR u = $2)"},
		{"ten and more", "?,?,?,?,?,?,?,?,?,?,?", "?,?,?,?,?,?,?,?,?,?,?", "$1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for _, d := range []struct {
				d    *Dialect
				want string
			}{{&SQLite, c.sqlite}, {&Postgres, c.postgres}, {&Postgres, c.postgres}} { // twice: the cached result too
				if got := d.d.Rebind(c.in); got != d.want {
					t.Errorf("%s: Rebind(%q) = %q, want %q", d.d.Name, c.in, got, d.want)
				}
			}
		})
	}
}

func TestSpellings(t *testing.T) {
	t.Parallel()
	cases := []struct {
		d                  *Dialect
		binary, floor, nul string
	}{
		{&SQLite, "model", "r.at / ?", "a\x00b"},
		{&Postgres, `model COLLATE "C"`, "floor(r.at::numeric / ?)::bigint", "a\uFFFDb"},
	}
	for _, c := range cases {
		if got := c.d.Binary("model"); got != c.binary {
			t.Errorf("%s: Binary = %q, want %q", c.d.Name, got, c.binary)
		}
		if got := c.d.FloorDiv("r.at", "?"); got != c.floor {
			t.Errorf("%s: FloorDiv = %q, want %q", c.d.Name, got, c.floor)
		}
		if got := c.d.Text("a\x00b"); got != c.nul {
			t.Errorf("%s: Text = %q, want %q", c.d.Name, got, c.nul)
		}
	}
}
