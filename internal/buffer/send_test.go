package buffer

import (
	"bytes"
	"errors"
	"testing"

	"github.com/udtgo/udt/internal/seqno"
)

// streamByte is the content of byte i of a test stream.
func streamByte(i int) byte { return byte(i*7 + i>>8 + i>>16) }

func streamBytes(off, n int) []byte {
	p := make([]byte, n)
	for j := range p {
		p[j] = streamByte(off + j)
	}
	return p
}

func TestSendBufferBasics(t *testing.T) {
	isn := seqno.MaxSeq - 1
	b := NewSendBuffer(4*10+5, 10, isn) // 4 slots of 10 bytes
	if b.Cap() != 4 || b.Free() != 40 || b.PayloadSize() != 10 {
		t.Fatalf("cap %d free %d", b.Cap(), b.Free())
	}
	if _, _, _, ok := b.Next(); ok {
		t.Fatal("Next on empty buffer")
	}
	// Small writes coalesce into one packet until it is sent.
	if b.Write([]byte("abc")) != 3 || b.Write([]byte("defghijklm")) != 10 {
		t.Fatal("write")
	}
	if b.Unsent() != 2 || b.Free() != 27 || b.Buffered() != 13 {
		t.Fatalf("unsent %d free %d buffered %d", b.Unsent(), b.Free(), b.Buffered())
	}
	seq, p, msg, ok := b.Next()
	if !ok || seq != isn || string(p) != "abcdefghij" || msg != 1 {
		t.Fatalf("Next: %d %q %d %v", seq, p, msg, ok)
	}
	seq, p, msg, _ = b.Next()
	if seq != seqno.MaxSeq || string(p) != "klm" || msg != 2 || b.InFlight() != 2 || b.NextSeq() != 0 {
		t.Fatalf("Next: %d %q %d", seq, p, msg)
	}
	// The short sent packet is sealed: new bytes go to a new slot.
	if n := b.Write(bytes.Repeat([]byte("x"), 100)); n != 20 || b.Free() != 0 {
		t.Fatalf("write into full buffer took %d, free %d", n, b.Free())
	}
	if b.Write([]byte("y")) != 0 {
		t.Fatal("write into full buffer")
	}
	if p, m, ok := b.Packet(isn); !ok || string(p) != "abcdefghij" || m != 1 {
		t.Fatal("retransmission lookup")
	}
	for _, s := range []seqno.Seq{isn - 1, 0, 1, 5} {
		if _, _, ok := b.Packet(s); ok {
			t.Fatalf("Packet(%d) found", s)
		}
	}
	if _, err := b.Ack(1); !errors.Is(err, ErrAckBeyondSent) {
		t.Fatalf("ack beyond sent: %v", err)
	}
	if n, err := b.Ack(isn - 5); n != 0 || err != nil {
		t.Fatal("old ack")
	}
	if n, err := b.Ack(0); n != 2 || err != nil || b.AckSeq() != 0 || b.Free() != 20 || b.Buffered() != 20 {
		t.Fatalf("ack: %d %v free %d", n, err, b.Free())
	}
	if seq, p, msg, _ := b.Next(); seq != 0 || string(p) != "xxxxxxxxxx" || msg != 3 {
		t.Fatalf("after ack: %d %q %d", seq, p, msg)
	}
	b.Release()
}

func TestSendBufferMessageWrap(t *testing.T) {
	b := NewSendBuffer(10, 10, 0)
	b.nextMsg = seqno.MaxMsg - 1
	for _, want := range []seqno.Msg{seqno.MaxMsg - 1, 1, 2} {
		b.Write([]byte("z"))
		_, _, m, _ := b.Next()
		if m != want {
			t.Fatalf("msg %d want %d", m, want)
		}
		b.Ack(b.NextSeq())
	}
}

func TestSendBufferPages(t *testing.T) {
	b := NewSendBuffer(8192*1456, 1456, 0)
	if b.st.held() != 0 {
		t.Fatal("pages held before use")
	}
	data := make([]byte, 100*1456)
	b.Write(data)
	if h := b.st.held(); h != 3 { // 44 slots per page
		t.Fatalf("held %d pages", h)
	}
	for range 100 {
		b.Next()
	}
	b.Ack(b.NextSeq())
	if h := b.st.held(); h > 1 {
		t.Fatalf("held %d pages after everything was acknowledged", h)
	}
	b.Release()
	if b.st.held() != 0 {
		t.Fatal("pages held after Release")
	}
}

