package buffer

import (
	"bytes"
	"slices"
	"testing"

	"github.com/udtgo/udt/internal/seqno"
)

// Packets cut at a smaller size, a size change in the middle, and Grow: the stream of payloads
// handed out is the bytes written, in order, each packet at most PayloadSize long.
func TestPacketSizeAndGrow(t *testing.T) {
	const payload = 1456
	b := NewSendBuffer(100*payload, payload, seqno.Seq(5))
	b.SetPacketSize(1172)
	if b.PacketSize() != 1172 || b.Free() != 100*1172 {
		t.Fatalf("PacketSize %d, Free %d", b.PacketSize(), b.Free())
	}
	src := make([]byte, 60_000)
	for i := range src {
		src[i] = byte(i * 7)
	}
	if n := b.Write(src[:30_000]); n != 30_000 {
		t.Fatalf("Write = %d", n)
	}
	var got []byte
	var lens []int
	take := func() {
		_, p, _, ok := b.Next()
		if !ok {
			t.Fatal("Next: nothing unsent")
		}
		got = append(got, p...)
		lens = append(lens, len(p))
	}
	take()
	if lens[0] != 1172 {
		t.Fatalf("first packet %d bytes, want 1172", lens[0])
	}
	if !b.Grow(1400) || b.NextLen() != 1400 {
		t.Fatalf("Grow(1400): next is %d bytes", b.NextLen())
	}
	take()
	if b.NextLen() != 1172-(1400-1172) {
		t.Fatalf("packet after the grown one: %d bytes, want %d", b.NextLen(), 1172-(1400-1172))
	}
	b.SetPacketSize(payload)
	if n := b.Write(src[30_000:]); n != 30_000 {
		t.Fatalf("second Write = %d", n)
	}
	if b.Grow(payload + 1) {
		t.Fatal("Grow beyond PayloadSize succeeded")
	}
	for b.Unsent() > 0 {
		take()
	}
	if !bytes.Equal(got, src) {
		t.Fatal("payload stream differs from what was written")
	}
	for i, l := range lens {
		if l < 1 || l > payload {
			t.Fatalf("packet %d has %d bytes", i, l)
		}
	}
	// The last full packets of the first Write were cut at 1172, those of the second at 1456.
	if lens[len(lens)-2] != payload {
		t.Fatalf("packets after SetPacketSize(%d): %v", payload, lens[len(lens)-4:])
	}
	if b.Grow(100) {
		t.Fatal("Grow with nothing unsent succeeded")
	}
	if _, err := b.Ack(b.NextSeq()); err != nil || b.Buffered() != 0 {
		t.Fatalf("Ack all: %v, %d bytes left", err, b.Buffered())
	}
}

// Grow never empties the packet it takes from, and leaves everything as it was when it fails.
func TestGrowLimits(t *testing.T) {
	b := NewSendBuffer(10*1000, 1000, 0)
	b.SetPacketSize(600)
	b.Write(make([]byte, 600+100)) // two packets: 600 and 100
	if b.Grow(700) {
		t.Fatal("Grow took the whole next packet")
	}
	if b.NextLen() != 600 {
		t.Fatalf("failed Grow changed the packet: %d", b.NextLen())
	}
	if !b.Grow(699) || b.NextLen() != 699 {
		t.Fatalf("Grow(699): %d", b.NextLen())
	}
	b.Next()
	if b.NextLen() != 1 || b.Grow(2) {
		t.Fatalf("remainder %d bytes; Grow of the last packet must fail", b.NextLen())
	}
}

// A sized buffer holds its capacity in bytes at every packet size down to its minimum.
func TestSendBufferSized(t *testing.T) {
	const capacity, payload, minPayload = 100 * 1456, 1456, 1184
	for _, size := range []int{payload, minPayload, 1300} {
		b := NewSendBufferSized(capacity, payload, minPayload, 0)
		b.SetPacketSize(size)
		if f := b.Free(); f != capacity {
			t.Fatalf("size %d: Free %d, want %d", size, f, capacity)
		}
		if n := b.Write(make([]byte, 2*capacity)); n != capacity || b.Free() != 0 || b.Write([]byte{1}) != 0 {
			t.Fatalf("size %d: Write took %d of %d, Free %d", size, n, capacity, b.Free())
		}
		if want := (capacity + size - 1) / size; b.Unsent() != want {
			t.Fatalf("size %d: %d packets, want %d", size, b.Unsent(), want)
		}
	}
}

