package stream

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/udtgo/udt/internal/packet"
)

// FuzzHandlePacket feeds one arbitrary datagram to a live endpoint in the middle of a lossy
// transfer in both directions. The engine must not panic and must stay consistent; if the datagram
// was dropped (counted in Stats().Drops) the transfer must complete byte-exact.
func FuzzHandlePacket(f *testing.F) {
	const dst = 0x2222
	f.Add(ctrlPkt(packet.TypeACK, 1, dst, 100, 1000, 500, 8000, 1000, 1000), uint8(0), true)
	f.Add(ctrlPkt(packet.TypeACK, 0, dst, 123456), uint8(1), true)
	f.Add(ctrlPkt(packet.TypeNAK, 0, dst, 1<<31|5, 9), uint8(0), true)
	f.Add(ctrlPkt(packet.TypeNAK, 0, dst, 5), uint8(1), false)
	f.Add(ctrlPkt(packet.TypeACK2, 3, dst), uint8(1), true)
	f.Add(ctrlPkt(packet.TypeKeepAlive, 0, dst, 0), uint8(0), true)
	f.Add(ctrlPkt(packet.TypeHandshake, 0, dst, make([]uint32, 12)...), uint8(0), true)
	f.Add(ctrlPkt(packet.TypeErrorSignal, 4000, dst, 0), uint8(0), true)
	data := make([]byte, 16+100)
	binary.BigEndian.PutUint32(data, 1<<31-60)
	f.Add(data, uint8(1), true)
	f.Add([]byte{0x80, 0x02}, uint8(0), false)
	f.Add([]byte{}, uint8(1), false)

	src := randomBytes(21, 96<<10)
	back := randomBytes(22, 40<<10)
	f.Fuzz(func(t *testing.T, b []byte, target uint8, fixDst bool) {
		r := linkRules{delay: time.Millisecond, loss: 0.03, reorder: 0.05, mtu: 1372}
		l := newLink(9, r, r)
		newPair(l, pairOpts{isnA: 1<<31 - 100, isnB: 1<<31 - 100, mss: 1500, pmtu: pmtuOn,
			ccA: &fixedCC{period: 10 * time.Microsecond}, ccB: &fixedCC{period: 10 * time.Microsecond}})
		a := &app{src: src, rbuf: make([]byte, 8192)}
		c := &app{src: back, rbuf: make([]byte, 8192)}
		apps := [2]*app{a, c}
		deadline := l.now.Add(time.Minute)
		l.run(apps, deadline, func() bool { return len(c.dst) >= len(src)/2 })

		e := l.ep[target&1]
		pkt := append([]byte(nil), b...)
		if fixDst && len(pkt) >= 16 {
			binary.BigEndian.PutUint32(pkt[12:], e.cfg.LocalID)
		}
		before := dropsTotal(e.Stats().Drops)
		e.HandlePacket(l.now, pkt)
		dropped := dropsTotal(e.Stats().Drops) > before
		for i, x := range l.ep {
			if err := x.invariants(); err != nil {
				t.Fatalf("endpoint %d: %v", i, err)
			}
		}
		done := l.run(apps, deadline, func() bool {
			return len(c.dst) >= len(src) && len(a.dst) >= len(back)
		})
		for i, x := range l.ep {
			if err := x.invariants(); err != nil {
				t.Fatalf("endpoint %d after: %v", i, err)
			}
		}
		if !dropped {
			return // a plausible packet (UDT has no authentication): only consistency is required
		}
		if !done {
			t.Fatalf("a dropped packet stalled the transfer: %d/%d %d/%d", len(c.dst), len(src), len(a.dst), len(back))
		}
		if !bytes.Equal(c.dst, src) || !bytes.Equal(a.dst, back) {
			t.Fatal("a dropped packet changed the data")
		}
	})
}
