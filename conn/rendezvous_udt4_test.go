package conn

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/udtgo/udt/internal/packet"
	"github.com/udtgo/udt/internal/simnet"
)

// udt4Rendezvous returns the captured datagrams of UDT 4.11's rendezvous (scenario g of
// internal/packet/testdata/udt4/README.md), by direction: c2s from peer A, s2c from peer B.
func udt4Rendezvous(t *testing.T) (a, b [][]byte) {
	t.Helper()
	f, err := os.Open("../internal/packet/testdata/udt4/rendezvous.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var v struct {
			Dir, Hex string
		}
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		raw, err := hex.DecodeString(v.Hex)
		if err != nil {
			t.Fatal(err)
		}
		if v.Dir == "c2s" {
			a = append(a, raw)
		} else {
			b = append(b, raw)
		}
	}
	return a, b
}

// Our Rendezvous against UDT 4.11's captured rendezvous peer B, replayed: our requests have the
// reference's layout, we answer its type 0 with a −1 addressed to its socket ID, and its −1
// completes the connection, which then answers with a −2 (spec §3.3).
func TestRendezvousAgainstUDT4Capture(t *testing.T) {
	capA, capB := udt4Rendezvous(t)
	var refReq, peer0, peer1 packet.Handshake
	if refReq.Decode(capA[0]) != nil || peer0.Decode(capB[0]) != nil || peer1.Decode(capB[1]) != nil {
		t.Fatal("capture does not decode")
	}
	if peer0.ReqType != packet.ReqRendezvous || peer1.ReqType != packet.ReqResponse {
		t.Fatalf("capture: %v then %v", peer0.ReqType, peer1.ReqType)
	}
	synctest.Test(t, func(t *testing.T) {
		l := simnet.LinkConfig{Delay: time.Millisecond}
		p := simnet.NewPair(1, l, l)
		defer p.Close()
		res := make(chan rdvResult, 1)
		go func() {
			c, err := RendezvousPacket(context.Background(), p.A, p.B.LocalAddr(), simConfig())
			res <- rdvResult{c, err}
		}()
		read := func() packet.Handshake {
			t.Helper()
			buf := make([]byte, 2048)
			p.B.SetReadDeadline(time.Now().Add(time.Second))
			n, _, err := p.B.ReadFromUDPAddrPort(buf)
			if err != nil {
				t.Fatal(err)
			}
			var h packet.Handshake
			if err := h.Decode(buf[:n]); err != nil {
				t.Fatalf("not a handshake: %x", buf[:n])
			}
			return h
		}
		ours := read()
		// Layout of the reference's first request, but our own random socket ID and ISN, and our
		// default flow window (min(FlowWindow, receive buffer) = 25600; UDT 4.11's is 8192).
		want := refReq
		want.SocketID, want.ISN = ours.SocketID, ours.ISN
		want.FlowWindow = min(DefaultFlowWindow, DefaultBufferPackets)
		want.SetPeerAddr(p.B.AddrPort().Addr())
		if ours != want {
			t.Fatalf("first request\n got %+v\nwant %+v", ours, want)
		}
		// The reference's B sends its type 0 (to ID 0); we answer −1 to B's ID at once.
		p.B.WriteToUDPAddrPort(capB[0], p.A.AddrPort())
		ans := read()
		if ans.ReqType != packet.ReqResponse || ans.DstSocketID != peer0.SocketID || ans.ISN != ours.ISN {
			t.Fatalf("answer to the peer's type 0: %+v", ans)
		}
		// B's −1, addressed to our socket ID, completes us; we answer with a −2.
		b1 := append([]byte(nil), capB[1]...)
		binary.BigEndian.PutUint32(b1[12:], ours.SocketID)
		p.B.WriteToUDPAddrPort(b1, p.A.AddrPort())
		r := <-res
		if r.err != nil {
			t.Fatal(r.err)
		}
		defer r.c.Close()
		if done := read(); done.ReqType != packet.ReqRendezvousResponse || done.DstSocketID != peer0.SocketID {
			t.Fatalf("after connecting: %+v", done)
		}
		if r.c.peerID != peer0.SocketID || r.c.isn != ours.ISN {
			t.Fatalf("connection: peer %x isn %d", r.c.peerID, r.c.isn)
		}
		// A repeated −1 (B missed our −2) gets another −2 from the connection (spec §3.3).
		p.B.WriteToUDPAddrPort(b1, p.A.AddrPort())
		if again := read(); again.ReqType != packet.ReqRendezvousResponse {
			t.Fatalf("answer to a repeated −1: %+v", again)
		}
	})
}