// Recut after the packet size grew: the unsent packets are cut again at the new size, the sent
// ones stay, the stream is unchanged and the freed slots are usable again.
func TestRecut(t *testing.T) {
	const payload = 1456
	b := NewSendBufferSized(200*payload, payload, 1184, 0)
	b.SetPacketSize(1184)
	src := make([]byte, 150_000)
	for i := range src {
		src[i] = byte(i*13 + i>>8)
	}
	b.Write(src)
	var got []byte
	for range 3 {
		_, p, _, _ := b.Next()
		got = append(got, p...)
	}
	before := b.Unsent()
	b.SetPacketSize(payload)
	saved := b.Recut()
	_ = saved
	saved = -saved
	if want := before - (150_000-3*1184+payload-1)/payload; saved != want || b.Unsent() != before-saved {
		t.Fatalf("Recut saved %d packets (%d unsent now), want %d", saved, b.Unsent(), want)
	}
	if b.Recut() != 0 {
		t.Fatal("a second Recut changed something")
	}
	for b.Unsent() > 0 {
		_, p, _, _ := b.Next()
		if b.Unsent() > 0 && len(p) != payload {
			t.Fatalf("recut packet of %d bytes", len(p))
		}
		got = append(got, p...)
	}
	if !bytes.Equal(got, src) {
		t.Fatal("stream changed by Recut")
	}
	if _, err := b.Ack(b.NextSeq()); err != nil || b.Memory() > PageSize || b.Buffered() != 0 {
		t.Fatalf("after acking all: %v, %d bytes of pages, %d buffered", err, b.Memory(), b.Buffered())
	}
	if n := b.Write(src); n != len(src) {
		t.Fatalf("Write after Recut took %d", n)
	}
}

// Recut after the size fell: the unsent packets are cut smaller (new slots taken), the stream is
// unchanged, and a buffer without free slots for that leaves them as they are.
func TestRecutShrink(t *testing.T) {
	const payload = 1456
	b := NewSendBufferSized(100*payload, payload, 1184, 0)
	src := make([]byte, 50*payload+77)
	for i := range src {
		src[i] = byte(i*7 + i>>9)
	}
	b.Write(src)
	var got []byte
	_, p, _, _ := b.Next()
	got = append(got, p...)
	before := b.Unsent()
	b.SetPacketSize(1184)
	added := b.Recut()
	if want := (len(src)-payload+1183)/1184 - before; added != want || b.Unsent() != before+added {
		t.Fatalf("Recut added %d packets, want %d", added, want)
	}
	for b.Unsent() > 0 {
		_, p, _, _ := b.Next()
		if b.Unsent() > 0 && len(p) != 1184 {
			t.Fatalf("recut packet of %d bytes", len(p))
		}
		got = append(got, p...)
	}
	if !bytes.Equal(got, src) {
		t.Fatal("stream changed by Recut")
	}
	// A plain buffer (slots for full packets only) that is full cannot cut smaller.
	f := NewSendBuffer(10*payload, payload, 0)
	f.Write(make([]byte, 10*payload))
	f.SetPacketSize(1000)
	if f.Recut() != 0 || f.Unsent() != 10 {
		t.Fatalf("full buffer recut to %d packets", f.Unsent())
	}
}

// mixedSendBuffer returns a buffer holding packets of mixed lengths (lens, each mod payload, + 1:
// each Write at its own packet size, and it tops up the last unsent packet first, so lengths mix
// further), of which sent mod (packets + 1) are sent, with size set for new packets; the bytes
// written, and the sent packets' bytes.
func mixedSendBuffer(lens []byte, payload int, sent, size uint8) (b *SendBuffer, src, got []byte) {
	b = NewSendBufferSized(64*payload, payload, 1, 0)
	for _, l := range lens {
		l = l%byte(payload) + 1
		b.SetPacketSize(int(l))
		chunk := make([]byte, l)
		for i := range chunk {
			chunk[i] = byte(len(src)*7 + i)
		}
		n := b.Write(chunk)
		src = append(src, chunk[:n]...)
	}
	for range int(sent) % (b.Unsent() + 1) {
		_, p, _, _ := b.Next()
		got = append(got, p...)
	}
	b.SetPacketSize(int(size))
	return b, src, got
}

// FuzzRecut: whatever the packet lengths and the new size, Recut keeps the byte stream and cuts
// the unsent packets at the size when it changes anything.
func FuzzRecut(f *testing.F) {
	f.Add([]byte{10, 10, 10, 3}, uint8(15), uint8(2))
	f.Add([]byte{20, 5, 20, 5, 20}, uint8(8), uint8(1))
	f.Add([]byte{7, 30, 7, 7}, uint8(12), uint8(0))
	f.Fuzz(func(t *testing.T, lens []byte, size, sent uint8) {
		const payload = 40
		if len(lens) > 60 || size == 0 || size > payload {
			return
		}
		b, src, got := mixedSendBuffer(lens, payload, sent, size)
		unsent := len(src) - len(got)
		fits := (unsent+int(size)-1)/int(size) <= b.n-b.sent
		b.Recut()
		if fits { // then every unsent packet but the last is cut at the size
			for k := 0; k < b.Unsent()-1; k++ {
				if l := b.st.length(b.slot(b.sent + k)); l != int(size) {
					t.Fatalf("recut packet %d of %d bytes, want %d", k, l, size)
				}
			}
		}
		for b.Unsent() > 0 {
			_, p, _, _ := b.Next()
			if len(p) == 0 || len(p) > payload {
				t.Fatalf("packet of %d bytes", len(p))
			}
			got = append(got, p...)
		}
		if !bytes.Equal(got, src) {
			t.Fatalf("stream changed: %d bytes, want %d", len(got), len(src))
		}
	})
}

