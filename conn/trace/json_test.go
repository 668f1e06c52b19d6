package trace

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

var start = time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)

func sampleEvents() []Event {
	at := func(us int) time.Time { return start.Add(time.Duration(us) * time.Microsecond) }
	return []Event{
		{Time: at(10), Kind: PacketSent, Seq: 1<<31 - 1, Bytes: 1456},
		{Time: at(20), Kind: PacketRetransmitted, Seq: 7, Bytes: 12},
		{Time: at(30), Kind: PacketReceived, Seq: 8, Bytes: 1456},
		{Time: at(40), Kind: LossDetected, Seq: 9, Last: 12, Packets: 4},
		{Time: at(50), Kind: PacketsLost, Seq: 9, Last: 12, Packets: 3},
		{Time: at(60), Kind: ACKSent, Seq: 13, FlowWindow: 8190, Detail: "full"},
		{Time: at(70), Kind: ACKReceived, Seq: 13, RTT: 100250 * time.Microsecond, RTTVar: 5 * time.Millisecond,
			FlowWindow: 8190, InFlight: 400, RecvRate: 8500, Bandwidth: 9000, Detail: "medium"},
		{Time: at(80), Kind: NAKSent, Packets: 10, Ranges: 2},
		{Time: at(90), Kind: NAKReceived, Packets: 10, Ranges: 2},
		{Time: at(100), Kind: RTTUpdated, RTT: 1500 * time.Nanosecond, RTTVar: 750 * time.Nanosecond},
		{Time: at(110), Kind: CongestionState, Period: 11776 * time.Nanosecond, CWnd: 16, Detail: "slow start"},
		{Time: at(120), Kind: Timeout, Packets: 2, Detail: "timeout"},
		{Time: at(130), Kind: PacerLate, Late: 42 * time.Microsecond},
		{Time: at(140), Kind: PathMTU, Bytes: 1400, Detail: "probe \"ok\"\n\x01 ünï \xff"},
		{Time: at(150), Kind: Closed, Detail: "peer unresponsive: nothing received for 10s"},
		{Time: at(160), Kind: EventsLost, Packets: 99},
		{Time: at(170), Kind: DeliveryRate, Bytes: 1 << 20, Interval: 105 * time.Millisecond, RTT: 101 * time.Millisecond, Detail: "app-limited"},
	}
}

func TestJSONRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	info := ConnInfo{Start: start, Local: &net.UDPAddr{IP: net.IPv4(198, 18, 1, 2), Port: 4000},
		Remote: &net.UDPAddr{IP: net.IPv4(198, 18, 2, 2), Port: 9000}, LocalID: 5, PeerID: 6, MSS: 1500, Server: true, Congestion: "*x.Y"}
	w := NewJSONWriter(&buf, info)
	evs := sampleEvents()
	for _, ev := range evs {
		w.Event(ev)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("line %d is not JSON: %s", i+1, line)
		}
	}
	r, err := NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	got := r.Info()
	if !got.Start.Equal(start) || got.Local.String() != "198.18.1.2:4000" || got.Remote.String() != "198.18.2.2:9000" ||
		got.LocalID != 5 || got.PeerID != 6 || got.MSS != 1500 || !got.Server || got.Congestion != "*x.Y" {
		t.Errorf("info %+v", got)
	}
	for i, want := range evs {
		ev, err := r.Next()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if want.Kind == PathMTU {
			want.Detail = "probe \"ok\"\n\x01 ünï \ufffd" // invalid UTF-8 becomes U+FFFD
		}
		if !ev.Time.Equal(want.Time) {
			t.Errorf("event %d time %v, want %v", i, ev.Time, want.Time)
		}
		ev.Time = want.Time
		if ev != want {
			t.Errorf("event %d:\n got %+v\nwant %+v", i, ev, want)
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("after the last event: %v", err)
	}
}

