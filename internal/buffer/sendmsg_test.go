package buffer

import (
	"testing"

	"github.com/udtgo/udt/internal/seqno"
)

// Messages take whole slots with FF/O/number in word 1; GiveUp skips a message's unsent packets
// but its last, which becomes a stub that never expires; the numbers stay positional.
func TestSendMessages(t *testing.T) {
	isn := seqno.MaxSeq - 1
	b := NewMessageSendBuffer(10*4, 4, isn) // 10 slots of 4 bytes
	if b.Write([]byte("x")) != 0 {
		t.Fatal("stream Write on a message buffer")
	}
	if _, err := b.WriteMessage(make([]byte, 41), Never, false); err != ErrMessageTooLarge {
		t.Fatalf("oversized: %v", err)
	}
	if ok, _ := b.WriteMessage([]byte("abcdefghij"), 100, true); !ok { // 3 packets
		t.Fatal("message 1")
	}
	if ok, _ := b.WriteMessage([]byte("k"), Never, false); !ok { // solo
		t.Fatal("message 2")
	}
	if b.Free() != 6*4 || b.Buffered() != 11 {
		t.Fatalf("free %d buffered %d", b.Free(), b.Buffered())
	}
	if ok, _ := b.WriteMessage(make([]byte, 25), Never, false); ok {
		t.Fatal("a message larger than the free slots was taken")
	}
	want := []uint32{Word1(ffFirst, true, 1), Word1(ffMiddle, true, 1), Word1(ffLast, true, 1), Word1(ffSolo, false, 2)}
	seq, p, msg, _ := b.Next()
	if seq != isn || string(p) != "abcd" || msg != 1 || b.Word1(seq, msg) != want[0] {
		t.Fatalf("first packet: %d %q %d %x", seq, p, msg, b.Word1(seq, msg))
	}
	for k, w := range want {
		if got := b.Word1(isn.Add(k), 0); got != w {
			t.Fatalf("packet %d word 1 %x, want %x", k, got, w)
		}
	}
	if b.Expired(isn, 99) || !b.Expired(isn, 100) || b.NextExpired(99) || !b.NextExpired(100) {
		t.Fatal("deadline")
	}
	// Message 1 expires with one packet sent: the middle one is skipped, the last becomes a stub.
	no, first, last, ok := b.GiveUp(isn)
	if !ok || no != 1 || first != isn || last != isn.Add(2) || b.NextSeq() != isn.Add(2) {
		t.Fatalf("GiveUp: %v %d %d..%d, next %d", ok, no, first, last, b.NextSeq())
	}
	if !b.Stub(last) || b.Stub(first) || b.Expired(last, 1000) || !b.Expired(first, 0) || b.GivenUp() != 1 {
		t.Fatal("stub marking")
	}
	b.GiveUp(isn.Add(1))
	if b.GivenUp() != 1 {
		t.Fatal("a repeated GiveUp counted twice")
	}
	if s, p, _, _ := b.Next(); s != last || string(p) != "ij" {
		t.Fatalf("the stub goes next: %d %q", s, p)
	}
	if n, err := b.Ack(isn.Add(3)); n != 3 || err != nil || b.Buffered() != 1 {
		t.Fatalf("ack: %d %v buffered %d", n, err, b.Buffered())
	}
}
