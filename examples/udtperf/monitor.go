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

// monitor watches a running session: per-interval samples (-interval) and, on a terminal
// (never with -json), a progress bar with rate and ETA on stderr. It owns one goroutine, ended
// by stop.
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
		m.bar, m.barTime = newBar(stderr, label, bytes, dur)
	}
	if m.bar == nil && m.interval == 0 {
		close(m.done)
		return m
	}
	go m.run(label)
	return m
}

// newBar makes the progress bar: of bytes for a transfer of that many bytes (the library shows
// the rate), else of the milliseconds of dur (barTime), the rate then in the description.
func newBar(w io.Writer, label string, bytes int64, dur time.Duration) (bar *progressbar.ProgressBar, barTime bool) {
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(w), progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100 * time.Millisecond),
		progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish(),
	}
	if bytes > 0 {
		opts = append(opts, progressbar.OptionSetDescription(label),
			progressbar.OptionShowBytes(true), progressbar.OptionShowCount())
		return progressbar.NewOptions64(bytes, opts...), false
	}
	opts = append(opts, progressbar.OptionSetDescription(rateDescription(label, 0, false)))
	return progressbar.NewOptions64(dur.Milliseconds(), opts...), true
}

// rateDescription is a timed bar's description: the label and the current rate ("-" before
// the first measurement), in a fixed width so that the bar does not jump.
func rateDescription(label string, mbps float64, ok bool) string {
	if !ok {
		return fmt.Sprintf("%s %8s Mbit/s", label, "-")
	}
	return fmt.Sprintf("%s %8.1f Mbit/s", label, mbps)
}

// Rate shown on a timed bar: refreshed every barRateStep, over the last barRateWindow (or since
// the start while shorter).
const (
	barRateStep   = 250 * time.Millisecond
	barRateWindow = time.Second
)

// rateMeter measures the current rate from (time, byte count) samples.
type rateMeter struct {
	samples []sample // oldest first; the oldest is the last one at least barRateWindow old
}

func (r *rateMeter) add(at time.Time, n int64) {
	r.samples = append(r.samples, sample{at: at, bytes: n})
	for len(r.samples) > 2 && at.Sub(r.samples[1].at) >= barRateWindow {
		r.samples = r.samples[1:]
	}
}

// mbps is the rate between the oldest and the newest sample; false before two samples.
func (r *rateMeter) mbps() (float64, bool) {
	if len(r.samples) < 2 {
		return 0, false
	}
	a, b := r.samples[0], r.samples[len(r.samples)-1]
	d := b.at.Sub(a.at).Seconds()
	if d <= 0 {
		return 0, false
	}
	return float64(b.bytes-a.bytes) * 8 / d / 1e6, true
}

// delivered is the byte count the bar and the interval lines show: the bytes delivered to the
// receiving application. A receiver counts what it has read; a sender counts what the
// receiver's progress messages report. A sender must not count the bytes it has written: its
// transport first buffers megabytes at memory speed (udt's send buffer holds 8192 packets,
// about 12 MB; the kernel's TCP buffers several MB), which would show a rate far above the
// path's at the start, and nothing at all while the buffer drains at the end of a timed run.
// With a peer that sends no progress messages (an older udtperf), a udt sender counts the
// bytes acknowledged (written minus the send buffer's backlog), others what they wrote. The
// count never goes backwards: prev is the last one.
func (m *monitor) delivered(prev int64) int64 {
	var n int64
	switch b, ok := m.s.c.(interface{ backlog() int64 }); {
	case !m.sender:
		n = m.s.moved.Load()
	case m.s.progress:
		n = m.s.delivered.Load()
	case ok:
		n = m.s.moved.Load() - b.backlog()
	default:
		n = m.s.moved.Load()
	}
	return max(n, prev)
}

func (m *monitor) run(label string) {
	defer close(m.done)
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	var (
		rate    rateMeter
		shown   int64     // bytes on the bar
		rateDue time.Time // next rate refresh
	)
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
				rate.add(begin, 0)
				rateDue = begin.Add(barRateStep)
			}
			if m.interval > 0 && now.Sub(m.last.at) >= m.interval {
				m.emit(begin, now)
			}
			if m.bar == nil {
				continue
			}
			shown = m.delivered(shown)
			if !m.barTime {
				m.bar.Set64(shown)
				continue
			}
			if !now.Before(rateDue) {
				rate.add(now, shown)
				v, ok := rate.mbps()
				m.bar.Describe(rateDescription(label, v, ok))
				rateDue = now.Add(barRateStep)
			}
			// Short of the end until stop: a full bar finishes (and vanishes), while the rate
			// stays worth showing if the sender's buffer drains past -time.
			m.bar.Set64(min(now.Sub(begin).Milliseconds(), m.bar.GetMax64()-1))
		}
	}
}

// emit records the interval from the last sample to now and prints it.
func (m *monitor) emit(begin, now time.Time) {
	n := m.delivered(m.last.bytes)
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
		if now.Sub(m.last.at) >= m.interval/10 && m.delivered(m.last.bytes) > m.last.bytes {
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
