package fts

import "testing"

func TestStem(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		// Porter's own examples.
		{"caresses", "caress"}, {"ponies", "poni"}, {"cats", "cat"}, {"feed", ""}, {"agreed", "agre"},
		{"plastered", "plaster"}, {"motoring", "motor"}, {"sing", ""}, {"conflated", "conflat"},
		{"troubled", "troubl"}, {"sized", "size"}, {"hopping", "hop"}, {"falling", "fall"},
		{"hissing", "hiss"}, {"filing", "file"}, {"happy", "happi"}, {"relational", "relat"},
		{"conditional", "condit"}, {"generalization", "gener"}, {"adjustment", "adjust"},
		// The forms search must bring together.
		{"tested", "test"}, {"tests", "test"}, {"testing", "test"}, {"test", ""},
		{"deployment", "deploy"}, {"deployed", "deploy"}, {"retries", "retri"}, {"retry", "retri"},
		{"migrations", "migrat"}, {"migration", "migrat"}, {"migrate", "migrat"},
		// Never stemmed: short, digits, other scripts, identifiers' parts with digits.
		{"is", ""}, {"v2s", ""}, {"données", ""}, {"tests2", ""},
	}
	for _, c := range cases {
		if got := Stem(c.in); got != c.want {
			t.Errorf("Stem(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestStemText(t *testing.T) {
	t.Parallel()
	got := StemText("Tested the tests; testing src/main.py retries, and main.py again")
	if want := "test retri"; got != want {
		t.Errorf("StemText = %q, want %q", got, want)
	}
}
