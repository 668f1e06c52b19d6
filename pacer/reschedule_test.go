package pacer_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/udtgo/udt/pacer"
)

// Reschedule moves a flow later (the old deadline calls no Release), earlier (the pacer wakes for
// it) and to idle (never called), exactly.
func TestReschedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pacer.New(pacer.NewGoTimer(), pacer.Config{})
		defer p.Close()
		start := time.Now()
		var calls []time.Duration
		h := p.Add(flowFunc(func(now time.Time, _ int) (int, time.Time) {
			calls = append(calls, now.Sub(start))
			return 0, time.Time{}
		}))
		h.Schedule(start.Add(10 * time.Millisecond))
		h.Reschedule(start.Add(30 * time.Millisecond)) // later: 10 ms passes without a call
		time.Sleep(20 * time.Millisecond)
		h.Reschedule(start.Add(25 * time.Millisecond)) // earlier again, while the pacer waits
		time.Sleep(20 * time.Millisecond)
		h.Reschedule(start.Add(60 * time.Millisecond))
		h.Reschedule(time.Time{}) // idle: 60 ms passes without a call
		time.Sleep(50 * time.Millisecond)
		synctest.Wait()
		if len(calls) != 1 || calls[0] != 25*time.Millisecond {
			t.Fatalf("Release calls at %v, want one at 25ms", calls)
		}
		h.Remove()
		h.Reschedule(time.Now()) // no-op after Remove
		time.Sleep(10 * time.Millisecond)
		if len(calls) != 1 {
			t.Fatalf("Release called after Remove: %v", calls)
		}
	})
}
