package stream

import (
	"bytes"
	"testing"
	"time"
)

// Messages written and read in parts (BeginMessage and FillMessage, PinMessage and ReadPinned;
// conn's path for messages over 256 KiB), packets, ACKs, NAKs and timers between the parts,
// through loss, reordering and duplication: each arrives once, whole, in-order ones in order.
func TestMessagesInParts(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		r := linkRules{delay: 5 * time.Millisecond, loss: 0.05, dup: 0.03, reorder: 0.05}
		l := newLink(seed, r, r)
		newMsgPair(l, 0, 0)
		a := newMsgApp(t, l, randomSpecs(seed, 150, 20, 0))
		a.parts = 1 + int(seed)*2999 // parts that end inside packets
		if !l.run([2]*app{}, l.now.Add(120*time.Second), func() bool { return a.delivered == len(a.specs) }) {
			t.Fatalf("seed %d: %d of %d messages delivered", seed, a.delivered, len(a.specs))
		}
		st := l.ep[1].Stats()
		if st.RcvLoss == 0 || st.Messages.Read != uint64(len(a.specs)) || l.ep[0].Stats().Messages.Written != uint64(len(a.specs)) {
			t.Fatalf("seed %d: %d losses, sender %+v, receiver %+v", seed, st.RcvLoss, l.ep[0].Stats().Messages, st.Messages)
		}
		for i, e := range l.ep {
			if err := e.invariants(); err != nil {
				t.Fatalf("seed %d, endpoint %d: %v", seed, i, err)
			}
		}
	}
}

// A message being filled whose TTL passes before its last part: nothing of it leaves and no drop
// request names it meanwhile; once complete, the first release gives it up whole (its numbers
// skipped, the last one sent as a stub, a drop request for all of them), and the in-order message
// after it is delivered.
func TestMessageFillTTL(t *testing.T) {
	l := newLink(3, linkRules{delay: 5 * time.Millisecond}, linkRules{delay: 5 * time.Millisecond})
	newMsgPair(l, 0, 0)
	e := l.ep[0]
	msg := make([]byte, 10*1456)
	a := newMsgApp(t, l, []msgSpec{{data: bytes.Repeat([]byte("n"), 3000), inOrder: true, at: 100 * time.Millisecond}})
	if ok, err := e.BeginMessage(l.now, len(msg), 20*time.Millisecond, true); !ok || err != nil {
		t.Fatalf("BeginMessage: %v %v", ok, err)
	}
	e.FillMessage(msg[:5000])
	l.run([2]*app{}, l.now.Add(50*time.Millisecond), func() bool { return false })
	if st := e.Stats(); st.PktSent != 0 || st.Messages.DropReqSent != 0 || st.Messages.Expired != 0 {
		t.Fatalf("while the message is filled: %d packets sent, %+v", st.PktSent, st.Messages)
	}
	if n, done := e.FillMessage(msg[5000:]); !done || n != len(msg)-5000 {
		t.Fatalf("the last part: %d bytes, done %v", n, done)
	}
	if !l.run([2]*app{}, l.now.Add(5*time.Second), func() bool { return a.delivered == 1 && e.Flushed() }) {
		t.Fatalf("the message after it: %d delivered; sender %+v", a.delivered, e.Stats().Messages)
	}
	s, r := e.Stats(), l.ep[1].Stats()
	if s.Messages.Expired != 1 || s.Messages.DropReqSent == 0 || s.Messages.Written != 2 || r.Messages.Read != 1 || r.Messages.DropReqRecv == 0 {
		t.Fatalf("sender %+v, receiver %+v", s.Messages, r.Messages)
	}
	if want := 1 + 3; s.PktSent != uint64(want) { // the stub and the next message's 3 packets
		t.Fatalf("%d data packets sent, want %d", s.PktSent, want)
	}
}

// Close while a message is being filled drops it whole: the close settles as if it was never
// written, the slots are free, and nothing more is taken.
func TestMessageFillClose(t *testing.T) {
	l := newLink(4, linkRules{delay: 5 * time.Millisecond}, linkRules{delay: 5 * time.Millisecond})
	newMsgPair(l, 0, 0)
	e := l.ep[0]
	free := e.snd.Free()
	if ok, _ := e.BeginMessage(l.now, 20000, 0, true); !ok {
		t.Fatal("BeginMessage")
	}
	e.FillMessage(make([]byte, 7000))
	e.Close(l.now, time.Second)
	if n, done := e.FillMessage(make([]byte, 13000)); n != 0 || done {
		t.Fatalf("FillMessage after Close took %d bytes (done %v)", n, done)
	}
	if settled, unacked, why := e.CloseResult(); !settled || unacked != 0 || why != CloseFlushed {
		t.Fatalf("close: settled %v, %d bytes unacknowledged, %v", settled, unacked, why)
	}
	if e.snd.Free() != free || e.snd.Filling() != 0 || e.Stats().Messages.Written != 0 {
		t.Fatalf("free %d of %d, filling %d", e.snd.Free(), free, e.snd.Filling())
	}
	if ok, _ := e.BeginMessage(l.now, 10, 0, true); ok {
		t.Fatal("BeginMessage after Close")
	}
}

// A BeginMessage refused because another message is being filled leaves that message's state
// alone: it completes, counted whole, and the endpoint stays writable (a review found the refusal
// zeroed the byte count and set the room CanWrite waits for to the refused message's).
func TestMessageBeginWhileFilling(t *testing.T) {
	l := newLink(4, linkRules{delay: 5 * time.Millisecond}, linkRules{delay: 5 * time.Millisecond})
	newMsgPair(l, 0, 0)
	e := l.ep[0]
	if ok, _ := e.BeginMessage(l.now, 20000, 0, true); !ok {
		t.Fatal("BeginMessage refused")
	}
	e.FillMessage(make([]byte, 7000))
	if ok, err := e.BeginMessage(l.now, 10, 0, true); ok || err != nil {
		t.Fatalf("second BeginMessage while filling: %v, %v; want refused without error", ok, err)
	}
	n, done := e.FillMessage(make([]byte, 13000))
	st := e.Stats()
	if n != 13000 || !done || st.BytesWritten != 20000 || st.Messages.Written != 1 || !e.CanWrite() {
		t.Fatalf("after the refused BeginMessage: filled %d, done %v, BytesWritten %d (want 20000), Written %d (want 1), CanWrite %v",
			n, done, st.BytesWritten, st.Messages.Written, e.CanWrite())
	}
}
