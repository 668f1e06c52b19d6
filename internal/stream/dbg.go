package stream

import (
	"fmt"
	"os"
	"time"

	"github.com/udtgo/udt/congestion"
)

var envThresh = func() float64 {
	var f float64 = 101
	fmt.Sscan(os.Getenv("DLVDEBUG"), &f)
	return f
}()

func init() {
	if os.Getenv("DLVDEBUG") == "" {
		return
	}
	dbgInvalid = func(ev *deliveryEvent, d *deliveryTracker, t time.Duration) {
		if os.Getenv("DLVINV") != "" {
			fmt.Fprintf(os.Stderr, "ev t=%v newly=%d flags=%b refSent=%v del=%d\n", t, ev.newlyDelivered/1472, ev.refFlags, ev.refSent, (d.delivered-ev.refDelivered)/1472)
		}
	}
	dbgLost = func(d *deliveryTracker, from, to int) {
		if os.Getenv("DLVLOST") == "" {
			return
		}
		n, re, inf := 0, 0, 0
		for k := from; k <= to; k++ {
			p := d.at(k)
			n++
			if p.flags&pktRetrans != 0 {
				re++
			}
			if p.flags&pktInFlight != 0 {
				inf++
			}
		}
		fmt.Fprintf(os.Stderr, "lost [%d,%d] n=%d retrans=%d inflight=%d\n", from, to, n, re, inf)
	}
	dbgSample = func(s congestion.Delivery, ev *deliveryEvent, t time.Duration) {
		r := float64(s.Delivered) / s.Interval.Seconds() * 8 / 1e6
		if r > envThresh {
			fmt.Fprintf(os.Stderr, "t=%v rate=%.1f delivered=%d interval=%v newly=%d sendEl=%v ackEl=%v span=%v refSent=%v sackedSince=%d pkts stale=%d rtt=%v txinflight=%d\n", t, r, s.Delivered/1472, s.Interval, ev.newlyDelivered/1472, ev.refSent-ev.refFirst, t-ev.refDeliveredAt, ev.maxSent-ev.minSent, ev.refSent, (dbgSacked-ev.refSacked)/1472, 0, t-ev.refSent, ev.refTxInFlight/1472)
		}
	}
}