// BenchmarkRecut re-cuts a full 8 MiB send buffer (the default SendBuffer: 5 760 unsent packets)
// down to UDT's base size and back up, as a PMTU black-hole fallback and the probe after it do;
// each pass is linear in the unsent packets.
func BenchmarkRecut(b *testing.B) {
	const payload, base = 1456, 1244
	buf := NewSendBufferSized(8<<20, payload, base, 0)
	buf.Write(make([]byte, 8<<20))
	b.SetBytes(2 * int64(buf.Buffered()))
	for b.Loop() {
		buf.SetPacketSize(base)
		buf.Recut()
		buf.SetPacketSize(payload)
		buf.Recut()
	}
	b.ReportMetric(float64(buf.Unsent()), "unsent-pkts")
}

// FuzzRecutSteps: a re-cut done in steps of a few bytes (StartRecut, RecutStep), with the sent
// packets acknowledged and the buffer pinned between steps, leaves the stream and the packet
// lengths exactly as Recut in one call does; while it is in progress Write takes nothing, Free is
// 0, Next hands out nothing and Grow lengthens nothing, while Packet still finds the sent ones.
//
// A second size change (size2, at step again) during the re-cut ends as Recut at size, then
// Recut at size2.
func FuzzRecutSteps(f *testing.F) {
	f.Add([]byte{10, 10, 10, 3}, uint8(15), uint8(2), uint8(7), uint8(0), uint8(0))
	f.Add([]byte{20, 5, 20, 5, 20}, uint8(8), uint8(1), uint8(1), uint8(30), uint8(2))
	f.Add([]byte{7, 30, 7, 7}, uint8(12), uint8(0), uint8(40), uint8(5), uint8(0))
	f.Add([]byte{40, 40, 40, 40, 40, 40}, uint8(9), uint8(3), uint8(20), uint8(40), uint8(1))
	f.Add([]byte("A"), uint8(8), uint8(0), uint8(1), uint8(8), uint8(2)) // StartRecut mid-way ended the re-cut at once (a review)
	f.Fuzz(func(t *testing.T, lens []byte, size, sent, step, size2, again uint8) {
		const payload = 40
		if len(lens) > 60 || size == 0 || size > payload || step == 0 || size2 > payload {
			return
		}
		build := func() (*SendBuffer, []byte, []byte) { return mixedSendBuffer(lens, payload, sent, size) }
		lengths := func(b *SendBuffer) []int {
			var ls []int
			for k := range b.Unsent() {
				ls = append(ls, b.st.length(b.slot(b.sent+k)))
			}
			return ls
		}
		one, _, _ := build()
		one.Recut()

		b, src, got := build()
		inFlight := b.InFlight()
		changed := false
		if b.StartRecut() {
			for steps := 0; !b.RecutStep(int(step)); steps++ {
				if steps > 20*len(src) {
					t.Fatal("RecutStep never ends")
				}
				if size2 != 0 && steps == int(again) {
					b.SetPacketSize(int(size2))
					before := b.rc
					if !b.StartRecut() || !b.Recutting() {
						t.Fatal("StartRecut during a re-cut ended it")
					}
					if before.again = true; b.rc != before {
						t.Fatalf("StartRecut during a re-cut moved it: %+v, was %+v", b.rc, before)
					}
					changed = true
				}
				if b.Write([]byte{1}) != 0 || b.Free() != 0 || b.Grow(payload) {
					t.Fatal("Write, Free or Grow during a re-cut")
				}
				if _, _, _, ok := b.Next(); ok {
					t.Fatal("Next handed out a packet during a re-cut")
				}
				if inFlight > 0 {
					if _, _, ok := b.Packet(b.AckSeq()); !ok {
						t.Fatal("Packet lost a sent packet during a re-cut")
					}
					b.Pin()
					if _, err := b.Ack(b.AckSeq().Add(1)); err != nil {
						t.Fatal(err)
					}
					inFlight--
					b.Unpin()
				}
			}
		}
		if b.Recutting() {
			t.Fatal("Recutting after the last step")
		}
		if changed {
			one.SetPacketSize(int(size2))
			one.Recut()
		}
		want := lengths(one)
		if g := lengths(b); !slices.Equal(g, want) {
			t.Fatalf("stepped re-cut left lengths %v, one call %v", g, want)
		}
		for b.Unsent() > 0 {
			_, p, _, _ := b.Next()
			got = append(got, p...)
		}
		if !bytes.Equal(got, src) {
			t.Fatalf("stream changed: %d bytes, want %d", len(got), len(src))
		}
	})
}
