package buffer

import (
	"bytes"
	"testing"

	"github.com/udtgo/udt/internal/seqno"
)

// msgPkt is the 4-byte payload the message tests put in each packet: its sequence number's low
// 16 bits, its message number's low 8 bits and its word-1 flag bits, so that a delivered message
// can be checked packet by packet.
func msgPkt(seq seqno.Seq, w1 uint32) []byte {
	return []byte{byte(seq >> 8), byte(seq), byte(w1), byte(w1 >> 29)}
}

// checkDelivered verifies that msg (ReadMessage's output) is one consistent message of packets
// that were inserted and not given up: consecutive sequence numbers, one message number, FF
// first…last (or solo). (A sender that mixes O flags in one message gets it delivered whole.)
func checkDelivered(t *testing.T, msg []byte, inserted map[seqno.Seq]uint32, delivered map[seqno.Seq]bool) {
	t.Helper()
	if len(msg) == 0 || len(msg)%4 != 0 {
		t.Fatalf("delivered %d bytes: not whole packets", len(msg))
	}
	k := len(msg) / 4
	var first seqno.Seq
	found := false
	for s, w := range inserted { // find the first packet's sequence number from its low bits
		if byte(s>>8) == msg[0] && byte(s) == msg[1] && byte(w) == msg[2] && byte(w>>29) == msg[3] && !delivered[s] {
			first, found = s, true
			break
		}
	}
	if !found {
		t.Fatalf("delivered a packet never inserted (or twice): %x", msg[:4])
	}
	w0 := inserted[first]
	for j := range k {
		s := first.Add(j)
		w, ok := inserted[s]
		if !ok || !bytes.Equal(msg[4*j:4*j+4], msgPkt(s, w)) {
			t.Fatalf("packet %d of a %d-packet message is not the inserted %d", j, k, s)
		}
		if delivered[s] {
			t.Fatalf("packet %d delivered twice", s)
		}
		delivered[s] = true
		if seqno.MsgFromWire(w) != seqno.MsgFromWire(w0) {
			t.Fatalf("message mixes numbers: %x vs %x", w, w0)
		}
		if Position(w) != position(j, k) {
			t.Fatalf("packet %d of %d has FF %02b", j, k, Position(w))
		}
	}
}

