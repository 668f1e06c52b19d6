package buffer

import (
	"bytes"
	"testing"

	"github.com/udtgo/udt/internal/seqno"
)

// A message pinned for a read in parts (PinMessage, ReadPinned) stays whole and in place until
// its last part: a drop request over it spares it, ReadMessage and Readable see nothing, an
// out-of-order one stays where it is when the read point reaches it, and UnpinMessage leaves it
// queued to be read again. Release ends the pin: nothing is copied afterwards.
func TestRecvMessagePinned(t *testing.T) {
	b := NewMessageRecvBuffer(16, 4, seqno.MaxSeq-2) // wraps
	put := func(off int, ff uint32, order bool, no seqno.Msg) {
		t.Helper()
		s := b.ReadSeq().Add(off)
		w := Word1(ff, order, no)
		if err := b.InsertMessage(s, w, msgPkt(s, w)); err != nil {
			t.Fatal(err)
		}
	}
	readParts := func(size, part int) []byte {
		t.Helper()
		out := make([]byte, size)
		n := 0
		for {
			k, done := b.ReadPinned(out[n:min(size, n+part)])
			if n += k; done {
				break
			}
			if k == 0 {
				t.Fatalf("ReadPinned stalled at %d of %d bytes", n, size)
			}
		}
		if n != size {
			t.Fatalf("read %d of %d bytes", n, size)
		}
		return out
	}

	// The head message: three packets, in order.
	put(0, ffFirst, true, 1)
	put(1, ffMiddle, true, 1)
	put(2, ffLast, true, 1)
	put(3, ffSolo, true, 2)
	first := b.ReadSeq()
	if size := b.PinMessage(); size != 12 || b.Pinned() != 12 || b.PinMessage() != 0 {
		t.Fatalf("PinMessage %d, Pinned %d", size, b.Pinned())
	}
	if n, size := b.ReadMessage(make([]byte, 64)); n != 0 || size != 0 || b.Readable() != 0 {
		t.Fatal("ReadMessage or Readable saw a message while one is pinned")
	}
	part := make([]byte, 5)
	if n, done := b.ReadPinned(part); n != 5 || done {
		t.Fatalf("first part: %d %v", n, done)
	}
	if marked, _ := b.Drop(first, first.Add(2), 1); marked != 0 || b.Discarded() != 0 {
		t.Fatalf("a drop request gave up %d packets of the pinned message", marked)
	}
	rest := readParts(7, 3)
	got := append(part, rest...)
	want := append(append(msgPkt(first, Word1(ffFirst, true, 1)), msgPkt(first.Add(1), Word1(ffMiddle, true, 1))...), msgPkt(first.Add(2), Word1(ffLast, true, 1))...)
	if !bytes.Equal(got, want) || b.ReadSeq() != first.Add(3) || b.Pinned() != 0 || b.Readable() != 4 {
		t.Fatalf("read %x, want %x; read point %d, readable %d", got, want, b.ReadSeq(), b.Readable())
	}
	if n, _ := b.ReadMessage(make([]byte, 4)); n != 4 {
		t.Fatal("message 2")
	}

	// An out-of-order message (O = 0) beyond a hole, pinned, read in part, then left: it stays
	// queued, whole.
	put(2, ffFirst, false, 4)
	put(3, ffLast, false, 4)
	put(4, ffSolo, true, 5)
	o := b.ReadSeq().Add(2)
	if size := b.PinMessage(); size != 8 {
		t.Fatalf("out-of-order message: %d", size)
	}
	b.ReadPinned(make([]byte, 3))
	b.UnpinMessage()
	if b.Readable() != 8 || b.PinMessage() != 8 {
		t.Fatalf("after the unpin: readable %d, want 8", b.Readable())
	}
	b.ReadPinned(make([]byte, 1))
	// The message in the hole before it is given up: the read point moves to the pinned message
	// and stays there until the read ends.
	if marked, _ := b.Drop(o.Add(-2), o.Add(-1), 3); marked != 2 || b.ReadSeq() != o || b.Readable() != 0 {
		t.Fatalf("drop of the hole: %d given up, read point %d (want %d), readable %d", marked, b.ReadSeq(), o, b.Readable())
	}
	if marked, _ := b.Drop(o, o.Add(1), 4); marked != 0 {
		t.Fatal("a drop request gave up a packet of the pinned message")
	}
	got = readParts(7, 2)
	if !bytes.Equal(got, append(msgPkt(o, Word1(ffFirst, false, 4)), msgPkt(o.Add(1), Word1(ffLast, false, 4))...)[1:]) {
		t.Fatalf("out-of-order message read %x", got)
	}
	if b.ReadSeq() != o.Add(2) || b.Readable() != 4 {
		t.Fatalf("after it: read point %d (want %d), readable %d", b.ReadSeq(), o.Add(2), b.Readable())
	}
	if n, _ := b.ReadMessage(make([]byte, 4)); n != 4 {
		t.Fatal("message 5")
	}
	put(0, ffSolo, true, 6)

	// Release during a read: nothing more is copied.
	b.PinMessage()
	b.Release()
	if n, done := b.ReadPinned(make([]byte, 4)); n != 0 || done {
		t.Fatal("ReadPinned after Release")
	}
	if b.Stored() != 0 || b.Discarded() != 0 {
		t.Fatalf("stored %d discarded %d", b.Stored(), b.Discarded())
	}
}

