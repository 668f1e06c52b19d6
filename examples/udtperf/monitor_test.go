package main

import (
	"bytes"
	"io"
	"math"
	"regexp"
	"testing"
	"time"
)

func TestRateMeter(t *testing.T) {
	var r rateMeter
	t0 := time.Unix(1000, 0)
	if _, ok := r.mbps(); ok {
		t.Error("rate before any sample")
	}
	r.add(t0, 0)
	if _, ok := r.mbps(); ok {
		t.Error("rate from one sample")
	}
	// 1 MB per 250 ms = 32 Mbit/s for 2 s, then 2 MB per 250 ms = 64 Mbit/s.
	n := int64(0)
	step := func(k int, per int64, want float64) {
		t.Helper()
		for range k {
			t0 = t0.Add(barRateStep)
			n += per
			r.add(t0, n)
		}
		if got, ok := r.mbps(); !ok || math.Abs(got-want) > 1e-9 {
			t.Errorf("rate %v (%v), want %v", got, ok, want)
		}
	}
	step(1, 1e6, 32)
	step(7, 1e6, 32)
	step(4, 2e6, 64) // the window (1 s) has forgotten the slower part
	if len(r.samples) > 6 {
		t.Errorf("meter keeps %d samples", len(r.samples))
	}
}

func TestRateDescription(t *testing.T) {
	if got := rateDescription("udt/hybrid", 0, false); got != "udt/hybrid        - Mbit/s" {
		t.Errorf("no rate yet: %q", got)
	}
	if got := rateDescription("tcp", 193.44, true); got != "tcp    193.4 Mbit/s" {
		t.Errorf("rate: %q", got)
	}
}

// backlogConn is a fakeConn whose send buffer holds a fixed backlog.
type backlogConn struct {
	fakeConn
	queued int64
}

func (b *backlogConn) backlog() int64 { return b.queued }

func TestDeliveredCountsWhatLeftTheBuffer(t *testing.T) {
	c := &backlogConn{queued: 700}
	m := &monitor{s: &session{c: c}, sender: true}
	m.s.moved.Store(1000)
	if got := m.delivered(0); got != 300 {
		t.Errorf("sender with a backlog, no progress messages: %d, want 300", got)
	}
	if got := m.delivered(500); got != 500 {
		t.Errorf("went backwards: %d, want 500", got)
	}
	m.s.progress = true
	m.s.noteDelivered(250)
	if got := m.delivered(0); got != 250 {
		t.Errorf("sender with progress messages: %d, want the receiver's 250", got)
	}
	m.s.noteDelivered(5000) // more than was sent: a confused peer
	if got := m.delivered(0); got != 1000 {
		t.Errorf("receiver reported more than was sent: %d, want 1000", got)
	}
	m.sender = false
	if got := m.delivered(0); got != 1000 {
		t.Errorf("receiver: %d, want 1000", got)
	}
}

// TestTimedBarShowsRate runs the monitor of a timed transfer with its bar on a buffer: the
// bar's description carries the current rate.
func TestTimedBarShowsRate(t *testing.T) {
	var out bytes.Buffer
	bar, barTime := newBar(&out, "udt/test", 0, 2*time.Second)
	if !barTime {
		t.Fatal("a timed transfer's bar counts bytes")
	}
	s := &session{c: &fakeConn{}}
	m := &monitor{s: s, sender: true, bar: bar, barTime: true, quit: make(chan struct{}), done: make(chan struct{})}
	go m.run("udt/test")
	s.start.Store(time.Now().UnixNano())
	for i := range 15 { // about 80 Mbit/s for 750 ms
		time.Sleep(50 * time.Millisecond)
		s.moved.Store(int64(i+1) * 500_000)
	}
	m.stop()
	if !regexp.MustCompile(`udt/test +[0-9]+\.[0-9] Mbit/s`).Match(out.Bytes()) {
		t.Errorf("bar shows no rate:\n%q", out.String())
	}
}

// TestNoBarOffTerminal: no bar on a non-terminal stderr or with -json.
func TestNoBarOffTerminal(t *testing.T) {
	s := &session{c: &fakeConn{}}
	for _, o := range []outputFlags{{}, {json: true}} {
		m := startMonitor(s, true, &o, io.Discard, &bytes.Buffer{}, "x", "", 0, time.Second)
		if m.bar != nil {
			t.Errorf("%+v: bar on a buffer", o)
		}
		m.stop()
	}
}
