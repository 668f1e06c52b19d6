package stream

import (
	"crypto/sha256"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/udtgo/udt/internal/buffer"
	"github.com/udtgo/udt/internal/packet"
	"github.com/udtgo/udt/internal/seqno"
)

// rvMsg is a message the storm test writes: its numbers, its packets' payloads, and whether a
// drop request gave it up.
type rvMsg struct {
	first, last seqno.Seq
	no          seqno.Msg
	inOrder     bool
	pkts        [][]byte // payloads
	dropped     bool
}

// TestMessageDropRequestStorm drives a message-mode receiver by hand across the 31-bit wrap:
// messages of 1–6 packets (O = 0 and 1), lost, duplicated and reordered, genuine drop requests
// (whole messages already sent, repeated, arriving early or late, some before the numbers'
// packets and some long after), and, with hostile set, forged requests (random number, ranges
// before, around and after the current position, reversed, out of window). Invariants after
// every packet; every message read is one written, once; strict: every message not dropped is
// read; no NAK names a number before the ACK number or a packet received and held.
func TestMessageDropRequestStorm(t *testing.T) {
	for _, hostile := range []bool{false, true} {
		for seed := uint64(1); seed <= 60; seed++ {
			rvStorm(t, seed, hostile)
		}
	}
}

func rvStorm(t *testing.T, seed uint64, hostile bool) {
	rng := rand.New(rand.NewPCG(seed, 77))
	l, e, s := rvRecv(t, true)
	e.rro.nakAtOnce = rng.IntN(2) == 0
	now := l.now
	var msgs []*rvMsg
	byHash := map[[32]byte]int{}
	seq := s
	for no := seqno.Msg(1); len(msgs) < 700; no++ {
		n := 1 + rng.IntN(6)
		m := &rvMsg{first: seq, no: no, inOrder: rng.IntN(2) == 0}
		var all []byte
		for k := range n {
			p := make([]byte, 1+rng.IntN(1400))
			for j := range p {
				p[j] = byte(rng.Uint32())
			}
			m.pkts = append(m.pkts, p)
			all = append(all, p...)
			_ = k
		}
		m.last = seq.Add(n - 1)
		seq = seq.Add(n)
		byHash[sha256.Sum256(all)] = len(msgs)
		msgs = append(msgs, m)
	}
	end := seq
	bySeq := func(q seqno.Seq) (*rvMsg, int) {
		for _, m := range msgs { // small: fine for a test
			if seqno.Offset(m.first, q) >= 0 && seqno.Offset(q, m.last) >= 0 {
				return m, seqno.Offset(m.first, q)
			}
		}
		return nil, 0
	}
	var pkt func(m *rvMsg, k int) []byte
	stub := func(m *rvMsg) []byte {
		b := pkt(m, len(m.pkts)-1)
		be.PutUint32(b[4:], be.Uint32(b[4:])&^(3<<30)) // the stub: FF = 00, 1 byte
		return b[:headerSize+1]
	}
	pkt = func(m *rvMsg, k int) []byte {
		ff := uint32(0b00)
		switch {
		case len(m.pkts) == 1:
			ff = 0b11
		case k == 0:
			ff = 0b10
		case k == len(m.pkts)-1:
			ff = 0b01
		}
		b := make([]byte, headerSize+len(m.pkts[k]))
		q := m.first.Add(k)
		be.PutUint32(b, uint32(q))
		be.PutUint32(b[4:], buffer.Word1(ff, m.inOrder, m.no))
		be.PutUint32(b[8:], uint32(now.Sub(l.now)/time.Microsecond))
		be.PutUint32(b[12:], e.cfg.LocalID)
		copy(b[headerSize:], m.pkts[k])
		return b
	}
	got := make([]bool, len(msgs))
	buf := make([]byte, 1<<16)
	badNAK := 0
	maxSeen, realFill := s.Dec(), 0
	deliver := func(b []byte) {
		now = now.Add(time.Duration(5+rng.IntN(50)) * time.Microsecond)
		before := e.Stats()
		e.HandlePacket(now, b)
		if !packet.IsControl(b) {
			q := seqno.SeqFromWire(be.Uint32(b))
			after := e.Stats()
			accepted := after.BytesRecv > before.BytesRecv
			if accepted && seqno.Offset(q, maxSeen) > 0 {
				realFill++
			}
			if accepted && after.PktRecvFilled > before.PktRecvFilled && seqno.Offset(q, maxSeen) <= 0 && !hostile {
				t.Errorf("seed %d: %v (largest before %v) counted as a filler", seed, q, maxSeen)
			}
			if seqno.Offset(maxSeen, q) > 0 {
				maxSeen = q
			}
		}
		if err := e.invariants(); err != nil {
			t.Fatalf("seed %d hostile %v: %v", seed, hostile, err)
		}
		ack := e.rcv.AckSeq()
		for {
			c, ok := e.PopControl()
			if !ok {
				break
			}
			chk := func(q seqno.Seq) {
				if seqno.Offset(ack, q) < 0 {
					t.Errorf("seed %d hostile %v: NAK names %v before the ACK number %v", seed, hostile, q, ack)
				} else if e.rcv.Has(q) {
					if m, _ := bySeq(q); m != nil && !m.dropped {
						// held: a received packet, or given up by a forged request
						if !hostile {
							t.Errorf("seed %d: NAK names %v, held, of a message not dropped", seed, q)
						}
					} else {
						badNAK++
					}
				}
			}
			for _, q := range nakNumbers(nil, c) {
				chk(q)
			}
		}
		for {
			n, size, err := e.ReadMessage(buf)
			if err != nil || size > len(buf) {
				t.Fatalf("seed %d: read %d %d %v", seed, n, size, err)
			}
			if n == 0 {
				break
			}
			k, ok := byHash[sha256.Sum256(buf[:n])]
			if !ok {
				if hostile {
					continue
				}
				t.Fatalf("seed %d: read %d bytes that are no message written", seed, n)
			}
			if got[k] {
				t.Fatalf("seed %d hostile %v: message %d read twice", seed, hostile, k)
			}
			got[k] = true
		}
	}
	drop := func(m *rvMsg) []byte {
		info := uint32(m.no) | 1<<31
		last := m.last
		if rng.IntN(2) == 0 { // the reference's form: one past the end, no Inclusive bit
			info &^= 1 << 31
			if m.first != m.last {
				last = last.Inc()
			}
		}
		return ctrlPkt(packet.TypeMsgDropRequest, info, e.cfg.LocalID, uint32(m.first), uint32(last))
	}
	forged := func(at seqno.Seq) []byte {
		first := at.Add(rng.IntN(200) - 100)
		last := first.Add(rng.IntN(30))
		switch rng.IntN(6) {
		case 0:
			last = first.Add(-1 - rng.IntN(10)) // reversed
		case 1:
			last = first.Add(e.rcv.Cap() + rng.IntN(10)) // longer than the window
		case 2:
			first, last = at.Add(e.rcv.Cap()+rng.IntN(100)), at.Add(e.rcv.Cap()+100+rng.IntN(10)) // beyond it
		}
		info := uint32(rng.Uint32N(1<<29)) | uint32(rng.IntN(2))<<31
		if rng.IntN(2) == 0 { // a real message's number
			info = uint32(msgs[rng.IntN(len(msgs))].no) | uint32(rng.IntN(2))<<31
		}
		return ctrlPkt(packet.TypeMsgDropRequest, info, e.cfg.LocalID, uint32(first), uint32(last))
	}
	// First pass: every packet sent once in order, with loss, duplicates, local reordering and
	// drop requests of messages whose packets have all been sent.
	var queue [][]byte
	sent := 0
	for mi, m := range msgs {
		// Give this one up as it goes: its request overtakes its packets (stub included).
		if rng.IntN(25) == 0 {
			m.dropped = true
			queue = append(queue, drop(m))
		}
		for k := range m.pkts {
			if m.dropped && k != len(m.pkts)-1 && rng.IntN(3) != 0 {
				continue // skipped after its give-up (the stub would carry the last number)
			}
			b := pkt(m, k)
			if m.dropped && k == len(m.pkts)-1 {
				b = stub(m)
			}
			if rng.Float64() < 0.1 {
				continue
			}
			queue = append(queue, b)
			if rng.Float64() < 0.05 {
				queue = append(queue, b)
			}
		}
		sent++
		// Give up an earlier message now and then (a genuine request).
		if mi > 3 && rng.IntN(12) == 0 {
			v := msgs[mi-rng.IntN(4)]
			v.dropped = true
			queue = append(queue, drop(v))
		}
		if hostile && rng.IntN(10) == 0 {
			queue = append(queue, forged(e.rcv.AckSeq()))
		}
		for len(queue) > 0 {
			i := 0
			if len(queue) > 1 && rng.IntN(4) == 0 {
				i = rng.IntN(len(queue))
			}
			b := queue[i]
			queue = append(queue[:i], queue[i+1:]...)
			deliver(b)
			if rng.IntN(3) != 0 {
				break
			}
		}
	}
	for _, b := range queue {
		deliver(b)
	}
	// Repair: resend what is missing (not given up), repeat drop requests, until the ACK number
	// reaches the end.
	for round := 0; round < 200 && e.rcv.AckSeq() != end; round++ {
		for q := e.rcv.AckSeq(); seqno.Offset(q, end) > 0; q = q.Inc() {
			if e.rcv.Has(q) || seqno.Offset(e.rcv.AckSeq(), q) < 0 {
				continue
			}
			m, k := bySeq(q)
			if m.dropped {
				if k == 0 || q == e.rcv.AckSeq() {
					deliver(drop(m))
				}
				if q == m.last && rng.Float64() < 0.9 {
					deliver(stub(m)) // the sender resends the stub (its last number stays in its loss list)
				}
				continue
			}
			if rng.Float64() < 0.9 {
				deliver(pkt(m, k))
			}
		}
		if hostile && rng.IntN(2) == 0 {
			deliver(forged(e.rcv.AckSeq()))
		}
	}
	if e.rcv.AckSeq() != end {
		t.Fatalf("seed %d hostile %v: ACK %v, want %v (stalled)", seed, hostile, e.rcv.AckSeq(), end)
	}
	missing := 0
	for i, m := range msgs {
		if !m.dropped && !got[i] {
			missing++
			if !hostile && missing < 5 {
				t.Errorf("seed %d: message %d (%v..%v, O=%v) not read", seed, i, m.first, m.last, m.inOrder)
			}
		}
	}
	st := e.Stats()
	if seed == 1 || missing > 0 && !hostile {
		t.Logf("seed %d hostile %v: wrap at %v..%v, %d missing, %d NAKed given-up numbers; real fillers %d; drops recv %d, discarded %d, filled %d, dup %d, oow %d",
			seed, hostile, s, end, missing, badNAK, realFill, st.Messages.DropReqRecv, st.Messages.Discarded, st.PktRecvFilled, st.Drops.Duplicate, st.Drops.OutOfWindow)
	}
}
