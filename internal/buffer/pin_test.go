package buffer

import (
	"bytes"
	"testing"

	"github.com/udtgo/udt/internal/seqno"
)

// TestSendBufferPin: payloads handed out before Pin stay unchanged until the last Unpin, though
// ACKs free their packets and Writes (this buffer's, and another buffer's drawing on the same
// page pool) take all the space there is meanwhile; the space comes back at the last Unpin. The
// ring wraps during the pin.
func TestSendBufferPin(t *testing.T) {
	const slots, size = 3 * 44, 1456      // three pages of 44 slots (perPage for 1456-byte slots)
	for _, start := range []int{0, 100} { // the pinned packets lie inside the ring, or across its end
		b := NewSendBuffer(slots*size, size, seqno.MaxSeq-5)
		off := 0 // stream bytes written so far
		write := func(n int) {
			t.Helper()
			if got := b.Write(streamBytes(off, n)); got != n {
				t.Fatalf("Write took %d of %d", got, n)
			}
			off += n
		}
		// Move the ring's head to start.
		if start > 0 {
			write(start * size)
			for range start {
				b.Next()
			}
			if _, err := b.Ack(b.NextSeq()); err != nil {
				t.Fatal(err)
			}
		}
		write(slots * size)
		var views, want [][]byte
		for range 64 {
			_, p, _, _ := b.Next()
			views, want = append(views, p), append(want, bytes.Clone(p))
		}
		b.Pin()
		b.Pin() // nested
		if _, err := b.Ack(b.AckSeq().Add(64)); err != nil {
			t.Fatal(err)
		}
		if b.Free() != 0 || b.Buffered() != (slots-64)*size || b.Write([]byte{1}) != 0 {
			t.Fatalf("pinned: free %d, buffered %d: the freed slots must not be reused", b.Free(), b.Buffered())
		}
		other := NewSendBuffer(8*PageSize, size, 1) // takes pages from the pool meanwhile
		other.Write(bytes.Repeat([]byte{0xAA}, 8*PageSize))
		if freed := b.Unpin(); freed != 0 || b.Free() != 0 {
			t.Fatalf("after the inner Unpin: %d slots freed, free %d, want 0", freed, b.Free())
		}
		for i := range views {
			if !bytes.Equal(views[i], want[i]) {
				t.Fatalf("start %d: pinned payload %d changed", start, i)
			}
		}
		if freed := b.Unpin(); freed != 64 {
			t.Fatalf("the last Unpin freed %d slots, want 64", freed)
		}
		if b.Free() != 64*size {
			t.Fatalf("after the last Unpin: free %d, want %d", b.Free(), 64*size)
		}
		write(64 * size)
		// The stream is intact: what is left reads back in order.
		got := 0
		for {
			_, p, _, ok := b.Next()
			if !ok {
				break
			}
			got += len(p)
		}
		for seq := b.AckSeq(); seq != b.NextSeq(); seq = seq.Inc() {
			p, _, ok := b.Packet(seq)
			k := seqno.Offset(b.AckSeq(), seq)
			if !ok || !bytes.Equal(p, streamBytes(start*size+(64+k)*size, size)) {
				t.Fatalf("start %d: packet %d after the pin is not the stream's", start, k)
			}
		}
		if got != slots*size {
			t.Fatalf("start %d: %d bytes left to send, want %d", start, got, slots*size)
		}
		other.Release()
		b.Release()
	}
}

// TestSendBufferReleasePinned: Release while pinned leaves the pinned pages alone until the last
// Unpin.
func TestSendBufferReleasePinned(t *testing.T) {
	b := NewSendBuffer(10*1000, 1000, 1)
	b.Write(streamBytes(0, 10*1000))
	_, p, _, _ := b.Next()
	want := bytes.Clone(p)
	b.Pin()
	b.Release()
	if b.Memory() == 0 {
		t.Fatal("Release while pinned gave the pages back")
	}
	other := NewSendBuffer(8*PageSize, 1000, 1)
	other.Write(bytes.Repeat([]byte{0xAA}, 8*PageSize))
	if !bytes.Equal(p, want) {
		t.Fatal("pinned payload changed after Release")
	}
	b.Unpin()
	func() {
		defer func() {
			if recover() == nil {
				t.Error("an Unpin beyond the Pins did not panic")
			}
		}()
		b.Unpin()
	}()
	if b.Memory() != 0 {
		t.Fatalf("after the last Unpin %d bytes held, want 0", b.Memory())
	}
	other.Release()
}
