package simnet

import (
	"fmt"
	"time"
)

// Default addresses of NewPair's endpoints.
const (
	PairAddrA = "198.18.0.1:9000"
	PairAddrB = "198.18.0.2:9000"
)

// Pair is two Conns joined by one Link per direction: the common test setup.
type Pair struct {
	Net  *Network
	A, B *Conn // A at PairAddrA, B at PairAddrB
	AB   *Link // carries A → B
	BA   *Link // carries B → A
}

// NewPair returns a fresh Network (seeded with seed) with Conns A and B and the links ab
// (A → B) and ba (B → A). Create it inside the synctest bubble that uses it. Close the Pair
// (or both Conns) to release it.
func NewPair(seed uint64, ab, ba LinkConfig) *Pair {
	n := New(seed)
	p := &Pair{Net: n, AB: n.NewLink(ab), BA: n.NewLink(ba)}
	p.A, p.B = mustListen(n, PairAddrA), mustListen(n, PairAddrB)
	n.Route("198.18.0.1", "198.18.0.2", p.AB)
	n.Route("198.18.0.2", "198.18.0.1", p.BA)
	return p
}

// SetDown blackholes (true) or restores (false) both directions: A and B fall silent to each
// other, as when a peer dies or the path is cut.
func (p *Pair) SetDown(down bool) {
	p.AB.SetDown(down)
	p.BA.SetDown(down)
}

// Close closes the Network and both Conns.
func (p *Pair) Close() error { return p.Net.Close() }

// Dumbbell is the classic shared-bottleneck topology: flows senders on the left
// (198.18.0.1, 198.18.0.2, … port 9000) and as many receivers on the right (198.18.1.1, …),
// all left → right traffic through one Forward link and all right → left traffic through one
// Reverse link, so the flows share the Forward link's rate and queue.
//
// For flows with different RTTs, add a more specific route with an access link in front, e.g.
// d.Net.Route("198.18.0.2", "198.18.1.0/24", d.Net.NewLink(LinkConfig{Delay: 40 * time.Millisecond}), d.Forward).
type Dumbbell struct {
	Net     *Network
	Left    []*Conn // Left[i] at 198.18.0.(i+1):9000
	Right   []*Conn // Right[i] at 198.18.1.(i+1):9000
	Forward *Link   // carries left → right
	Reverse *Link   // carries right → left
}

// NewDumbbell builds a Dumbbell with flows (1–254) sender/receiver pairs on a fresh Network.
func NewDumbbell(seed uint64, flows int, forward, reverse LinkConfig) *Dumbbell {
	if flows < 1 || flows > 254 {
		panic(fmt.Sprintf("simnet: NewDumbbell with %d flows", flows))
	}
	n := New(seed)
	d := &Dumbbell{Net: n, Forward: n.NewLink(forward), Reverse: n.NewLink(reverse)}
	for i := range flows {
		d.Left = append(d.Left, mustListen(n, fmt.Sprintf("198.18.0.%d:9000", i+1)))
		d.Right = append(d.Right, mustListen(n, fmt.Sprintf("198.18.1.%d:9000", i+1)))
	}
	n.Route("198.18.0.0/24", "198.18.1.0/24", d.Forward)
	n.Route("198.18.1.0/24", "198.18.0.0/24", d.Reverse)
	return d
}

// Close closes the Network and every Conn.
func (d *Dumbbell) Close() error { return d.Net.Close() }

// BDP returns the bandwidth-delay product of rate bit/s over rtt in bytes (rate·rtt/8), the
// classic drop-tail queue size for a bottleneck (LinkConfig.QueueBytes).
func BDP(rate int64, rtt time.Duration) int {
	return int(rate / 8 * int64(rtt) / int64(time.Second))
}

func mustListen(n *Network, addr string) *Conn {
	c, err := n.Listen(addr)
	if err != nil {
		panic(err) // cannot happen on a fresh Network
	}
	return c
}
