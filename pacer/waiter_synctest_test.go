package pacer

import (
	"testing"
	"testing/synctest"
	"time"
)

// GoTimer under testing/synctest: virtual time makes every wait exact.
func TestGoTimerSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGoTimer()
		start := time.Now()
		for _, d := range []time.Duration{time.Microsecond, 10 * time.Microsecond, 800 * time.Microsecond, time.Second} {
			t0 := time.Now()
			if g.Wait(t0.Add(d)) {
				t.Fatal("woken without Wake")
			}
			if got := time.Since(t0); got != d {
				t.Fatalf("wait %v took %v virtual", d, got)
			}
		}
		if g.Wait(time.Now().Add(-time.Second)) {
			t.Fatal("past deadline: woken")
		}

		// Wake during a long wait ends it at the exact virtual instant of the Wake.
		t0 := time.Now()
		go func() {
			time.Sleep(3 * time.Millisecond)
			g.Wake()
		}()
		if !g.Wait(t0.Add(time.Hour)) || time.Since(t0) != 3*time.Millisecond {
			t.Fatalf("Wake at 3ms: ended after %v", time.Since(t0))
		}

		// Zero deadline: blocks (durably, so virtual time can pass) until Wake.
		t0 = time.Now()
		go func() {
			time.Sleep(time.Minute)
			g.Wake()
		}()
		if !g.Wait(time.Time{}) || time.Since(t0) != time.Minute {
			t.Fatalf("zero deadline: ended after %v", time.Since(t0))
		}

		// Wake before Wait: returns at once, no virtual time passes.
		g.Wake()
		t0 = time.Now()
		if !g.Wait(t0.Add(time.Hour)) || time.Since(t0) != 0 {
			t.Fatal("pending Wake not honoured at once")
		}
		if total := time.Since(start); total != time.Second+811*time.Microsecond+3*time.Millisecond+time.Minute {
			t.Fatalf("total virtual time %v", total)
		}
	})
}