func FuzzSendBuffer(f *testing.F) {
	f.Add(uint32(seqno.MaxSeq-3), uint16(100), uint8(7), []byte{0, 50, 1, 1, 2, 2, 0, 255, 1, 1, 3, 0})
	f.Add(uint32(seqno.MaxSeq), uint16(3000), uint8(200), []byte{0, 255, 0, 255, 1, 0, 1, 0, 2, 9, 2, 0})
	f.Fuzz(func(t *testing.T, isn uint32, capacity uint16, payload uint8, ops []byte) {
		pl := int(payload) + 1
		start := seqno.SeqFromWire(isn)
		if isn&0x80000000 != 0 { // half the inputs start just before the wrap
			start = seqno.MaxSeq.Add(-int(isn % 1024))
		}
		b := NewSendBuffer(int(capacity), pl, start)
		defer b.Release()
		n := b.Cap()
		type pkt struct{ off, n int }
		var (
			written, sentBytes int
			ack                = start
			flight             []pkt // sent, unacknowledged, by seq from ack
			msg                = seqno.FirstMsg
		)
		for len(ops) >= 2 {
			op, a := ops[0]%4, int(ops[1])
			ops = ops[2:]
			switch op {
			case 0: // write
				k := a * pl / 16
				got := b.Write(streamBytes(written, k))
				unsent := written - sentBytes
				slots := len(flight) + (unsent+pl-1)/pl
				room := (n-slots)*pl + ((unsent+pl-1)/pl*pl - unsent)
				if got != min(k, room) {
					t.Fatalf("Write(%d) = %d, room %d", k, got, room)
				}
				written += got
			case 1: // send
				seq, p, m, ok := b.Next()
				unsent := written - sentBytes
				if ok != (unsent > 0) {
					t.Fatalf("Next ok=%v with %d unsent", ok, unsent)
				}
				if !ok {
					break
				}
				want := streamBytes(sentBytes, min(pl, unsent))
				if seq != ack.Add(len(flight)) || !bytes.Equal(p, want) || m != msg {
					t.Fatalf("Next = %d %d bytes msg %d; want %d %d bytes msg %d", seq, len(p), m, ack.Add(len(flight)), len(want), msg)
				}
				msg = msg.Next()
				flight = append(flight, pkt{sentBytes, len(p)})
				sentBytes += len(p)
			case 2: // ack
				d := a%(len(flight)+3) - 1
				got, err := b.Ack(ack.Add(d))
				switch {
				case d <= 0:
					if got != 0 || err != nil {
						t.Fatalf("old ack %d: %d %v", d, got, err)
					}
				case d > len(flight):
					if got != 0 || !errors.Is(err, ErrAckBeyondSent) {
						t.Fatalf("ack beyond: %d %v", got, err)
					}
				default:
					if got != d || err != nil {
						t.Fatalf("ack %d: %d %v", d, got, err)
					}
					flight = flight[d:]
					ack = ack.Add(d)
				}
			case 3: // retransmission lookup
				d := a%(len(flight)+4) - 2
				p, _, ok := b.Packet(ack.Add(d))
				if ok != (d >= 0 && d < len(flight)) {
					t.Fatalf("Packet(+%d) ok=%v, %d in flight", d, ok, len(flight))
				}
				if ok && !bytes.Equal(p, streamBytes(flight[d].off, flight[d].n)) {
					t.Fatalf("Packet(+%d) content differs", d)
				}
			}
			unsent := written - sentBytes
			held := unsent
			for _, q := range flight {
				held += q.n
			}
			slots := len(flight) + (unsent+pl-1)/pl
			if b.Buffered() != held || b.InFlight() != len(flight) || b.AckSeq() != ack ||
				b.Free() != (n-slots)*pl+((unsent+pl-1)/pl*pl-unsent) || b.Unsent() != (unsent+pl-1)/pl {
				t.Fatalf("accounting: buffered %d/%d inflight %d/%d free %d", b.Buffered(), held, b.InFlight(), len(flight), b.Free())
			}
		}
	})
}

// BenchmarkSendBuffer measures one full packet written, sent and acknowledged.
func BenchmarkSendBuffer(b *testing.B) {
	const pl = 1456
	sb := NewSendBuffer(8192*pl, pl, seqno.MaxSeq-100)
	defer sb.Release()
	data := make([]byte, pl)
	b.SetBytes(pl)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if sb.Write(data) != pl {
			b.Fatal("full")
		}
		if _, _, _, ok := sb.Next(); !ok {
			b.Fatal("no packet")
		}
		if i++; i%64 == 0 { // an ACK every 64 packets, as light ACKs would
			if _, err := sb.Ack(sb.NextSeq()); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// Retransmissions carry the message number of the first transmission, across the wrap.
func TestSendBufferPacketMessageAcrossWrap(t *testing.T) {
	b := NewSendBuffer(100, 10, seqno.MaxSeq-1)
	defer b.Release()
	b.nextMsg = seqno.MaxMsg - 2
	b.Write(make([]byte, 45))
	want := []seqno.Msg{seqno.MaxMsg - 2, seqno.MaxMsg - 1, 1, 2, 3}
	for _, w := range want {
		if _, _, m, ok := b.Next(); !ok || m != w {
			t.Fatalf("Next msg %d want %d", m, w)
		}
	}
	for k, w := range want {
		if _, m, ok := b.Packet(seqno.MaxSeq.Add(k - 1)); !ok || m != w {
			t.Fatalf("Packet(+%d) msg %d want %d", k, m, w)
		}
	}
}