func TestKindNames(t *testing.T) {
	for k := PacketSent; k < numKinds; k++ {
		if n := k.String(); n == "unknown" {
			t.Errorf("kind %d has no name", k)
		} else if p, ok := ParseKind(n); !ok || p != k {
			t.Errorf("ParseKind(%q) = %v, %v", n, p, ok)
		}
	}
	if Kind(0).String() != "unknown" || Kind(200).String() != "unknown" {
		t.Error("kinds out of range have names")
	}
}

func TestReaderErrors(t *testing.T) {
	head := `{"ev":"conn","start":"2026-12-01T10:00:00Z"}` + "\n"
	for _, tc := range []struct{ in, want string }{
		{"", "empty"},
		{`{"ev":"sent"}` + "\n", "not a connection line"},
		{`{"ev":"conn","start":"yesterday"}`, "bad start time"},
		{head + "{bad\n", "line 2"},
		{head + `{"t":1e300,"ev":"sent"}` + "\n", "out of range"},
	} {
		r, err := NewReader(strings.NewReader(tc.in))
		if err == nil {
			_, err = r.Next()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.in, err, tc.want)
		}
	}
	r, _ := NewReader(strings.NewReader(head + `{"t":1,"ev":"future_kind"}` + "\n" + `{"t":2,"ev":"sent","seq":3}` + "\n"))
	if ev, err := r.Next(); err != nil || ev.Kind != PacketSent || ev.Seq != 3 {
		t.Errorf("unknown kinds are not skipped: %+v, %v", ev, err)
	}
}

// TestJSONWriterAllocs: writing an event allocates nothing.
func TestJSONWriterAllocs(t *testing.T) {
	w := NewJSONWriter(io.Discard, ConnInfo{Start: start})
	evs := sampleEvents()
	if n := testing.AllocsPerRun(100, func() {
		for _, ev := range evs {
			w.Event(ev)
		}
	}); n != 0 {
		t.Errorf("%v allocations per %d events", n, len(evs))
	}
}

func BenchmarkJSONWriter(b *testing.B) {
	w := NewJSONWriter(io.Discard, ConnInfo{Start: start})
	ev := Event{Time: start.Add(time.Second), Kind: ACKReceived, Seq: 123456, RTT: 100 * time.Millisecond,
		RTTVar: time.Millisecond, FlowWindow: 8192, InFlight: 800, RecvRate: 8000, Bandwidth: 9000, Detail: "full"}
	b.ReportAllocs()
	for b.Loop() {
		w.Event(ev)
	}
}

// FuzzReader: any input ends in events or an error, never a panic; what a JSONWriter writes
// from a decoded event decodes to the same event.
func FuzzReader(f *testing.F) {
	var buf bytes.Buffer
	w := NewJSONWriter(&buf, ConnInfo{Start: start})
	for _, ev := range sampleEvents() {
		w.Event(ev)
	}
	w.Flush()
	f.Add(buf.String())
	f.Add(`{"ev":"conn","start":"2026-12-01T10:00:00Z"}` + "\n" + `{"t":-5,"ev":"ack","rtt_us":-1e30,"late_us":1e400}`)
	f.Fuzz(func(t *testing.T, in string) {
		r, err := NewReader(strings.NewReader(in))
		if err != nil {
			return
		}
		for range 1000 {
			ev, err := r.Next()
			if err != nil {
				return
			}
			line := AppendJSON(nil, ev, r.Info().Start)
			r2, err := NewReader(strings.NewReader(`{"ev":"conn","start":` + string(appendJSONString(nil, r.Info().Start.Format(time.RFC3339Nano))) + "}\n" + string(line)))
			if err != nil {
				t.Fatal(err)
			}
			ev2, err := r2.Next()
			if err != nil {
				t.Fatalf("re-reading %s: %v", line, err)
			}
			if d := ev2.Time.Sub(ev.Time); d < -time.Microsecond || d > time.Microsecond {
				t.Fatalf("time %v became %v", ev.Time, ev2.Time)
			}
			ev2.Time = ev.Time
			if ev2 != ev {
				t.Fatalf("%+v became %+v", ev, ev2)
			}
		}
	})
}