// FuzzRecvMessage drives a small message-mode receive buffer with arbitrary inserts (any
// sequence number near the window, any FF, O and message number), drop requests and reads of
// any size. It must never panic, Readable must always be the next message's size, every message
// read must be whole and consistent (checkDelivered), and every packet accepted must be, at any
// moment, exactly one of held (Stored), read (4 bytes a packet here) or discarded unread
// (Discarded: its message given up by Drop, or broken).
//
// A read op with z ≠ 0 reads in parts (recvpin.go): it pins the next message and copies 1–16
// bytes of it, or (z ≥ 0x80) ends the read early, leaving it queued; the inserts and drops
// between the parts must not change the pinned message (it reads whole, consistent and with the
// bytes inserted), drops stop at it, and no other message reads meanwhile.
func FuzzRecvMessage(f *testing.F) {
	f.Add([]byte{0, 4, 0xc0, 1, 2, 40, 0, 0})                      // a solo packet, read it
	f.Add([]byte{0, 5, 0x80, 1, 0, 4, 0x40, 1, 2, 40, 0, 0})       // first out of place, last at the head
	f.Add([]byte{0, 6, 0x80, 2, 0, 7, 0x40, 2, 1, 6, 1, 2, 2, 40}) // assemble, then drop it
	f.Add([]byte{0, 4, 0xa0, 3, 0, 5, 0x60, 3, 2, 3, 0, 0, 2, 40}) // O = 1, short read first
	f.Add([]byte{0, 4, 0xff, 48, 2, 48, 48, 48, 1, 50, 50, 48})    // a solo message pinned, a byte read, dropped: spared
	f.Fuzz(func(t *testing.T, ops []byte) {
		const capacity = 16
		isn := seqno.MaxSeq - 5 // wraps inside the test
		b := NewMessageRecvBuffer(capacity, 4, isn)
		inserted := map[seqno.Seq]uint32{}
		delivered := map[seqno.Seq]bool{}
		accepted, read := 0, 0
		buf := make([]byte, 4*capacity+8)
		part := make([]byte, 4*capacity) // a message read in parts
		pinned, copied := 0, 0
		isPinned := func(s seqno.Seq) bool {
			d := seqno.Offset(b.msg.pin.first, s)
			return b.msg.pin.n > 0 && d >= 0 && d < b.msg.pin.n
		}
		for len(ops) >= 4 {
			op, x, y, z := ops[0], ops[1], ops[2], ops[3]
			ops = ops[4:]
			seq := b.ReadSeq().Add(int(x%24) - 4)
			no := seqno.Msg(1 + z%5)
			switch op % 3 {
			case 0:
				w1 := uint32(y)>>6<<ffShift | uint32(y>>5&1)<<29 | uint32(no)
				if b.InsertMessage(seq, w1, msgPkt(seq, w1)) == nil {
					inserted[seq] = w1
					accepted++
				}
			case 1:
				last := seq.Add(int(y % 6))
				// The request holds up to the first packet of another message in the window
				// still held (a message's numbers are consecutive).
				stop := last.Inc()
				for s := seq; s != last.Inc(); s = s.Inc() {
					w, ok := inserted[s]
					if ok && !delivered[s] && seqno.Offset(b.ReadSeq(), s) >= 0 && (seqno.MsgFromWire(w) != no || isPinned(s)) {
						stop = s
						break
					}
				}
				rs := b.ReadSeq()
				_, end := b.Drop(seq, last, no)
				if top := rs.Add(capacity); seqno.Offset(top, stop) > 0 {
					stop = top // the window's end
				}
				if seqno.Offset(rs, last) >= 0 && seqno.Offset(stop, end.Inc()) < 0 {
					t.Fatalf("drop [%d, %d] of message %d stopped at %d, before the first other message's packet %d", seq, last, no, end.Inc(), stop)
				}
				for s, w := range inserted { // the range's packets of that message are never delivered
					if seqno.MsgFromWire(w) == no && seqno.Offset(seq, s) >= 0 && seqno.Offset(s, stop) > 0 {
						delete(inserted, s)
					}
				}
			case 2:
				if z != 0 || pinned > 0 {
					if pinned == 0 {
						r := b.Readable()
						if pinned = b.PinMessage(); pinned != r {
							t.Fatalf("pinned a %d-byte message, Readable was %d", pinned, r)
						}
						copied = 0
						if pinned == 0 {
							break
						}
					}
					if z >= 0x80 {
						b.UnpinMessage()
						pinned = 0
						break
					}
					n, done := b.ReadPinned(part[copied:min(pinned, copied+int(z%16)+1)])
					if copied += n; done != (copied == pinned) || n == 0 {
						t.Fatalf("read %d bytes, %d of %d, done %v", n, copied, pinned, done)
					}
					if done {
						checkDelivered(t, part[:pinned], inserted, delivered)
						read += pinned / 4
						pinned = 0
					}
					break
				}
				p := buf[:int(y)%len(buf)]
				n, size := b.ReadMessage(p)
				if size != 0 && n == 0 && size <= len(p) {
					t.Fatalf("a %d-byte message refused for a %d-byte buffer", size, len(p))
				}
				if n > 0 {
					if n != size {
						t.Fatalf("read %d bytes of a %d-byte message", n, size)
					}
					checkDelivered(t, p[:n], inserted, delivered)
					read += n / 4
				}
			}
			if got := b.Stored() + read + b.Discarded(); got != accepted {
				t.Fatalf("%d accepted, but %d held + %d read + %d discarded = %d", accepted, b.Stored(), read, b.Discarded(), got)
			}
			if _, size := b.ReadMessage(nil); size != b.Readable() {
				t.Fatalf("Readable %d, next message %d", b.Readable(), size)
			}
			if a := seqno.Offset(b.ReadSeq(), b.AckSeq()); a < 0 || a > capacity || b.Available() != capacity-a {
				t.Fatalf("ACK number %d packets past the read point, %d available", a, b.Available())
			}
			if b.Stored() < 0 || b.Stored() > capacity {
				t.Fatalf("stored %d", b.Stored())
			}
		}
		// Draining: every remaining message reads whole.
		if pinned > 0 {
			if n, done := b.ReadPinned(part[copied:]); !done || copied+n != pinned {
				t.Fatalf("the pinned read's rest: %d bytes, done %v", n, done)
			}
			checkDelivered(t, part[:pinned], inserted, delivered)
		}
		for b.Readable() > 0 {
			n, _ := b.ReadMessage(buf)
			checkDelivered(t, buf[:n], inserted, delivered)
		}
		b.Release()
	})
}

