package buffer

import (
	"bytes"
	"testing"

	"github.com/udtgo/udt/internal/seqno"
)

// A message filled in parts (BeginMessage, FillMessage) is invisible until its last byte is in:
// no packet of it is handed out, acknowledged, given up or counted; its slots are out of Free;
// a later packet-size change does not cut it again; it is then queued exactly as WriteMessage
// queues one. AbortMessage drops it whole and gives its pages back.
func TestSendMessageFill(t *testing.T) {
	isn := seqno.MaxSeq - 1
	b := NewMessageSendBuffer(10*4, 4, isn) // 10 slots of 4 bytes
	if ok, _ := b.WriteMessage([]byte("abc"), Never, false); !ok {
		t.Fatal("message 1")
	}
	b.Next()
	msg := []byte("0123456789ABCDEFGHIJ") // 5 packets
	if ok, err := b.BeginMessage(len(msg), 100, true); !ok || err != nil {
		t.Fatal("BeginMessage", ok, err)
	}
	if ok, _ := b.BeginMessage(1, Never, false); ok {
		t.Fatal("a second BeginMessage while one is being filled")
	}
	if ok, _ := b.WriteMessage([]byte("x"), Never, false); ok {
		t.Fatal("WriteMessage while a message is being filled")
	}
	if b.StartRecut() || b.Grow(4) {
		t.Fatal("a message buffer re-cut or grew")
	}
	b.SetPacketSize(3) // an ICMP report mid-fill: the reserved message keeps its 4-byte packets
	for i, part := range [][]byte{msg[:3], msg[3:9], msg[9:10], msg[10:19]} {
		if n := b.FillMessage(part); n != len(part) {
			t.Fatalf("part %d: took %d of %d", i, n, len(part))
		}
		if b.Unsent() != 0 || b.Buffered() != 3 || b.Free() != 4*3 {
			t.Fatalf("part %d: unsent %d buffered %d free %d: the message shows before its end", i, b.Unsent(), b.Buffered(), b.Free())
		}
		if _, _, _, ok := b.Next(); ok {
			t.Fatal("Next handed out a packet of a message being filled")
		}
		if _, _, last, _ := b.GiveUp(isn); last != isn {
			t.Fatalf("GiveUp reached into the message being filled: last %d", last)
		}
		if b.Filling() != len(msg)-[]int{3, 9, 10, 19}[i] {
			t.Fatalf("Filling %d", b.Filling())
		}
	}
	if _, err := b.Ack(isn.Add(1)); err != nil { // the stub of message 1 was never re-sent: ack it
		t.Fatal(err)
	}
	if n := b.FillMessage(append(msg[19:], "extra"...)); n != 1 || b.Filling() != 0 {
		t.Fatalf("last part: took %d, filling %d", n, b.Filling())
	}
	if b.Unsent() != 5 || b.Buffered() != 20 || b.Free() != 5*3 {
		t.Fatalf("queued: unsent %d buffered %d free %d", b.Unsent(), b.Buffered(), b.Free())
	}
	for j := range 5 {
		seq, p, no, ok := b.Next()
		ff := []uint32{ffFirst, ffMiddle, ffMiddle, ffMiddle, ffLast}[j]
		if !ok || seq != isn.Add(1+j) || !bytes.Equal(p, msg[4*j:4*j+4]) || no != 2 || b.Word1(seq, no) != Word1(ff, true, 2) {
			t.Fatalf("packet %d: %d %q msg %d word 1 %x", j, seq, p, no, b.Word1(seq, no))
		}
	}
	if !b.Expired(isn.Add(1), 100) || b.Expired(isn.Add(1), 99) {
		t.Fatal("the deadline given to BeginMessage")
	}
	if _, err := b.Ack(b.NextSeq()); err != nil {
		t.Fatal(err)
	}

	// Abort: the parts filled are freed, pages and slots, and the number goes to the next message.
	if ok, _ := b.BeginMessage(30, Never, false); !ok {
		t.Fatal("BeginMessage 3")
	}
	b.FillMessage(make([]byte, 13))
	b.AbortMessage()
	if b.Free() != 10*3 || b.Filling() != 0 || b.Unsent() != 0 || b.Memory() > PageSize {
		t.Fatalf("after the abort: free %d filling %d unsent %d memory %d", b.Free(), b.Filling(), b.Unsent(), b.Memory())
	}
	if b.FillMessage([]byte("x")) != 0 {
		t.Fatal("FillMessage without a message")
	}
	if ok, _ := b.WriteMessage([]byte("y"), Never, false); !ok {
		t.Fatal("message after the abort")
	}
	if _, _, no, _ := b.Next(); no != 3 {
		t.Fatalf("the message after an abort is number %d, want 3", no)
	}
	b.Release()
}

