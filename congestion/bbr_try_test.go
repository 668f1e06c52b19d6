package congestion_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/udtgo/udt/congestion"
)

func bbrSeeded(seed uint64) congestion.Factory {
	return func() congestion.Controller {
		return congestion.NewBBR(congestion.WithBBRRandSource(rand.NewPCG(seed, seed)))
	}
}

func envF(k string, d float64) float64 {
	if v, err := strconv.ParseFloat(os.Getenv(k), 64); err == nil {
		return v
	}
	return d
}

func TestBBRTry(t *testing.T) {
	if os.Getenv("BBRTRY") == "" {
		t.Skip()
	}
	sc := connScenario{Rate: int64(envF("RATE", 100e6)), RTT: time.Duration(envF("RTT", 20)) * time.Millisecond, Seed: 1,
		Loss: envF("LOSS", 0), QueueBDP: envF("QBDP", 1), Bucket: time.Duration(envF("BUCKET", 0)) * time.Millisecond,
		Flows: []connFlow{{Name: "bbr", CC: bbrSeeded(1)}}, Duration: time.Duration(envF("DUR", 10)) * time.Second}
	r := runConns(t, sc)
	logShares(t, "try", sc, r)
}

type fixedDeliv struct{ *congestion.Fixed }

func (fixedDeliv) OnDelivery(time.Time, congestion.Delivery) {}

func TestBBRTryFixed(t *testing.T) {
	if os.Getenv("BBRTRY") == "" {
		t.Skip()
	}
	sc := connScenario{Rate: 100e6, RTT: 100 * time.Millisecond, Seed: 1, Loss: envF("LOSS", 0.01), QueueBDP: 4,
		Flows: []connFlow{{Name: "fixed", CC: func() congestion.Controller { return fixedDeliv{congestion.NewFixed(int64(envF("FIXED", 90e6)))} }}}, Duration: 5 * time.Second}
	r := runConns(t, sc)
	logShares(t, "fixed", sc, r)
}

func TestBBRTryGrid(t *testing.T) {
	if os.Getenv("BBRGRID") == "" {
		t.Skip()
	}
	type cell struct {
		rtt    time.Duration
		loss   float64
		qbdp   float64
		bucket time.Duration
	}
	var cells []cell
	for _, rtt := range []time.Duration{20 * time.Millisecond, 100 * time.Millisecond} {
		for _, loss := range []float64{0, 0.001, 0.01, 0.03} {
			for _, q := range []float64{0.1, 1, 4} {
				cells = append(cells, cell{rtt, loss, q, 0})
			}
			cells = append(cells, cell{rtt, loss, 1, time.Millisecond})
		}
	}
	dur := time.Duration(envF("DUR", 20)) * time.Second
	for _, c := range cells {
		c := c
		t.Run(fmt.Sprintf("rtt%v_loss%g_q%g_b%v", c.rtt, c.loss, c.qbdp, c.bucket), func(t *testing.T) {
			t.Parallel()
			sc := connScenario{Rate: 100e6, RTT: c.rtt, Seed: 1, Loss: c.loss, QueueBDP: c.qbdp, Bucket: c.bucket,
				Flows: []connFlow{{Name: "bbr", CC: bbrSeeded(1)}}, Duration: dur}
			r := runConns(t, sc)
			secs := len(r.Share[0])
			u := mean(r.Share[0], 5, secs)
			st := r.Sender[0]
			t.Logf("CELL rtt=%v loss=%g q=%g bucket=%v util=%.3f retrans=%.4f drops=%d per-s:%v", c.rtt, c.loss, c.qbdp, c.bucket, u,
				float64(st.PktRetrans)/float64(max(st.PktSent, 1)), r.Forward.DroppedQueue, fmtShares(r.Share[0]))
		})
	}
}

func fmtShares(xs []float64) string {
	var b strings.Builder
	for _, x := range xs {
		fmt.Fprintf(&b, " %.0f", 100*x)
	}
	return b.String()
}

func TestBBRTryTwo(t *testing.T) {
	if os.Getenv("BBRTRY") == "" {
		t.Skip()
	}
	sc := connScenario{Rate: 100e6, RTT: time.Duration(envF("RTT", 20)) * time.Millisecond, Seed: 1, QueueBDP: envF("QBDP", 1),
		Loss: envF("LOSS", 0),
		Flows: []connFlow{{Name: "a", CC: bbrSeeded(1)}, {Name: "b", CC: bbrSeeded(2), Start: 5 * time.Second}}, Duration: time.Duration(envF("DUR", 30)) * time.Second}
	r := runConns(t, sc)
	n := len(r.Share[0])
	a, b := mean(r.Share[0], n-10, n), mean(r.Share[1], n-10, n)
	t.Logf("TWO a=%s", fmtShares(r.Share[0]))
	t.Logf("TWO b=%s", fmtShares(r.Share[1]))
	t.Logf("TWO last 10 s: %.3f %.3f jain %.3f drops %d", a, b, jain(a, b), r.Forward.DroppedQueue)
}
