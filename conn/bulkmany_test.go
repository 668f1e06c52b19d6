package conn

import (
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/udtgo/udt/congestion"
)

// TestBulkManyOneListener: twenty connections dialed to one Listener over UDP loopback each move
// 8 MiB at once, byte-exact, each closing with everything acknowledged: the Listener's one socket
// reader serves them all, and the twenty dialers' pacers share the process's two Ps. With a fixed
// 100 Mbit/s each and with the default controller. Two ways this broke on 2026-12-04: a reader
// that yielded its P after every batch on a shared socket starved (the Listener went silent for
// 10 s and every sender broke with "peer unresponsive"), and hybrid waiters sleeping raw held
// every P (37.6 s for what takes 1.2 s; with 20 MiB each, not done within the 60 s linger).
func TestBulkManyOneListener(t *testing.T) {
	if testing.Short() {
		t.Skip("ten bulk transfers over UDP loopback")
	}
	for _, cc := range []string{"fixed:100mbit", "bbr"} {
		t.Run(cc, func(t *testing.T) {
			f, err := congestion.ParseSpec(cc)
			if err != nil {
				t.Fatal(err)
			}
			ln, err := Listen("udp", "127.0.0.1:0", &Config{Congestion: f})
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			const n, size = 20, 8 << 20
			peers := make([]chan net.Conn, n) // the accepted side of dialer i, which sent byte i
			for i := range peers {
				peers[i] = make(chan net.Conn, 1)
			}
			go func() {
				for range n {
					r, err := ln.Accept()
					if err != nil {
						return
					}
					var b [1]byte
					if _, err := io.ReadFull(r, b[:]); err != nil || int(b[0]) >= n {
						t.Errorf("the first byte of an accepted connection: %v %v", b, err)
						r.Close()
						continue
					}
					peers[b[0]] <- r
				}
			}()
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					w, err := Dial("udp", ln.Addr().String(), &Config{Congestion: f})
					if err != nil {
						t.Error(err)
						return
					}
					if _, err := w.Write([]byte{byte(i)}); err != nil {
						t.Error(err)
						w.Close()
						return
					}
					select {
					case r := <-peers[i]:
						t.Run(fmt.Sprint(i), func(t *testing.T) { sendAndCheck(t, w, r, size, byte(i)) })
						r.Close()
					case <-time.After(30 * time.Second):
						t.Errorf("dialer %d: its connection was not accepted", i)
						w.Close()
					}
				})
			}
			wg.Wait()
		})
	}
}
