package buffer

import (
	"bytes"
	"errors"
	"testing"

	"github.com/udtgo/udt/internal/seqno"
)

// pktLen and pktBytes define the test payload of packet k (k-th from the ISN).
func pktLen(k, pl int) int { return 1 + int(uint64(k+1<<20)*2654435761>>7%uint64(pl)) }

func pktBytes(k, pl int) []byte {
	p := make([]byte, pktLen(k, pl))
	for j := range p {
		p[j] = byte(k*31 + j)
	}
	return p
}

func TestRecvBufferBasics(t *testing.T) {
	isn := seqno.MaxSeq - 1
	b := NewRecvBuffer(4, 8, isn)
	if b.Available() != 4 || b.AckSeq() != isn || b.Cap() != 4 || b.PayloadSize() != 8 {
		t.Fatal("initial state")
	}
	cases := []struct {
		seq  seqno.Seq
		data string
		err  error
	}{
		{isn.Add(1), "bbb", nil}, // out of order
		{isn.Add(1), "bbb", ErrDuplicate},
		{isn.Add(4), "e", ErrBeyondWindow},
		{isn.Add(-1), "z", ErrTooOld},
		{isn.Add(2), "", ErrLength},
		{isn.Add(2), "123456789", ErrLength},
		{isn.Add(3), "dddd", nil},
	}
	for _, c := range cases {
		if err := b.Insert(c.seq, []byte(c.data)); !errors.Is(err, c.err) {
			t.Fatalf("Insert(%d, %q) = %v want %v", c.seq, c.data, err, c.err)
		}
	}
	p := make([]byte, 100)
	if b.Read(p) != 0 || b.Readable() != 0 || b.AckSeq() != isn || b.Stored() != 2 {
		t.Fatal("read before the first packet")
	}
	if err := b.Insert(isn, []byte("aa")); err != nil {
		t.Fatal(err)
	}
	if b.AckSeq() != 0 || b.Readable() != 5 || b.Available() != 2 || !b.Has(isn) || b.Has(0) {
		t.Fatalf("ack %d readable %d avail %d", b.AckSeq(), b.Readable(), b.Available())
	}
	// Partial reads across packets.
	if n := b.Read(p[:1]); n != 1 || p[0] != 'a' {
		t.Fatal("partial read")
	}
	if n := b.Read(p[:3]); n != 3 || string(p[:3]) != "abb" || b.ReadSeq() != seqno.MaxSeq {
		t.Fatalf("read %q, read point %d", p[:n], b.ReadSeq())
	}
	if n := b.Read(p); n != 1 || p[0] != 'b' || b.ReadSeq() != 0 || b.Available() != 4 {
		t.Fatalf("read %d, available %d", n, b.Available())
	}
	// The window moved across the wrap: seq 0..3 fit now; 2 arrived earlier.
	if err := b.Insert(0, []byte("c")); err != nil {
		t.Fatal(err)
	}
	if err := b.Insert(3, []byte("f")); err != nil {
		t.Fatal(err)
	}
	if n := b.Read(p); string(p[:n]) != "cdddd" || b.AckSeq() != 2 {
		t.Fatalf("read %q ack %d", p[:n], b.AckSeq())
	}
	b.Release()
}

func FuzzRecvBuffer(f *testing.F) {
	f.Add(uint32(seqno.MaxSeq-3), uint16(8), uint8(10), []byte{0, 1, 0, 0, 1, 3, 0, 2, 1, 255})
	f.Add(uint32(seqno.MaxSeq), uint16(100), uint8(255), []byte{0, 5, 0, 4, 0, 3, 0, 2, 0, 1, 0, 0, 1, 200})
	f.Fuzz(func(t *testing.T, isn uint32, capacity uint16, payload uint8, ops []byte) {
		pl := int(payload) + 1
		capn := int(capacity)%512 + 1
		start := seqno.SeqFromWire(isn)
		if isn&0x80000000 != 0 { // half the inputs start just before the wrap
			start = seqno.MaxSeq.Add(-int(isn % 1024))
		}
		b := NewRecvBuffer(capn, pl, start)
		defer b.Release()
		var (
			readK, readOff int // model read point: packet index and offset
			have           = map[int]bool{}
			out            []byte // bytes read so far
			p              = make([]byte, 4*pl)
		)
		for len(ops) >= 2 {
			op, a := ops[0]%3, int(ops[1])
			ops = ops[2:]
			switch op {
			case 0, 2: // a packet arrives
				k := readK + a%(capn+8) - 4
				if op == 2 { // near the read point, duplicates likely
					k = readK + a%4 - 1
				}
				data := pktBytes(k, pl)
				err := b.Insert(start.Add(k), data)
				var want error
				switch {
				case k < readK:
					want = ErrTooOld
				case k-readK >= capn:
					want = ErrBeyondWindow
				case have[k]:
					want = ErrDuplicate
				}
				if err != want {
					t.Fatalf("Insert(k=%d) = %v want %v", k, err, want)
				}
				if err == nil {
					have[k] = true
				}
			case 1: // read
				n := b.Read(p[:a*len(p)/255])
				got := p[:n]
				for len(got) > 0 {
					if !have[readK] {
						t.Fatalf("read %d bytes past missing packet %d", len(got), readK)
					}
					want := pktBytes(readK, pl)[readOff:]
					m := min(len(want), len(got))
					if !bytes.Equal(got[:m], want[:m]) {
						t.Fatalf("bytes of packet %d differ", readK)
					}
					got, readOff = got[m:], readOff+m
					if readOff == len(pktBytes(readK, pl)) {
						delete(have, readK)
						readK++
						readOff = 0
					}
				}
				out = append(out[:0], p[:n]...)
			}
			first := readK
			ready := 0
			for have[first] {
				ready += pktLen(first, pl)
				first++
			}
			ready -= readOff
			if b.AckSeq() != start.Add(first) || b.Readable() != ready || b.Available() != capn-(first-readK) ||
				b.Stored() != len(have) || b.ReadSeq() != start.Add(readK) {
				t.Fatalf("state: ack %d/%d readable %d/%d available %d stored %d/%d",
					b.AckSeq(), start.Add(first), b.Readable(), ready, b.Available(), b.Stored(), len(have))
			}
			if ready > 0 && b.Read(nil) != 0 {
				t.Fatal("Read(nil) returned data")
			}
		}
	})
}

// BenchmarkRecvBuffer measures one full packet inserted (with 1 in 8 arriving
// one place late) and read.
func BenchmarkRecvBuffer(b *testing.B) {
	const pl = 1456
	rb := NewRecvBuffer(8192, pl, seqno.MaxSeq-100)
	defer rb.Release()
	data := make([]byte, pl)
	p := make([]byte, 64<<10)
	b.SetBytes(pl)
	b.ReportAllocs()
	seq := rb.ReadSeq()
	i := 0
	for b.Loop() {
		s := seq
		if i%8 == 1 {
			s = seq.Inc() // swap with the next one
		} else if i%8 == 2 {
			s = seq.Dec()
		}
		if err := rb.Insert(s, data); err != nil {
			b.Fatal(err)
		}
		seq = seq.Inc()
		if i++; i%32 == 0 {
			rb.Read(p)
		}
	}
}
