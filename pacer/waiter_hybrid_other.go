//go:build !linux

package pacer

import "time"

// hybridSleeper is Hybrid's OS sleep outside Linux: a time.Timer raced against the wake channel.
type hybridSleeper struct {
	timer *time.Timer
}

func (s *hybridSleeper) init() {
	s.timer = time.NewTimer(time.Hour)
	s.timer.Stop()
}

// sleep blocks until wakeAt or a Wake. It reports woken, or else how late it woke (≥ 0).
func (s *hybridSleeper) sleep(w *wakeSignal, wakeAt time.Time) (woken bool, late time.Duration) {
	s.timer.Reset(time.Until(wakeAt))
	defer s.timer.Stop()
	for {
		select {
		case <-w.ch:
			if w.take() {
				return true, 0
			}
		case <-s.timer.C:
			return false, max(time.Since(wakeAt), 0)
		}
	}
}

// interrupt is a no-op: Wake's doorbell on the wake channel already ends the select.
func (s *hybridSleeper) interrupt() {}
