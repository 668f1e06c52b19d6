package udpio

import (
	"errors"
	"net/netip"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// reader is the receive state, used only by the one goroutine calling ReadBatch.
type reader struct {
	s    *sysConn
	ms   [maxBatch]ipv4.Message
	bufs [maxBatch][1][]byte // each message's one buffer
	oob  [maxBatch][oobSize]byte

	calls int       // recvmmsg calls that returned datagrams, for tests
	msgs  int       // messages they returned (datagrams, or GRO runs), for tests
	t0    time.Time // the clock read right after the last successful read, for stamps

	// GRO: datagrams land in gbuf (GROBufferSize per buffer: one on first use, doubled up to
	// groBuffers each time a read fills them all), then runs describe the glued datagrams not yet
	// handed out.
	gbuf  []byte
	last  int // messages the last GRO read returned
	runs  [groBuffers]run
	nruns int
	cur   int // first run with datagrams left
}

// run is one GRO read: count datagrams of seg bytes (the last may be shorter) from gbuf[off:end].
type run struct {
	off, end, seg, count int
	addr                 netip.AddrPort
	time                 time.Time // the kernel's receive stamp, shared by the run's datagrams
	truncLast            bool      // the kernel cut the run: its last piece is incomplete
}

// recv runs one recvmmsg into the first len(bufs) messages, with control messages if oob, and
// returns how many arrived (≥ 1) or the error in a *net.OpError.
func (r *reader) recv(bufs [][]byte, oob bool) (int, error) {
	ms := r.ms[:len(bufs)]
	for i := range ms {
		r.bufs[i][0] = bufs[i]
		ms[i].Buffers = r.bufs[i][:]
		ms[i].OOB = nil
		if oob {
			ms[i].OOB = r.oob[i][:]
		}
	}
	defer func() {
		for i := range ms {
			r.bufs[i][0], ms[i].Buffers = nil, nil // keep no caller memory alive
		}
	}()
	for {
		n, err := r.s.x.ReadBatch(ms, 0)
		switch {
		case err == nil && n > 0:
			r.t0 = time.Now()
			r.calls++
			r.msgs += n
			return n, nil
		case err == nil, errors.Is(err, unix.EINTR):
			// Success without a datagram (never seen) or a signal: read again, never report 0.
		default:
			return 0, err
		}
	}
}

func (s *sysConn) readBatch(msgs []Message) (int, error) {
	r := &s.r
	if s.gro.Load() {
		if r.cur == r.nruns {
			if err := r.fillGRO(); err != nil {
				return 0, err
			}
		}
		return r.drain(msgs), nil
	}
	var bufs [maxBatch][]byte
	vlen := min(len(msgs), maxBatch)
	for i := range vlen {
		bufs[i] = msgs[i].Buf
	}
	n, err := r.recv(bufs[:vlen], s.stamps)
	if err != nil {
		return 0, err
	}
	for i := range n {
		x, m := &r.ms[i], &msgs[i]
		m.N, m.Addr = x.N, addrPortOfUDP(x.Addr)
		m.Data = m.Buf[:x.N]
		m.Truncated = x.Flags&unix.MSG_TRUNC != 0
		m.Time = time.Time{}
		if s.stamps {
			_, m.Time = r.parse(r.oob[i][:min(x.NN, oobSize)])
		}
		x.Addr = nil
	}
	if s.lazyGRO && n >= lazyGROBatch {
		s.enableGRO()
	}
	return n, nil
}

// fillGRO reads into the GRO buffers and records the runs; it blocks until at least one arrives.
func (r *reader) fillGRO() error {
	if r.gbuf == nil {
		r.gbuf = make([]byte, GROBufferSize)
	} else if r.last == len(r.gbuf)/GROBufferSize && r.last < groBuffers {
		// The last read filled every buffer: more were waiting. Its runs are all handed out.
		r.gbuf = make([]byte, 2*len(r.gbuf))
	}
	r.nruns, r.cur = 0, 0
	var bufs [groBuffers][]byte
	nb := len(r.gbuf) / GROBufferSize
	for i := range nb {
		bufs[i] = r.gbuf[i*GROBufferSize : (i+1)*GROBufferSize]
	}
	n, err := r.recv(bufs[:nb], true)
	if err != nil {
		return err
	}
	r.last = n
	for i := range n {
		x := &r.ms[i]
		r.addRun(i*GROBufferSize, x.N, r.oob[i][:min(x.NN, oobSize)], addrPortOfUDP(x.Addr),
			x.Flags&unix.MSG_TRUNC != 0)
		x.Addr = nil
	}
	return nil
}

// addRun records n bytes read at gbuf[off:] with control messages oob.
func (r *reader) addRun(off, n int, oob []byte, from netip.AddrPort, trunc bool) {
	seg, stamp := r.parse(oob)
	if seg <= 0 || seg >= n {
		seg = max(n, 1) // one datagram (possibly empty)
	} else if trunc && n%seg == 0 {
		trunc = false // the cut fell between datagrams: what we have is whole
	}
	r.runs[r.nruns] = run{off: off, end: off + n, seg: seg, count: max((n+seg-1)/seg, 1),
		addr: from, truncLast: trunc, time: stamp}
	r.nruns++
}

// parse decodes the control messages of one read: the UDP_GRO segment size (0 if none) and the
// SCM_TIMESTAMPNS receive stamp as a monotonic time (zero if none or untrusted, see stampTime).
func (r *reader) parse(oob []byte) (seg int, stamp time.Time) {
	seg, ns, ok := parseCmsgs(oob)
	if ok {
		stamp = stampTime(r.t0, ns)
	}
	return seg, stamp
}

// drain hands out datagrams of the pending runs as slices of gbuf, each cut to len(Buf) as a
// read into Buf would cut it. gbuf is read into again only by fillGRO, once every run is handed
// out, which is in a later ReadBatch call.
func (r *reader) drain(msgs []Message) int {
	out := 0
	for out < len(msgs) && r.cur < r.nruns {
		ru := &r.runs[r.cur]
		l := min(ru.seg, ru.end-ru.off)
		m := &msgs[out]
		k := min(l, len(m.Buf))
		m.Data = r.gbuf[ru.off : ru.off+k : ru.off+k]
		ru.off += l
		ru.count--
		m.N, m.Addr, m.Time = k, ru.addr, ru.time
		m.Truncated = k < l || (ru.count == 0 && ru.truncLast)
		out++
		if ru.count == 0 {
			r.cur++
		}
	}
	return out
}