// A read in parts of messages spanning pages and the ring's end frees their memory a page at a
// time: every page comes back (but the spare), in order and out of order, and the slots are
// usable again.
func TestRecvMessagePinnedPages(t *testing.T) {
	const slots, size = 200, 1456 // 44 slots a page
	b := NewMessageRecvBuffer(slots, size, 1000)
	put := func(off, k int, order bool, no seqno.Msg) []byte {
		t.Helper()
		var msg []byte
		for j := range k {
			s := b.ReadSeq().Add(off + j)
			p := bytes.Repeat([]byte{byte(s), byte(no)}, size/2)
			if err := b.InsertMessage(s, Word1(position(j, k), order, no), p); err != nil {
				t.Fatal(err)
			}
			msg = append(msg, p...)
		}
		return msg
	}
	read := func(want []byte) {
		t.Helper()
		if n := b.PinMessage(); n != len(want) {
			t.Fatalf("pinned %d bytes, want %d", n, len(want))
		}
		out := make([]byte, len(want))
		for n, done := 0, false; !done; {
			var k int
			k, done = b.ReadPinned(out[n:min(len(out), n+5000)])
			n += k
		}
		if !bytes.Equal(out, want) {
			t.Fatal("message read in parts differs")
		}
	}
	read(put(0, 150, true, 1)) // the read point to slot 150
	if b.Memory() > PageSize || b.Stored() != 0 {
		t.Fatalf("after message 1: %d bytes held, %d packets", b.Memory(), b.Stored())
	}
	read(put(0, 120, true, 2)) // across the ring's end
	if b.Memory() > PageSize || b.Stored() != 0 {
		t.Fatalf("after message 2: %d bytes held, %d packets", b.Memory(), b.Stored())
	}
	late := put(3, 100, false, 4) // out of order, behind a hole of three packets
	read(late)
	if b.Memory() > 2*PageSize || b.Stored() != 0 { // the hole's page and the spare at most
		t.Fatalf("after the out-of-order message: %d bytes held, %d packets", b.Memory(), b.Stored())
	}
	first := put(0, 3, true, 3)
	if n, _ := b.ReadMessage(make([]byte, 3*size)); n != len(first) || b.ReadSeq() != seqno.Seq(1000+150+120+103) {
		t.Fatalf("the message in the hole: %d bytes, read point %d", n, b.ReadSeq())
	}
	if b.Memory() > PageSize || b.Stored() != 0 || b.Available() != slots {
		t.Fatalf("at the end: %d bytes held, %d packets, %d available", b.Memory(), b.Stored(), b.Available())
	}
}
