package bench

// Rng is the SplitMix64 generator of the workload spec (section 2.1). All arithmetic wraps at 64
// bits, which is exactly Go's uint64 arithmetic.
type Rng struct{ s uint64 }

// NewRng returns a generator seeded with seed.
func NewRng(seed uint64) *Rng { return &Rng{s: seed} }

// Next returns the next 64-bit value.
func (r *Rng) Next() uint64 {
	r.s += 0x9E3779B97F4A7C15
	z := r.s
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// Intn is Next() % n: plain modulo, no rejection sampling, as the spec requires.
func (r *Rng) Intn(n int) int { return int(r.Next() % uint64(n)) }

func pick[T any](r *Rng, list []T) T { return list[r.Intn(len(list))] }

func (r *Rng) hex(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[r.Intn(16)]
	}
	return string(b)
}
