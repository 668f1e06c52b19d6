package congestion

import (
	"math"
	"time"
)

// lossWindow estimates the path's background loss rate: bytes lost and sent over the loss rounds
// of the last 10 s (BBR's RTprop window, over which the path is taken as stationary) that were
// neither probing nor congested, in one-second buckets.
type lossWindow struct {
	bucket [lossBuckets]struct {
		sec         int64 // the second (since the Unix epoch's monotonic origin) the bucket counts
		lost, total float64
	}
}

const (
	lossBuckets      = 10 // × lossBucketLength = bbrMinRTTFilterLen
	lossBucketLength = bbrMinRTTFilterLen / lossBuckets
)

func bucketSecond(now time.Time) int64 { return now.UnixNano() / int64(lossBucketLength) }

// add counts a round's lost and total bytes.
func (w *lossWindow) add(now time.Time, lost, total float64) {
	s := bucketSecond(now)
	bk := &w.bucket[uint64(s)%lossBuckets]
	if bk.sec != s {
		bk.sec, bk.lost, bk.total = s, 0, 0
	}
	bk.lost += lost
	bk.total += total
}

// sum returns the window's lost and total bytes.
func (w *lossWindow) sum(now time.Time) (lost, total float64) {
	s := bucketSecond(now)
	for _, bk := range w.bucket {
		if s-bk.sec < lossBuckets {
			lost += bk.lost
			total += bk.total
		}
	}
	return lost, total
}

// excess reports whether lost of total bytes is a loss rate above the background rate by more
// than bbrLossThresh, at bbrLossSigma standard errors, in units of packets of pkt bytes: a
// one-sided test of the difference of two proportions against a margin (H0: the round's rate is
// at most background + threshold). Its standard error is taken at H0's boundary, unpooled — the
// round's rate at background + threshold over the round's packets, plus the background's own
// variance over its packets — since pooling assumes the two rates equal, which the margin
// denies: pooled, a few clean background packets made the test blind (four hid a round losing
// 30 % of 1000, fifty one losing 15 %), where more clean evidence must only sharpen it. Without a
// background the second term is 0. Less than one lost packet is never excessive; a report of more
// lost than sent (accounting that straddles rounds) reads as a rate of 1.
func (w *lossWindow) excess(now time.Time, lost, total, pkt float64) bool {
	n, l := total/pkt, lost/pkt
	if l < 1 || n <= 0 {
		return false
	}
	bgLost, bgTotal := w.sum(now)
	nb, lb := bgTotal/pkt, bgLost/pkt
	r := min(l/n, 1)
	var bg, bgVar float64
	if nb >= 1 {
		bg = min(lb/nb, 1)
		bgVar = bg * (1 - bg) / nb
	}
	p0 := min(bg+bbrLossThresh, 1)
	se := math.Sqrt(p0*(1-p0)/n + bgVar)
	if r-bg-bbrLossThresh <= bbrLossSigma*se {
		return false
	}
	// The normal approximation fails for a few packets (one lost of one sent is not three
	// standard errors of anything): the Poisson tail of losing l or more at bg + thresh must
	// also be below the one-sided 3σ probability.
	return poissonTail(l, n*(bg+bbrLossThresh)) < bbrLossPValue
}

// bbrLossPValue is the one-sided tail probability of three standard errors, 1 − Φ(3).
const bbrLossPValue = 0.00135

// poissonTail returns P(X ≥ k) for X ~ Poisson(lambda), k rounded down to whole packets; past
// 200 expected packets (where the z-test already decides) it returns 0.
func poissonTail(k, lambda float64) float64 {
	n := int(k)
	if n <= 0 {
		return 1
	}
	if lambda <= 0 {
		return 0
	}
	if lambda > 200 {
		return 0
	}
	term := math.Exp(-lambda) // P(X = 0)
	cdf := term
	for i := 1; i < n; i++ {
		term *= lambda / float64(i)
		cdf += term
		if float64(i) > lambda && term < 1e-17*cdf {
			break // the rest of the sum is below float64's precision: P(X ≥ k) rounds to 0
		}
	}
	return max(1-cdf, 0)
}
