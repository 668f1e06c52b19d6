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

// observing is a DeliveryController: BBR, plus its own reading of the delivery-rate samples the
// sender computes (congestion.Delivery), by the rules Delivery's documentation gives. The
// connection finds OnDelivery by a type assertion on what the Factory returns, so embedding *BBR
// and overriding OnDelivery is enough. The counters are atomic because the example reads them
// while the connection runs.
type observing struct {
	*congestion.BBR
	minRTT   time.Duration
	samples  atomic.Int64 // samples kept
	measured atomic.Int64 // the latest kept sample that measured the path, bytes/s
	raised   atomic.Int64 // the highest kept sample of any kind, bytes/s
	bad      atomic.Int64 // samples with Delivered > 0 and Interval ≤ 0 (there must be none)
}

func (o *observing) OnDelivery(now time.Time, d congestion.Delivery) {
	o.BBR.OnDelivery(now, d)
	if d.RTT > 0 && (o.minRTT == 0 || d.RTT < o.minRTT) {
		o.minRTT = d.RTT
	}
	switch {
	case d.Delivered <= 0:
		return // no sample in this event
	case d.Interval <= 0:
		o.bad.Add(1)
		return
	case o.minRTT > 0 && d.Interval < o.minRTT:
		return // ACKs compressed closer than the path delivers: drop it
	}
	o.samples.Add(1)
	rate := int64(float64(d.Delivered) / d.Interval.Seconds()) // bytes/s of datagrams (PacketSize units)
	if rate > o.raised.Load() {
		o.raised.Store(rate) // any sample may raise an estimate
	}
	if !d.AppLimited && !d.Repair {
		o.measured.Store(rate) // only these may lower one, or show a plateau
	}
}

// A model-based controller plugged into a connection: the client's Factory returns a
// DeliveryController that reads the sender's own delivery-rate samples as it passes them to BBR.
func ExampleDeliveryController() {
	ln, err := conn.Listen("udp", "127.0.0.1:0", &conn.Config{Pacer: "gotimer"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ln.Close()
	data := bytes.Repeat([]byte("delivery-rate samples "), 1<<20/22+1)[:1<<20]
	received := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			received <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		received <- b
	}()

	var cc atomic.Pointer[observing]
	client := &conn.Config{
		Congestion: func() congestion.Controller {
			o := &observing{BBR: congestion.NewBBR()}
			cc.Store(o)
			return o
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

	o := cc.Load()
	fmt.Println("received intact:", bytes.Equal(got, data))
	fmt.Println("samples kept:", o.samples.Load() > 0)
	fmt.Println("a sample measured the path:", o.measured.Load() > 0)
	fmt.Println("no sample raised above the highest:", o.measured.Load() <= o.raised.Load())
	fmt.Println("samples without an interval:", o.bad.Load())
	// Output:
	// received intact: true
	// samples kept: true
	// a sample measured the path: true
	// no sample raised above the highest: true
	// samples without an interval: 0
}
