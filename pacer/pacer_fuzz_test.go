package pacer_test

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/udtgo/udt/pacer"
)

// fuzzFlow follows a script: call k returns next = now + script[k] µs, or idle for a negative
// entry or past the end. It always reports one packet sent.
type fuzzFlow struct {
	script []int8
	calls  []time.Time
}

func (f *fuzzFlow) Release(now time.Time, max int) (int, time.Time) {
	k := len(f.calls)
	f.calls = append(f.calls, now)
	if k >= len(f.script) || f.script[k] < 0 {
		return 1, time.Time{}
	}
	return 1, now.Add(time.Duration(f.script[k]) * time.Microsecond)
}

// fuzzModel is the expected state of one flow.
type fuzzModel struct {
	at      time.Time // scheduled departure; zero = idle
	calls   int
	removed bool
}

// FuzzPacer checks the pacer against a model on the manual clock, exact and with a tolerance of
// 30 µs. The fuzzer picks flow scripts and a sequence of Schedule, Remove and clock moves;
// whenever the pacer is blocked the test checks that it waits exactly until the earliest
// scheduled flow (or without deadline when none is), and that every flow was called exactly as
// often as the model says (with a tolerance, every flow due within it of the clock's time is
// called), each time at the clock's time.
func FuzzPacer(f *testing.F) {
	f.Add([]byte{0, 10, 20, 0xff, 1, 5, 5, 5}, []byte{0, 0, 3, 1, 1, 2, 2, 50, 2, 50, 1, 0, 1, 2, 100})
	f.Add([]byte{0, 0, 0, 0, 1, 0, 0, 0}, []byte{0, 0, 0, 0, 1, 0, 0, 2, 0, 2, 0})
	f.Add([]byte{30, 30, 30, 30, 2, 0x80, 7, 7}, []byte{0, 0, 40, 0, 1, 10, 2, 35, 1, 0, 0, 2, 255, 0, 2, 0})
	f.Fuzz(func(t *testing.T, scripts, ops []byte) {
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent()) // the fuzz engine's own goroutines
		fuzzPacer(t, scripts, ops, pacer.Exact)
		fuzzPacer(t, scripts, ops, 30*time.Microsecond)
	})
}

func fuzzPacer(t *testing.T, scripts, ops []byte, tol time.Duration) {
	{
		const nFlows = 4
		clk := newPacerClock()
		p := pacer.New(clk, pacer.Config{Now: clk.Now, Tolerance: tol})
		defer p.Close()
		flows := make([]*fuzzFlow, nFlows)
		handles := make([]*pacer.Handle, nFlows)
		model := make([]fuzzModel, nFlows)
		for i := range flows {
			flows[i] = &fuzzFlow{}
			for j := i; j < len(scripts) && len(flows[i].script) < 64; j += nFlows {
				flows[i].script = append(flows[i].script, int8(scripts[j]))
			}
			handles[i] = p.Add(flows[i])
		}
		// settle runs the model's releases due at the clock's time, like the pacer does.
		settle := func() {
			now := clk.Now().Add(max(tol, 0))
			for progress := true; progress; {
				progress = false
				for i := range model {
					m := &model[i]
					if m.removed || m.at.IsZero() || m.at.After(now) {
						continue
					}
					k := m.calls
					m.calls++
					m.at = time.Time{}
					if k < len(flows[i].script) && flows[i].script[k] >= 0 {
						m.at = clk.Now().Add(time.Duration(flows[i].script[k]) * time.Microsecond)
					}
					progress = true
				}
			}
		}
		check := func(step int) {
			t.Helper()
			<-clk.Blocked()
			var earliest time.Time
			for i, m := range model {
				if got := len(flows[i].calls); got != m.calls {
					t.Fatalf("tolerance %v, step %d: flow %d called %d times, model %d", tol, step, i, got, m.calls)
				}
				if !m.removed && !m.at.IsZero() && (earliest.IsZero() || m.at.Before(earliest)) {
					earliest = m.at
				}
			}
			if d, ok := clk.BlockedUntil(); !ok || !d.Equal(earliest) {
				t.Fatalf("step %d: pacer waits until %v (%v), model %v", step, d, ok, earliest)
			}
		}
		// waitFor is the model's pacer deadline (zero: idle): the earliest departure. The pacer
		// wakes, and settles, only when the clock reaches it, a Schedule moves a flow before it,
		// or a flow due at it is removed.
		earliest := func() time.Time {
			var e time.Time
			for _, m := range model {
				if !m.removed && !m.at.IsZero() && (e.IsZero() || m.at.Before(e)) {
					e = m.at
				}
			}
			return e
		}
		check(-1)
		for step := 0; step+2 < len(ops) && step < 300; step += 3 {
			i, arg := int(ops[step+1])%nFlows, time.Duration(ops[step+2])*time.Microsecond
			waitFor, woken := earliest(), false
			switch ops[step] % 3 {
			case 0:
				at := clk.Now().Add(arg)
				handles[i].Schedule(at)
				if m := &model[i]; !m.removed && (m.at.IsZero() || at.Before(m.at)) {
					m.at = at
					woken = waitFor.IsZero() || at.Before(waitFor)
				}
			case 1:
				handles[i].Remove()
				m := &model[i]
				woken = !m.removed && !m.at.IsZero() && m.at.Equal(waitFor)
				m.removed = true
			case 2:
				clk.Advance(arg)
				woken = !waitFor.IsZero() && !clk.Now().Before(waitFor)
			}
			if woken {
				settle()
			}
			check(step)
		}
		p.Close()
		for i, fl := range flows {
			for k, at := range fl.calls {
				if k > 0 && at.Before(fl.calls[k-1]) {
					t.Fatalf("flow %d: call %d at %v before call %d", i, k, at, k-1)
				}
			}
		}
	}
}
