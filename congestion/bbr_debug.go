package congestion

import (
	"fmt"
	"os"
	"time"
)

var bbrDebug = os.Getenv("BBRDEBUG") != ""

func (b *BBR) dbg(now time.Time, what string) {
	if bbrDebug {
		fmt.Fprintf(os.Stderr, "%p %s %-14s %-10s bw=%.1fMbit maxbw=%.1f/%.1f bwlo=%.1f minrtt=%v cwnd=%.0f inflight=%d hi=%.0f lo=%.0f pace=%.1fMbit extra=%.0f round=%d\n",
			b, now.Format("05.000000"), b.state, what, b.bw*8/1e6, b.maxBw[0]*8/1e6, b.maxBw[1]*8/1e6, b.bwLo*8/1e6, b.minRTT, b.cwnd/b.pkt, b.inflight/int64(b.pkt), b.inflightHi/b.pkt, b.inflightLo/b.pkt, b.pacingRate*8/1e6, b.extraAckedMax()/b.pkt, b.roundCount)
	}
}

var bbrWinFrom, bbrWinTo = func() (float64, float64) {
	var a, b float64
	fmt.Sscanf(os.Getenv("BBRWIN"), "%f,%f", &a, &b)
	return a, b
}()

func bbrWin(now time.Time) bool {
	if bbrWinTo == 0 {
		return false
	}
	s := float64(now.UnixNano()%60e9) / 1e9
	return s >= bbrWinFrom && s <= bbrWinTo
}
