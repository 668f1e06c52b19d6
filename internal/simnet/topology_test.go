package simnet

import (
	"testing"
	"testing/synctest"
	"time"
)

func listenT(t *testing.T, n *Network, addr string) *Conn {
	t.Helper()
	c, err := n.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Two flows through one 12 Mbit/s drop-tail bottleneck, each offering 12 Mbit/s.
func TestSharedBottleneck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(1)
		defer n.Close()
		bott := n.NewLink(LinkConfig{Rate: 12_000_000, QueuePackets: 20, Delay: 10 * time.Millisecond})
		back := n.NewLink(LinkConfig{Delay: 10 * time.Millisecond})
		n.Route("198.18.0.0/24", "198.18.1.0/24", bott)
		n.Route("198.18.1.0/24", "198.18.0.0/24", back)
		c1, c2 := listenT(t, n, "198.18.0.1:1000"), listenT(t, n, "198.18.0.2:1000")
		s1, s2 := listenT(t, n, "198.18.1.1:1"), listenT(t, n, "198.18.1.1:2")

		const count = 500
		go send(t, c1, s1.LocalAddr(), count, 1500, time.Millisecond)
		go send(t, c2, s2.LocalAddr(), count, 1500, time.Millisecond)
		res := make(chan []arrival)
		go func() { res <- drain(t, s1, 50*time.Millisecond) }()
		go func() { res <- drain(t, s2, 50*time.Millisecond) }()
		a1, a2 := <-res, <-res

		st := bott.Stats()
		if st.Sent != 2*count || st.Delivered+st.DroppedQueue != st.Sent || st.Delivered != uint64(len(a1)+len(a2)) {
			t.Fatalf("bottleneck stats %+v, received %d + %d", st, len(a1), len(a2))
		}
		// The bottleneck serves exactly one 1500-byte packet per ms while backlogged: about
		// 500 ms of sending plus the 20-packet queue.
		if st.Delivered < count || st.Delivered > count+21 {
			t.Errorf("delivered %d, want %d..%d", st.Delivered, count, count+21)
		}
		if st.MaxQueuedBytes != 20*1500 {
			t.Errorf("MaxQueuedBytes %d, want a full queue (30000)", st.MaxQueuedBytes)
		}
		// Merge arrival times: no two packets less than one serialisation time apart.
		all := append(append([]arrival(nil), a1...), a2...)
		seen := map[time.Time]bool{}
		for _, a := range all {
			if seen[a.at] {
				t.Fatalf("two packets arrived at %v", a.at)
			}
			seen[a.at] = true
			if a.at.Sub(a.at.Truncate(time.Millisecond)) != 0 {
				t.Fatalf("arrival at %v is not on the 1 ms serialisation grid", a.at)
			}
		}
		for i, a := range [][]arrival{a1, a2} {
			if len(a) < count*2/5 {
				t.Errorf("flow %d got %d of %d delivered packets", i+1, len(a), st.Delivered)
			}
		}
		// The reverse path is shared too, unimpaired.
		send(t, s1, c1.LocalAddr(), 1, 10, 0)
		if got := drain(t, c1, 20*time.Millisecond); len(got) != 1 {
			t.Errorf("reverse path delivered %d", len(got))
		}
		if st := back.Stats(); st.Delivered != 1 {
			t.Errorf("reverse link Delivered %d", st.Delivered)
		}
	})
}

// A path of several links applies each in turn; the most specific route wins.
func TestMultiHopRoutes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(1)
		defer n.Close()
		access1 := n.NewLink(LinkConfig{Delay: 2 * time.Millisecond})
		access2 := n.NewLink(LinkConfig{Delay: 30 * time.Millisecond})
		core := n.NewLink(LinkConfig{Delay: 5 * time.Millisecond, Rate: 12_000_000})
		n.Route("198.18.0.0/15", "198.18.1.0/24", access1, core)
		n.Route("198.18.0.2", "198.18.1.0/24", access2, core)
		c1, c2 := listenT(t, n, "198.18.0.1:1"), listenT(t, n, "198.18.0.2:1")
		s := listenT(t, n, "198.18.1.1:1")
		other := listenT(t, n, "198.18.2.1:1") // no route: direct

		start := time.Now()
		send(t, c1, s.LocalAddr(), 1, 1500, 0)
		send(t, c2, s.LocalAddr(), 1, 1500, 0)
		send(t, c1, other.LocalAddr(), 1, 1500, 0)
		if got := drain(t, other, time.Millisecond); len(got) != 1 || got[0].at != start {
			t.Fatalf("unrouted destination: %v, want one instant delivery", got)
		}
		got := drain(t, s, 100*time.Millisecond)
		// c1: 2 ms access + 1 ms serialisation + 5 ms = 8 ms; c2: 30 + 1 + 5 = 36 ms.
		if len(got) != 2 || got[0].at.Sub(start) != 8*time.Millisecond || got[1].at.Sub(start) != 36*time.Millisecond {
			t.Fatalf("arrivals %v, want +8ms and +36ms", got)
		}
		if a, c := access1.Stats(), core.Stats(); a.Delivered != 1 || c.Delivered != 2 {
			t.Errorf("access1 %d, core %d delivered", a.Delivered, c.Delivered)
		}
	})
}

