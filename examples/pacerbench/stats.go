package main

import (
	"math"
	"slices"
	"time"
)

// summary describes a sample of durations (ns) against an expected value.
type summary struct {
	n                           int
	mean, median, min, max, std float64 // µs
	p99                         float64 // µs
	within5, within10           float64 // fraction of samples within ±5 / ±10 µs of expected
}

// summarize computes the summary of samples (ns); it sorts samples in place.
func summarize(samples []int64, expected time.Duration) summary {
	s := summary{n: len(samples)}
	if s.n == 0 {
		return s
	}
	slices.Sort(samples)
	var sum float64
	in5, in10 := 0, 0
	for _, v := range samples {
		sum += float64(v)
		d := math.Abs(float64(v - int64(expected)))
		if d <= 5e3 {
			in5++
		}
		if d <= 10e3 {
			in10++
		}
	}
	mean := sum / float64(s.n)
	var sq float64
	for _, v := range samples {
		d := float64(v) - mean
		sq += d * d
	}
	s.mean = mean / 1e3
	s.std = math.Sqrt(sq/float64(s.n)) / 1e3
	s.median = quantile(samples, 0.5) / 1e3
	s.p99 = quantile(samples, 0.99) / 1e3
	s.min = float64(samples[0]) / 1e3
	s.max = float64(samples[s.n-1]) / 1e3
	s.within5 = float64(in5) / float64(s.n)
	s.within10 = float64(in10) / float64(s.n)
	return s
}

// quantile returns the nearest-rank q-quantile of sorted samples.
func quantile(sorted []int64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return float64(sorted[min(max(i, 0), len(sorted)-1)])
}

// us converts a duration to float µs.
func us(d time.Duration) float64 { return float64(d) / 1e3 }
