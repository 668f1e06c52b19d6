package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// monitor watches a running session: per-interval samples (-interval) and, on a terminal,
// a progress bar with rate and ETA on stderr. It owns one goroutine, ended by stop.
type monitor struct {
	s        *session
	sender   bool
	interval time.Duration
	lines    io.Writer // per-interval text lines; nil with -json
	prefix   string
	bar      *progressbar.ProgressBar
	barTime  bool // the bar counts milliseconds of a timed transfer, not bytes

	mu        sync.Mutex // guards lines output against the bar
	intervals []Interval
	last      sample
	quit      chan struct{}
	done      chan struct{}
}

type sample struct {
	at    time.Time
	bytes int64
	lost  float64
	retr  float64
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// startMonitor starts watching s. label names the transfer on the bar; spec sizes the bar.
func startMonitor(s *session, sender bool, o *outputFlags, stdout, stderr io.Writer, label, prefix string, bytes int64, dur time.Duration) *monitor {
	m := &monitor{s: s, sender: sender, interval: o.interval, prefix: prefix,
		quit: make(chan struct{}), done: make(chan struct{})}
	if !o.json {
		m.lines = stdout
	}
	if !o.json && !o.noProgress && isTerminal(stderr) {
		opts := []progressbar.Option{
			progressbar.OptionSetWriter(stderr), progressbar.OptionSetDescription(label),
			progressbar.OptionSetWidth(30), progressbar.OptionThrottle(100 * time.Millisecond),
			progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish(),
		}
		if bytes > 0 {
			opts = append(opts, progressbar.OptionShowBytes(true), progressbar.OptionShowCount())
			m.bar = progressbar.NewOptions64(bytes, opts...)
		} else {
			m.bar = progressbar.NewOptions64(dur.Milliseconds(), opts...)
			m.barTime = true
		}
	}
	if m.bar == nil && m.interval == 0 {
		close(m.done)
		return m
	}
	go m.run(label)
	return m
}

func (m *monitor) run(label string) {
	defer close(m.done)
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	var barPrev sample
	for {
		select {
		case <-m.quit:
			return
		case now := <-t.C:
			start := m.s.start.Load()
			if start == 0 {
				continue
			}
			begin := time.Unix(0, start)
			if m.last.at.IsZero() {
				m.last = sample{at: begin, lost: math.NaN(), retr: math.NaN()}
				barPrev = m.last
			}
			if m.interval > 0 && now.Sub(m.last.at) >= m.interval {
				m.emit(begin, now)
			}
			if m.bar != nil {
				n := m.s.moved.Load()
				if m.barTime {
					if d := now.Sub(barPrev.at); d >= 500*time.Millisecond {
						rate := float64(n-barPrev.bytes) * 8 / d.Seconds() / 1e6
						m.bar.Describe(fmt.Sprintf("%s %8.1f Mbit/s", label, rate))
						barPrev = sample{at: now, bytes: n}
					}
					m.bar.Set64(min(now.Sub(begin).Milliseconds(), m.bar.GetMax64()))
				} else {
					m.bar.Set64(n)
				}
			}
		}
	}
}

// emit records the interval from the last sample to now and prints it.
func (m *monitor) emit(begin, now time.Time) {
	n := m.s.moved.Load()
	st := m.s.c.Stats(m.sender)
	iv := Interval{
		Start: m.last.at.Sub(begin).Seconds(), End: now.Sub(begin).Seconds(), Bytes: n - m.last.bytes,
		RTTms: opt(st.rttMs), CwndPkts: opt(st.cwndPkts), CwndBytes: opt(st.cwndBytes), SendPeriodUs: opt(st.sendPeriodUs),
	}
	if d := now.Sub(m.last.at).Seconds(); d > 0 {
		iv.Mbps = float64(iv.Bytes) * 8 / d / 1e6
	}
	if !math.IsNaN(m.last.lost) {
		iv.Lost = opt(st.lost - m.last.lost)
	} else {
		iv.Lost = opt(st.lost)
	}
	if !math.IsNaN(m.last.retr) {
		iv.Retrans = opt(st.pktRetrans - m.last.retr)
	} else {
		iv.Retrans = opt(st.pktRetrans)
	}
	m.last = sample{at: now, bytes: n, lost: st.lost, retr: st.pktRetrans}
	m.mu.Lock()
	m.intervals = append(m.intervals, iv)
	m.mu.Unlock()
	if m.lines != nil {
		if m.bar != nil {
			m.bar.Clear()
		}
		fmt.Fprintln(m.lines, intervalLine(m.prefix, &iv))
	}
}

// stop ends the monitor, records a last partial interval, clears the bar and returns the
// intervals: nil without -interval.
func (m *monitor) stop() []Interval {
	select {
	case <-m.done:
	default:
		close(m.quit)
		<-m.done
	}
	if start := m.s.start.Load(); start != 0 && m.interval > 0 {
		now := time.Now()
		if m.last.at.IsZero() {
			m.last = sample{at: time.Unix(0, start), lost: math.NaN(), retr: math.NaN()}
		}
		if now.Sub(m.last.at) >= m.interval/10 && m.s.moved.Load() > m.last.bytes {
			m.emit(time.Unix(0, start), now)
		}
	}
	if m.bar != nil {
		m.bar.Finish()
		m.bar.Clear()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.interval > 0 && m.intervals == nil {
		return []Interval{} // JSON [], not null: -interval was on
	}
	return m.intervals
}
