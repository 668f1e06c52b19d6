package conn

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/udtgo/udt/internal/simnet"
)

// TestManyConnections: 1000 clients dial one Listener at once and each moves 64 KiB, byte-exact.
func TestManyConnections(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 100
	}
	const size = 64 << 10
	synctest.Test(t, func(t *testing.T) {
		net := simnet.New(1)
		defer net.Close()
		srv, err := net.Listen("198.18.0.1:9000")
		if err != nil {
			t.Fatal(err)
		}
		link := simnet.LinkConfig{Delay: 2 * time.Millisecond, Loss: 0.005}
		shut := map[uint32]int{}
		up := link
		up.Drop = func(b []byte) bool {
			if isShutdown(b) {
				shut[binary.BigEndian.Uint32(b[12:])]++
			}
			return false
		}
		net.Route("198.18.1.0/24", "198.18.0.1/32", net.NewLink(up))
		net.Route("198.18.0.1/32", "198.18.1.0/24", net.NewLink(link))
		cfg := simConfig()
		cfg.SendBuffer = 256 << 10
		cfg.RecvBuffer = 256 << 10
		ln, err := NewListener(srv, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()

		want := sha256.Sum256(patternBytes(size))
		var served sync.WaitGroup
		errs := make(chan error, 2*n)
		acceptDone := make(chan struct{})
		go func() {
			defer close(acceptDone)
			for range n {
				c, err := ln.AcceptUDT(context.Background())
				if err != nil {
					errs <- err
					return
				}
				served.Add(1)
				go func() {
					defer served.Done()
					defer c.Close()
					h := sha256.New()
					if m, err := io.Copy(h, c); err != nil || m != size {
						errs <- fmt.Errorf("server read %d bytes: %v; shutdowns seen for it %d; server stats %+v", m, err, shut[c.id], c.Stats())
						return
					}
					if [32]byte(h.Sum(nil)) != want {
						errs <- fmt.Errorf("digest mismatch from %v", c.RemoteAddr())
					}
				}()
			}
		}()
		var clients sync.WaitGroup
		for i := range n {
			clients.Add(1)
			go func() {
				defer clients.Done()
				pc, err := net.ListenAddrPort(netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 18, 1, byte(1 + i%250)}), uint16(10000+i)))
				if err != nil {
					errs <- err
					return
				}
				defer pc.Close()
				c, err := DialPacketContext(context.Background(), pc, srv.LocalAddr(), cfg)
				if err != nil {
					errs <- fmt.Errorf("client %d: %v", i, err)
					return
				}
				if _, err := c.Write(patternBytes(size)); err != nil {
					errs <- fmt.Errorf("client %d write: %v", i, err)
				}
				// Close returns at once; the socket is closed when this goroutine ends, so wait
				// until the data is acknowledged and the connection over.
				if err := c.CloseContext(context.Background()); err != nil {
					errs <- fmt.Errorf("client %d close: %v", i, err)
				}
			}()
		}
		clients.Wait()
		<-acceptDone
		served.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}

func patternBytes(n int) []byte {
	b := make([]byte, n)
	io.ReadFull(newPattern(9), b)
	return b
}
