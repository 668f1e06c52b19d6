package congestion_test

import (
	"bytes"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/udtgo/udt/congestion"
	"github.com/udtgo/udt/conn"
)

// halving is a custom rate-based controller: it paces at a rate in bit/s (counting MSS-byte
// datagrams, like UDT_MAXBW) that grows by 1 Mbit/s per SYN-spaced ACK and halves on a loss report
// (at most once per RTT), between 1 Mbit/s and 1 Gbit/s. The window is left to the flow window.
// The counters are atomic because the example reads them while the connection runs.
type halving struct {
	mss     int
	rate    float64 // bit/s
	rtt     time.Duration
	lastInc time.Time
	lastCut time.Time
	acks    atomic.Int64 // ACKs seen
	sent    atomic.Int64 // data packets sent
}

func (h *halving) Init(now time.Time, p congestion.Params) {
	h.mss, h.rate, h.rtt = p.MSS, 10e6, 100*time.Millisecond
	h.lastInc, h.lastCut = now, time.Time{}
}

func (h *halving) OnACK(now time.Time, a congestion.ACK) {
	h.acks.Add(1)
	if a.RTT > 0 {
		h.rtt = a.RTT
	}
	if now.Sub(h.lastInc) >= congestion.SYN {
		h.lastInc = now
		h.rate = min(h.rate+1e6, 1e9)
	}
}

func (h *halving) OnLoss(now time.Time, l congestion.Loss) {
	if now.Sub(h.lastCut) >= h.rtt {
		h.lastCut = now
		h.rate = max(h.rate/2, 1e6)
	}
}

func (h *halving) OnTimeout(now time.Time)                              { h.rate = 1e6 }
func (h *halving) OnPacketSent(now time.Time, seq uint32, size int)     { h.sent.Add(1) }
func (h *halving) OnPacketReceived(now time.Time, seq uint32, size int) {}

func (h *halving) State() congestion.State {
	// MinPeriod converts a rate in bytes/s into the period between MSS-byte packets.
	return congestion.State{
		Period: congestion.MinPeriod(int64(h.rate/8), h.mss),
		Window: congestion.NoWindowLimit,
	}
}

// A custom controller plugged into a connection: Config.Congestion is a Factory, called once per
// connection. Here a client sends 256 KiB over loopback UDP to a listener, both sides with the
// custom controller; the client keeps a handle on its own to read its counters.
func Example_connection() {
	server := &conn.Config{
		Congestion: func() congestion.Controller { return new(halving) },
		Pacer:      "gotimer", // the Go runtime timer: portable, no CPU spent waiting
	}
	ln, err := conn.Listen("udp", "127.0.0.1:0", server)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ln.Close()

	data := bytes.Repeat([]byte("udt congestion example "), 256<<10/23+1)[:256<<10]
	received := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			received <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c) // until the client's Close
		received <- b
	}()

	var made atomic.Int32
	var cc atomic.Pointer[halving]
	client := &conn.Config{
		Congestion: func() congestion.Controller {
			h := new(halving)
			made.Add(1)
			cc.Store(h)
			return h
		},
		Pacer: "gotimer",
	}
	c, err := conn.Dial("udp", ln.Addr().String(), client)
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := c.Write(data); err != nil {
		fmt.Println(err)
	}
	c.Close() // lingers until the data is acknowledged
	got := <-received

	h := cc.Load()
	fmt.Println("received intact:", bytes.Equal(got, data), len(got), "bytes")
	fmt.Println("client controllers made:", made.Load())
	fmt.Println("the controller saw ACKs:", h.acks.Load() > 0)
	fmt.Println("the controller saw every packet sent:", h.sent.Load() >= int64(len(data)/1456))
	// Output:
	// received intact: true 262144 bytes
	// client controllers made: 1
	// the controller saw ACKs: true
	// the controller saw every packet sent: true
}
