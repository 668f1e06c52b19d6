package conn

import (
	"encoding/binary"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/udtgo/udt/internal/packet"
	"github.com/udtgo/udt/internal/simnet"
	"github.com/udtgo/udt/internal/udpio"
)

// FuzzReport feeds the report dispatcher arbitrary ICMP-like reports (the quoted datagram is
// hostile: anyone on the path can forge an ICMP message): it never panics, and a Dial fails only
// on a port unreachable sent to its peer that quotes one of its own handshake requests (type 1 or
// −1, its socket ID and ISN).
func FuzzReport(f *testing.F) {
	const id, isn = 0x1234_5678, 0x0abc_def0
	req := packet.Handshake{Version: packet.Version, SocketType: packet.SocketStream, ISN: isn, MSS: 1500,
		FlowWindow: 8192, ReqType: packet.ReqConnect, SocketID: id}
	encode := func(t packet.ReqType) []byte {
		var hs [packet.HandshakeSize]byte
		r := req
		r.ReqType = t
		return append([]byte(nil), encodeHandshake(hs[:], &r)...)
	}
	good := encode(packet.ReqConnect)
	f.Add(good, uint32(syscall.ECONNREFUSED), uint16(0), true)
	f.Add(encode(packet.ReqResponse), uint32(syscall.ECONNREFUSED), uint16(0), true)   // the second request, echoing the cookie
	f.Add(encode(packet.ReqRendezvous), uint32(syscall.ECONNREFUSED), uint16(0), true) // a rendezvous's: never fails a Dial
	f.Add(good, uint32(syscall.EMSGSIZE), uint16(1400), true)
	f.Add(good[:20], uint32(syscall.ECONNREFUSED), uint16(0), true)
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0x12, 0x34, 0x56, 0x78}, uint32(syscall.EMSGSIZE), uint16(1280), false)
	f.Fuzz(func(t *testing.T, head []byte, errno uint32, mtu uint16, toPeer bool) {
		p := simnet.NewPair(1, simnet.LinkConfig{}, simnet.LinkConfig{})
		defer p.Close()
		cfg, err := simConfig().resolved()
		if err != nil {
			t.Fatal(err)
		}
		m, err := newMux(p.A, false, &cfg)
		if err != nil {
			t.Fatal(err)
		}
		m.acquire()
		defer m.release()
		peer := p.B.AddrPort()
		d := &dialer{peer: peer, isn: isn, failed: make(chan struct{})}
		m.mu.Lock()
		m.dialers[id] = d
		m.mu.Unlock()

		r := udpio.Report{Errno: syscall.Errno(errno), MTU: int(mtu)}
		r.To = netip.AddrPortFrom(peer.Addr(), peer.Port()+1)
		if toPeer {
			r.To = peer
		}
		r.HeadLen = copy(r.Head[:], head)
		m.report(&r, time.Now())

		var got packet.Handshake
		// A request goes to socket ID 0 (spec §3.2): the quoted header's destination.
		want := toPeer && r.Errno == syscall.ECONNREFUSED && r.HeadLen >= packet.HandshakeSize &&
			binary.BigEndian.Uint32(r.Head[12:16]) == 0 &&
			got.Decode(r.Head[:r.HeadLen]) == nil && (got.ReqType == packet.ReqConnect || got.ReqType == packet.ReqResponse) &&
			got.SocketID == id && got.ISN == isn &&
			isHandshake(r.Head[:r.HeadLen])
		select {
		case <-d.failed:
			if !want {
				t.Fatalf("Dial failed on report %+v", r)
			}
		default:
			if want {
				t.Fatalf("Dial not failed on its own refusal %+v", r)
			}
		}
	})
}
