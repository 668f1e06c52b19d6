package simnet

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
// (A → B) and ba (B → A). Close the Pair (or both Conns) to release it.
func NewPair(seed uint64, ab, ba LinkConfig) *Pair {
	n := New(seed)
	p := &Pair{Net: n, AB: n.NewLink(ab), BA: n.NewLink(ba)}
	var err error
	if p.A, err = n.Listen(PairAddrA); err != nil {
		panic(err) // cannot happen on a fresh Network
	}
	if p.B, err = n.Listen(PairAddrB); err != nil {
		panic(err)
	}
	n.Route(p.A.AddrPort().Addr().String(), p.B.AddrPort().Addr().String(), p.AB)
	n.Route(p.B.AddrPort().Addr().String(), p.A.AddrPort().Addr().String(), p.BA)
	return p
}

// Close closes the Network and both Conns.
func (p *Pair) Close() error { return p.Net.Close() }
