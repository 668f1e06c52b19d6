package conn

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/udtgo/udt/internal/packet"
	"github.com/udtgo/udt/internal/simnet"
)

// garbage returns one hostile datagram for socket dst: random bytes, truncated headers, valid
// headers with invalid bodies, and well-formed packets of every type with random fields —
// except Shutdown and Error Signal, which UDT4 does not authenticate: a spoofer on the path that
// can send from the peer's address can always end a connection with one of them. For the same
// reason, far, when not 0, is where its data packets' sequence numbers start (spread over a
// quarter of the sequence space after it): forged data from the peer's own address inside the
// receive window is indistinguishable from the peer's, so a test that asserts a byte-exact
// transfer keeps them half the space away from anything sent, where a receiver must drop them
// (random numbers landed in the window in 2–8 % of runs, 2026-12-05).
func garbage(r *rand.Rand, dst, far uint32) []byte {
	switch r.IntN(8) {
	case 0: // random bytes, any length
		b := make([]byte, r.IntN(1600))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	case 1: // truncated header
		b := make([]byte, r.IntN(16))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	case 2: // control header of a random type, random body length (often not a multiple of 4)
		b := make([]byte, 16+r.IntN(64))
		typ := uint32(r.IntN(9))
		if typ == uint32(packet.TypeShutdown) || typ == uint32(packet.TypeErrorSignal) {
			typ = uint32(packet.TypeUserDefined)
		}
		binary.BigEndian.PutUint32(b, 0x80000000|typ<<16)
		binary.BigEndian.PutUint32(b[12:], dst)
		for i := 16; i < len(b); i++ {
			b[i] = byte(r.Uint32())
		}
		return b
	case 3: // NAK with random (mostly invalid) ranges
		b := make([]byte, 16+4*(1+r.IntN(8)))
		binary.BigEndian.PutUint32(b, 0x80000000|uint32(packet.TypeNAK)<<16)
		binary.BigEndian.PutUint32(b[12:], dst)
		for i := 16; i < len(b); i += 4 {
			binary.BigEndian.PutUint32(b[i:], r.Uint32())
		}
		return b
	case 4: // data packet with a random sequence number and payload
		b := make([]byte, 16+r.IntN(1456))
		seq := r.Uint32()
		if far != 0 {
			seq = far + uint32(r.IntN(1<<29))
		}
		binary.BigEndian.PutUint32(b, seq&0x7fffffff)
		binary.BigEndian.PutUint32(b[4:], 0xc0000001)
		binary.BigEndian.PutUint32(b[12:], dst)
		return b
	case 5: // ACK with random words
		b := make([]byte, 16+4*[]int{1, 4, 6, 7}[r.IntN(4)])
		binary.BigEndian.PutUint32(b, 0x80000000|uint32(packet.TypeACK)<<16)
		binary.BigEndian.PutUint32(b[4:], r.Uint32())
		binary.BigEndian.PutUint32(b[12:], dst)
		for i := 16; i < len(b); i += 4 {
			binary.BigEndian.PutUint32(b[i:], r.Uint32())
		}
		return b
	case 6: // ACK2 for a random ACK number
		b := make([]byte, 20)
		binary.BigEndian.PutUint32(b, 0x80000000|uint32(packet.TypeACK2)<<16)
		binary.BigEndian.PutUint32(b[4:], r.Uint32())
		binary.BigEndian.PutUint32(b[12:], dst)
		return b
	default: // handshake with random fields
		b := make([]byte, packet.HandshakeSize)
		binary.BigEndian.PutUint32(b, 0x80000000)
		binary.BigEndian.PutUint32(b[12:], dst)
		for i := 16; i < len(b); i += 4 {
			binary.BigEndian.PutUint32(b[i:], r.Uint32()%8)
		}
		return b
	}
}

