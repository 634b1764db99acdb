package bench

import (
	"math"
	"sort"
	"time"
)

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

func ms(d time.Duration) float64 { return round3(float64(d) / float64(time.Millisecond)) }

// Latency is the summary every workload reports: nearest-rank percentiles, rounded to 3 decimals.
type Latency struct {
	P50  float64 `json:"p50_ms"`
	P99  float64 `json:"p99_ms"`
	Max  float64 `json:"max_ms"`
	Mean float64 `json:"mean_ms"`
}

// nearestRank returns sorted[ceil(q*n)-1].
func nearestRank(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	if i < 0 {
		i = 0
	}
	return sorted[i]
}

// Summarize is the Latency of xs (an empty slice: the zero Latency). Other soaks report with it.
func Summarize(xs []time.Duration) Latency { return summarize(xs) }

func summarize(xs []time.Duration) Latency {
	if len(xs) == 0 {
		return Latency{}
	}
	s := append([]time.Duration(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	var sum time.Duration
	for _, x := range s {
		sum += x
	}
	return Latency{
		P50:  ms(nearestRank(s, 0.50)),
		P99:  ms(nearestRank(s, 0.99)),
		Max:  ms(s[len(s)-1]),
		Mean: round3(float64(sum) / float64(len(s)) / float64(time.Millisecond)),
	}
}