func TestRules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hdr := func(b0, b1 byte) []byte { return append([]byte{b0, b1}, make([]byte, 18)...) }
		nak, ack, data := hdr(0x80, 0x03), hdr(0x80, 0x02), hdr(0x00, 0x03)
		user := hdr(0xFF, 0xFF)
		if typ, ok := UDTControlType(user); !ok || typ != UDTUser {
			t.Errorf("UDTControlType(user) = %#x %v", typ, ok)
		}
		if _, ok := UDTControlType(nak[:15]); ok {
			t.Error("a 15-byte datagram decoded as control")
		}
		p := NewPair(1, LinkConfig{Drop: DropUDTControl(UDTNAK, UDTUser)},
			LinkConfig{Drop: DropFirst(2, IsUDTData)})
		defer p.Close()
		for _, b := range [][]byte{nak, ack, data, user, nak[:10]} {
			p.A.WriteTo(b, p.B.LocalAddr())
		}
		got := drain(t, p.B, time.Millisecond)
		if len(got) != 3 || got[0].seq != 0x80020000 || got[1].seq != 0x00030000 || got[2].size != 10 {
			t.Fatalf("after dropping NAK and user: %v", got)
		}
		for range 3 {
			p.B.WriteTo(data, p.A.LocalAddr())
		}
		p.B.WriteTo(ack, p.A.LocalAddr())
		if got := drain(t, p.A, time.Millisecond); len(got) != 2 {
			t.Fatalf("DropFirst(2, data): received %d of 4, want 2", len(got))
		}
		if a, b := p.AB.Stats(), p.BA.Stats(); a.DroppedRule != 2 || b.DroppedRule != 2 {
			t.Errorf("DroppedRule %d, %d; want 2, 2", a.DroppedRule, b.DroppedRule)
		}
	})
}

// The congestion tests' setup: two flows on a 100 Mbit/s, 20 ms RTT dumbbell.
func TestDumbbell(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rate = 100_000_000
		rtt := 20 * time.Millisecond
		d := NewDumbbell(1, 2,
			LinkConfig{Rate: rate, Delay: rtt / 2, QueueBytes: BDP(rate, rtt)},
			LinkConfig{Delay: rtt / 2})
		defer d.Close()
		if BDP(rate, rtt) != 250_000 {
			t.Fatalf("BDP = %d, want 250000", BDP(rate, rtt))
		}
		// Each flow offers 100 Mbit/s: 1250 bytes every 100 µs, for 2000 packets.
		const count = 2000
		for i := range 2 {
			go send(t, d.Left[i], d.Right[i].LocalAddr(), count, 1250, 100*time.Microsecond)
		}
		res := make(chan []arrival)
		for i := range 2 {
			go func() { res <- drain(t, d.Right[i], 50*time.Millisecond) }()
		}
		a, b := <-res, <-res
		all := append(append([]arrival(nil), a...), b...)
		first, last := all[0].at, all[0].at
		for _, x := range all {
			first, last = minTime(first, x.at), maxTime(last, x.at)
		}
		// 1250 bytes at 100 Mbit/s = 100 µs: the bottleneck runs at exactly its rate.
		if span, want := last.Sub(first), time.Duration(len(all)-1)*100*time.Microsecond; span != want {
			t.Errorf("%d packets over %v, want %v (100 µs each)", len(all), span, want)
		}
		st := d.Forward.Stats()
		if st.DroppedQueue == 0 || st.MaxQueuedBytes != 250_000 {
			t.Errorf("offered 2× the rate but queue stats %+v", st)
		}
		if min(len(a), len(b)) < len(all)*2/5 {
			t.Errorf("unfair split %d / %d", len(a), len(b))
		}
		// 20 ms RTT: a reply takes exactly 10 ms back.
		start := time.Now()
		d.Right[1].WriteTo([]byte("ack"), d.Left[1].LocalAddr())
		if got := drain(t, d.Left[1], 20*time.Millisecond); len(got) != 1 || got[0].at.Sub(start) != 10*time.Millisecond {
			t.Errorf("reverse path: %v", got)
		}
	})
}

func TestPairSetDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPair(1, LinkConfig{}, LinkConfig{})
		defer p.Close()
		p.SetDown(true)
		send(t, p.A, p.B.LocalAddr(), 3, 10, 0)
		send(t, p.B, p.A.LocalAddr(), 3, 10, 0)
		if a, b := drain(t, p.A, time.Millisecond), drain(t, p.B, time.Millisecond); len(a)+len(b) != 0 {
			t.Fatalf("partitioned pair delivered %d, %d", len(a), len(b))
		}
		p.SetDown(false)
		send(t, p.B, p.A.LocalAddr(), 1, 10, 0)
		if a := drain(t, p.A, time.Millisecond); len(a) != 1 {
			t.Fatalf("healed pair delivered %d", len(a))
		}
	})
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