// FuzzSendMessageFill drives a small message-mode send buffer with any interleaving of
// BeginMessage, FillMessage parts, Next, retransmission lookups, Ack, GiveUp (a TTL's expiry),
// AbortMessage, Pin and Unpin, packet-size changes and whole WriteMessages. Every packet handed
// out must be a packet of a message whose last byte was in, with its bytes, FF and number; a
// message being filled must be invisible (not sent, acknowledged, given up, counted) and its
// slots out of Free; payloads handed out must not change while their packets are held or pinned
// (a part filled into memory in use would change them); every page goes back at the end.
func FuzzSendMessageFill(f *testing.F) {
	f.Add([]byte{0, 40, 1, 5, 2, 0, 1, 255, 2, 0, 2, 0, 3, 9})
	f.Add([]byte{0, 90, 1, 7, 6, 1, 2, 0, 3, 3, 1, 30, 5, 0, 6, 0, 0, 10, 1, 255})
	f.Add([]byte{8, 12, 2, 0, 0, 60, 7, 3, 1, 200, 4, 0, 2, 0, 9, 1, 1, 255, 2, 0, 4, 2})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const slots, payload = 24, 8
		isn := seqno.MaxSeq - 10 // wraps inside the test
		b := NewMessageSendBuffer(slots*payload, payload, isn)
		type message struct {
			data  []byte
			size  int // bytes per packet
			order bool
			no    seqno.Msg
			first seqno.Seq
		}
		type where struct{ m, j int }
		var (
			msgs    []message
			pkt     = map[seqno.Seq]where{} // packets of the messages queued, by sequence number
			end     = isn                   // one past the last queued packet
			ack     = isn
			part    *message // being filled
			done    int
			pins    int
			kept    int                      // slots acknowledged while pinned
			views   = map[seqno.Seq][]byte{} // payloads handed out, their packets held or pinned
			counter byte
		)
		want := func(s seqno.Seq) []byte {
			w := pkt[s]
			m := msgs[w.m]
			return m.data[w.j*m.size : min((w.j+1)*m.size, len(m.data))]
		}
		check := func(s seqno.Seq, p []byte, what string) {
			t.Helper()
			if _, ok := pkt[s]; !ok || seqno.Offset(s, end) <= 0 || seqno.Offset(ack, s) < 0 {
				t.Fatalf("%s handed out packet %d, not of a queued message held (acknowledged to %d, queued to %d)", what, s, ack, end)
			}
			if !bytes.Equal(p, want(s)) {
				t.Fatalf("%s packet %d: %x, want %x", what, s, p, want(s))
			}
		}
		newData := func(n int) []byte {
			p := make([]byte, n)
			for i := range p {
				counter++
				p[i] = counter
			}
			return p
		}
		queue := func(m message) {
			m.first = end
			msgs = append(msgs, m)
			k := (len(m.data) + m.size - 1) / m.size
			for j := range k {
				pkt[end] = where{len(msgs) - 1, j}
				end = end.Inc()
			}
		}
		for len(ops) >= 2 {
			op, a := ops[0]%10, int(ops[1])
			ops = ops[2:]
			used := seqno.Offset(ack, end)
			switch op {
			case 0, 8: // BeginMessage; 8: WriteMessage
				size := 1 + a%(slots*payload/2)
				k := b.MessagePackets(size)
				m := message{data: newData(size), size: b.PacketSize(), order: a&1 != 0, no: b.nextMsg}
				var ok bool
				if op == 0 {
					ok, _ = b.BeginMessage(size, int64(a), m.order)
				} else {
					ok, _ = b.WriteMessage(m.data, int64(a), m.order)
				}
				if wantOK := part == nil && slots-used-kept >= k; ok != wantOK {
					t.Fatalf("op %d of %d packets: ok %v, want %v (%d used, %d kept, filling %v)", op, k, ok, wantOK, used, kept, part != nil)
				}
				switch {
				case ok && op == 0:
					part, done = &m, 0
				case ok:
					queue(m)
				}
			case 1: // FillMessage, a part of any size (255: the rest)
				p := []byte(nil)
				if part != nil {
					n := min(a%13+1, len(part.data)-done)
					if a == 255 {
						n = len(part.data) - done
					}
					p = part.data[done : done+n]
				}
				if n := b.FillMessage(p); n != len(p) {
					t.Fatalf("FillMessage took %d of %d", n, len(p))
				}
				if part != nil {
					if done += len(p); done == len(part.data) {
						queue(*part)
						part = nil
					}
				}
			case 2: // Next
				s, p, no, ok := b.Next()
				if ok {
					check(s, p, "Next")
					m := msgs[pkt[s].m]
					w := b.Word1(s, no)
					k := (len(m.data) + m.size - 1) / m.size
					j := pkt[s].j
					ff := position(j, k)
					if no != m.no || w != Word1(ff, m.order, m.no) {
						t.Fatalf("packet %d: msg %d word 1 %x, want msg %d word 1 %x", s, no, w, m.no, Word1(ff, m.order, m.no))
					}
					views[s] = p
				}
			case 3: // Ack
				if sent := b.InFlight(); sent > 0 {
					to := ack.Add(a%sent + 1)
					if _, err := b.Ack(to); err != nil {
						t.Fatal(err)
					}
					for s := ack; s != to; s = s.Inc() {
						if pins == 0 {
							delete(views, s)
						}
					}
					if pins > 0 {
						kept += seqno.Offset(ack, to)
					}
					ack = to
				}
			case 4: // GiveUp (the TTL passed)
				if used > 0 {
					s := ack.Add(a % used)
					no, first, last, ok := b.GiveUp(s)
					if !ok || no != msgs[pkt[s].m].no || pkt[first].m != pkt[s].m || pkt[last].m != pkt[s].m || seqno.Offset(last, end) <= 0 {
						t.Fatalf("GiveUp(%d) = %v msg %d, %d..%d (queued to %d)", s, ok, no, first, last, end)
					}
				}
			case 5:
				b.AbortMessage()
				part = nil
			case 6: // Pin, Unpin
				if a&1 != 0 || pins == 0 {
					b.Pin()
					pins++
				} else {
					pins--
					if pins == 0 {
						for s, v := range views {
							if seqno.Offset(ack, s) < 0 {
								if !bytes.Equal(v, want(s)) {
									t.Fatalf("pinned payload of acknowledged packet %d changed", s)
								}
								delete(views, s)
							}
						}
					}
					if freed := b.Unpin(); pins == 0 && freed != kept || pins > 0 && freed != 0 {
						t.Fatalf("Unpin freed %d slots, %d kept", freed, kept)
					}
					if pins == 0 {
						kept = 0
					}
				}
			case 7:
				b.SetPacketSize(1 + a%payload)
			case 9: // a retransmission's lookup
				if sent := b.InFlight(); sent > 0 {
					s := ack.Add(a % sent)
					p, _, ok := b.Packet(s)
					if !ok {
						t.Fatalf("Packet(%d) not found", s)
					}
					check(s, p, "Packet")
				}
			}
			used = seqno.Offset(ack, end)
			if b.AckSeq() != ack || b.Unsent()+b.InFlight() != used {
				t.Fatalf("acknowledged to %d, %d packets held; want %d, %d", b.AckSeq(), b.Unsent()+b.InFlight(), ack, used)
			}
			held := 0
			for s := ack; s != end; s = s.Inc() {
				held += len(want(s))
			}
			reserved, rest := 0, 0
			if part != nil {
				reserved, rest = (len(part.data)+part.size-1)/part.size, len(part.data)-done
			}
			if b.Buffered() != held || b.Filling() != rest || b.Free() != (slots-used-kept-reserved)*b.PacketSize() {
				t.Fatalf("buffered %d filling %d free %d; want %d, %d, %d", b.Buffered(), b.Filling(), b.Free(), held, rest, (slots-used-kept-reserved)*b.PacketSize())
			}
			for s, v := range views { // no part was filled into memory still in use
				if !bytes.Equal(v, want(s)) {
					t.Fatalf("payload of packet %d changed while held", s)
				}
			}
		}
		b.AbortMessage()
		for b.Unsent() > 0 {
			b.Next()
		}
		if _, err := b.Ack(b.NextSeq()); err != nil {
			t.Fatal(err)
		}
		for ; pins > 0; pins-- {
			b.Unpin()
		}
		if b.Memory() > PageSize { // the spare page
			t.Fatalf("%d bytes held with nothing in the buffer", b.Memory())
		}
		b.Release()
	})
}
