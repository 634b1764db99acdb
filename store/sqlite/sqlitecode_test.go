package sqlite

import "testing"

// A read that succeeded asks isCorrupt(nil) on every call: that question must cost nothing. (Not
// parallel: AllocsPerRun counts the whole process.)
func TestNoErrorCodeAllocatesNothing(t *testing.T) {
	for name, f := range map[string]func(error) bool{"isCorrupt": isCorrupt, "isFull": isFull, "isIOErr": isIOErr, "isCantOpen": isCantOpen} {
		if f(nil) {
			t.Errorf("%s(nil) = true", name)
		}
		if n := testing.AllocsPerRun(100, func() { f(nil) }); n != 0 {
			t.Errorf("%s(nil) allocates %.0f times per call", name, n)
		}
	}
}