// A message larger than the read buffer is refused with its size and stays; messages straddling
// the ring's end and the sequence wrap read whole; a dropped message is skipped.
func TestRecvMessageBasics(t *testing.T) {
	b := NewMessageRecvBuffer(8, 4, seqno.MaxSeq-1)
	put := func(off int, ff uint32, no seqno.Msg) {
		t.Helper()
		s := b.ReadSeq().Add(off)
		w := Word1(ff, true, no)
		if err := b.InsertMessage(s, w, []byte{byte(off), 1, 2, 3}); err != nil {
			t.Fatal(err)
		}
	}
	put(0, ffFirst, 1)
	put(2, ffLast, 1)
	if b.Readable() != 0 {
		t.Fatal("incomplete message readable")
	}
	put(1, ffMiddle, 1)
	if b.Readable() != 12 {
		t.Fatalf("readable %d", b.Readable())
	}
	if n, size := b.ReadMessage(make([]byte, 11)); n != 0 || size != 12 {
		t.Fatalf("short read: %d %d", n, size)
	}
	p := make([]byte, 64)
	if n, _ := b.ReadMessage(p); n != 12 || p[0] != 0 || p[4] != 1 || p[8] != 2 {
		t.Fatalf("read %d %v", n, p[:n])
	}
	// Message 2 (3 packets) dropped while its middle is missing; message 3 after it reads.
	put(0, ffFirst, 2)
	put(2, ffLast, 2)
	put(3, ffSolo, 3)
	b.Drop(b.ReadSeq().Add(1), b.ReadSeq().Add(1), 2)
	if n, _ := b.ReadMessage(p); n != 4 || p[0] != 3 {
		t.Fatalf("after the drop: %d %v", n, p[:n])
	}
	if b.Stored() != 0 || b.Available() != 8 {
		t.Fatalf("stored %d available %d", b.Stored(), b.Available())
	}
	// The dropped message's two received packets were discarded unread; the messages read were
	// not (before 2026-12-05 only broken messages counted).
	if d := b.Discarded(); d != 2 {
		t.Fatalf("Discarded %d, want 2", d)
	}
}

// BenchmarkDropRequest measures a message drop request a hostile peer repeats over a full
// 32 768-packet window whose first packet is missing (so nothing is read): "foreign", the window
// holds another message's packets; "given-up", the window's packets were given up by the first
// request. Either changes nothing after the first, and costs O(1) and O(window/64) (UDT 4.11's
// dropMsg, and ours before, scanned the window: about 50 µs a request here).
func BenchmarkDropRequest(b *testing.B) {
	const capacity = 1 << 15
	isn := seqno.Seq(1000)
	for _, name := range []string{"foreign", "given-up"} {
		b.Run(name, func(b *testing.B) {
			rb := NewMessageRecvBuffer(capacity, 4, isn)
			defer rb.Release()
			if name == "foreign" {
				for k := 1; k < capacity; k++ {
					w1 := Word1(ffSolo, false, seqno.Msg(k))
					s := isn.Add(k)
					if err := rb.InsertMessage(s, w1, msgPkt(s, w1)); err != nil {
						b.Fatal(err)
					}
				}
			} else {
				last := isn.Add(capacity - 1)
				w1 := Word1(ffLast, false, 7)
				if err := rb.InsertMessage(last, w1, msgPkt(last, w1)); err != nil {
					b.Fatal(err)
				}
				rb.Drop(isn.Add(1), last, 7)
			}
			b.ResetTimer()
			for range b.N {
				if n, _ := rb.Drop(isn.Add(1), isn.Add(capacity-1), 1<<20); n != 0 {
					b.Fatalf("a repeated request gave up %d packets", n)
				}
			}
		})
	}
}