// TestHostileSpray sprays malformed, truncated and foreign packets at a live listener and at
// both ends of a connection during a transfer: no panic, and the transfer is byte-exact.
// Packets come both from a foreign address and from the peer's own address (as a spoofer on
// the path could send them).
func TestHostileSpray(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		link := simnet.LinkConfig{Delay: 2 * time.Millisecond, Rate: 200e6, QueueBytes: 1 << 20}
		p := simnet.NewPair(5, link, link)
		defer p.Close()
		evil, err := p.Net.Listen("198.18.0.66:6666")
		if err != nil {
			t.Fatal(err)
		}
		cfg := simConfig()
		ln, err := NewListener(p.B, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		c, s := simConnsOn(t, p, ln, cfg)

		stop := make(chan struct{})
		halt := sync.OnceFunc(func() { close(stop) })
		defer halt()
		sprayed := make(chan int, 1)
		go func() {
			r := rand.New(rand.NewPCG(1, 2))
			n := 0
			tick := time.NewTicker(50 * time.Microsecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					sprayed <- n
					return
				case <-tick.C:
				}
				// Data toward the server follows the client's ISN and back the server's.
				toS, toC := c.isn+1<<30, s.isn+1<<30
				targets := []struct {
					from *simnet.Conn
					to   netip.AddrPort
					dst  uint32
					far  uint32
				}{
					{evil, p.B.AddrPort(), 0, 0},          // listener, foreign source
					{evil, p.B.AddrPort(), s.id, 0},       // server conn, foreign source
					{evil, p.A.AddrPort(), c.id, 0},       // client conn, foreign source
					{p.A, p.B.AddrPort(), s.id, toS},      // server conn, from the peer's address
					{p.B, p.A.AddrPort(), c.id, toC},      // client conn, from the peer's address
					{p.A, p.B.AddrPort(), 0, 0},           // listener, from a known client
					{evil, p.B.AddrPort(), r.Uint32(), 0}, // unknown socket IDs
				}
				for _, tg := range targets {
					tg.from.WriteToUDPAddrPort(garbage(r, tg.dst, tg.far), tg.to)
					n++
				}
			}
		}()
		sendAndCheck(t, c, s, 8<<20, 4)
		halt()
		n := <-sprayed
		cs, ss := c.Stats(), s.Stats()
		t.Logf("sprayed %d packets; client drops %+v; server drops %+v", n, cs.Drops, ss.Drops)
		if cs.Drops.ForeignSource == 0 || ss.Drops.ForeignSource == 0 {
			t.Error("foreign-source packets were not counted")
		}
		if ss.Drops.Malformed == 0 && ss.Drops.IgnoredCtrl == 0 {
			t.Error("malformed packets were not counted")
		}
	})
}

// TestForgedACKNAK: ACKs acknowledging numbers never sent and NAKs naming them are ignored
// and counted; the connection carries on (UDT 4.11 breaks the connection instead).
func TestForgedACKNAK(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		link := simnet.LinkConfig{Delay: 2 * time.Millisecond, Rate: 100e6, QueueBytes: 1 << 20}
		p := simnet.NewPair(6, link, link)
		defer p.Close()
		c, s := simConns(t, p, simConfig())
		stop := make(chan struct{})
		halt := sync.OnceFunc(func() { close(stop) })
		defer halt()
		done := make(chan struct{})
		go func() {
			defer close(done)
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			var buf [64]byte
			for i := uint32(0); ; i++ {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				far := (c.isn + 1<<29 + i) & packet.MaxSeqNo // never sent
				ack := packet.ACK{ControlHeader: packet.ControlHeader{DstSocketID: c.id}, AckSeq: 0, Form: packet.ACKLight, AckNo: far}
				if b, err := ack.AppendBinary(buf[:0]); err == nil {
					p.B.WriteToUDPAddrPort(b, p.A.AddrPort())
				}
				nak := packet.NAK{ControlHeader: packet.ControlHeader{DstSocketID: c.id},
					Ranges: []packet.SeqRange{{First: far, Last: (far + 10) & packet.MaxSeqNo}}}
				if b, err := nak.AppendBinary(buf[:0]); err == nil {
					p.B.WriteToUDPAddrPort(b, p.A.AddrPort())
				}
			}
		}()
		sendAndCheck(t, c, s, 4<<20, 5)
		halt()
		<-done
		d := c.Stats().Drops
		t.Logf("client drops %+v", d)
		if d.ForgedACK == 0 || d.ForgedNAK == 0 {
			t.Fatalf("forged ACKs (%d) or NAKs (%d) not counted", d.ForgedACK, d.ForgedNAK)
		}
	})
}
