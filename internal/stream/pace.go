package stream

import "time"

// pacing turns the send period into departure times (spec §4.3 step 5): an absolute schedule with
// bounded catch-up, so a late pacer may release a short burst to keep the average rate but never
// more than maxLate of backlog.
type pacing struct {
	interval time.Duration // 0 = no rate limit
	next     time.Duration // earliest departure of the next paced packet
	idle     bool          // nothing was sendable: the schedule restarts at the next packet
}

// maxLate bounds how far behind the schedule may fall before the backlog is forgiven.
const maxLate = 2 * time.Millisecond

func (p *pacing) due(t time.Duration) bool { return p.interval == 0 || p.next <= t }

// restart resumes the schedule at t after an idle period.
func (p *pacing) restart(t time.Duration) {
	if p.idle {
		p.idle = false
		if p.next < t {
			p.next = t
		}
	}
}

// charge accounts for one paced packet sent at t.
func (p *pacing) charge(t time.Duration) {
	if p.interval == 0 {
		p.next = t
		return
	}
	if floor := t - max(maxLate, p.interval); p.next < floor {
		p.next = floor
	}
	p.next += p.interval
}
