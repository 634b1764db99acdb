package bench

import "testing"

func TestW1Bound(t *testing.T) {
	t.Parallel()
	measured := FsyncResult{Measured: true, OpsPerS: 8000}
	for _, tc := range []struct {
		name    string
		w1      float64
		commits CommitRates
		fsync   FsyncResult
		want    *W1Bound
	}{
		{"both rates and the ceiling", 1500, CommitRates{SmallBefore: 3000, SmallAfter: 2000}, measured,
			&W1Bound{CheapestCommitPerS: 2500, W1Share: 0.6, CheapestShare: 0.313}},
		{"no rate after W1", 1500, CommitRates{SmallBefore: 3000}, measured, nil},
		{"no ceiling (a server of the caller's)", 1500, CommitRates{SmallBefore: 3000, SmallAfter: 2000}, FsyncResult{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := w1Bound(tc.w1, tc.commits, tc.fsync)
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Fatalf("w1Bound = %+v, want %+v", got, tc.want)
			}
		})
	}
}
