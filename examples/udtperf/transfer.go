package main

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	mrand "math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// session is one transfer on an established connection, from either end.
type session struct {
	c      transportConn
	r      *bufio.Reader
	proto  string
	cc     string
	strict bool
	moved  atomic.Int64 // payload bytes sent (sender) or received (receiver) so far
	start  atomic.Int64 // unix ns when the data phase started; 0 before

	// progress: both ends speak progress messages (hello.Progress and welcome.Progress).
	progress  bool
	delivered atomic.Int64 // sender: payload bytes the receiver reported read so far
	wmu       sync.Mutex   // receiver: serialises its progress messages with its other writes

	ended atomic.Bool // sender: the end marker and trailer were written (only the report is left)
}

func newSession(c transportConn, proto string, tr *transportFlags) *session {
	s := &session{c: c, r: bufio.NewReaderSize(c, 256<<10), proto: proto}
	if proto == "udt" {
		s.cc, s.strict = tr.cc, tr.strict
	}
	return s
}

// sendSpec says what the sender sends: generated data for a time or a byte count, or a file.
type sendSpec struct {
	bytes int64
	dur   time.Duration
	src   io.Reader // nil: generated data
	hash  hash.Hash // nil: a new SHA-256; else one that has hashed what precedes src (a resumed file)
}

// peerMsg is the receiver's report as read by the sender's reader goroutine.
type peerMsg struct {
	rep report
	err error
}

// endGrace bounds how long an end waits at the close for its peer (to read a last message).
const endGrace = 5 * time.Second

// send runs the sender's side: frames until the spec is met, the end marker and trailer, then
// the reports. It returns the row; a digest mismatch or a peer's error is an error.
func (s *session) send(spec sendSpec) (Row, error) {
	begin := time.Now()
	s.start.Store(begin.UnixNano())
	cpu0, cpuOK := processCPU()
	h := spec.hash
	if h == nil {
		h = sha256.New()
	}
	peer := make(chan peerMsg, 1)
	go func() { // the receiver reports progress, then its report at the end (or early: a failure)
		for {
			var m receiverMsg
			err := readMsg(s.r, &m)
			if err == nil && m.Received != nil {
				s.noteDelivered(*m.Received)
				continue
			}
			peer <- peerMsg{m.report, err}
			return
		}
	}()
	sent, err := s.sendFrames(spec, h, peer, begin)
	if err != nil {
		return Row{}, s.peerError(err, peer)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if err := s.writeEnd(sent, sum); err != nil {
		return Row{}, s.peerError(err, peer)
	}
	m := <-peer
	if m.err != nil {
		return Row{}, m.err
	}
	if m.rep.Error != "" {
		return Row{}, &peerFailure{m.rep.Error}
	}
	s.noteDelivered(m.rep.Bytes)
	own := s.ownReport(true, sent, sum, begin, cpu0, cpuOK)
	if err := writeMsg(s.c, &own); err != nil {
		return Row{}, err
	}
	drain(s.c, s.r, endGrace) // the receiver closes once it has our report
	return makeRow(&own, &m.rep), nil
}

// sendFrames writes data frames until the spec is met or the receiver reports early.
func (s *session) sendFrames(spec sendSpec, h hash.Hash, peer chan peerMsg, begin time.Time) (int64, error) {
	frames := dataFrames()
	buf := make([]byte, 4+frameSize)
	var sent int64
	var drain drainEstimate
	for i := 0; ; i++ {
		select {
		case m := <-peer:
			peer <- m // let peerError see it
			if m.err != nil {
				return sent, m.err
			}
			return sent, &protocolError{"receiver reported before the end of the data"}
		default:
		}
		n := int64(frameSize)
		if spec.bytes > 0 {
			if n = min(n, spec.bytes-sent); n == 0 {
				return sent, nil
			}
		} else if el := time.Since(begin); el >= spec.dur {
			return sent, nil
		} else if drain.wait(s.c, sent, el, spec.dur) {
			time.Sleep(min(drainPoll, spec.dur-el)) // the backlog drains meanwhile
			continue
		}
		frame := frames[i%len(frames)]
		switch {
		case spec.src != nil:
			if _, err := io.ReadFull(spec.src, buf[4:4+n]); err != nil {
				if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
					err = fmt.Errorf("file ended after about %d of %d bytes (changed while sending?)", sent, spec.bytes)
				}
				return sent, &localError{err}
			}
			frame = buf[:4+n]
			binary.BigEndian.PutUint32(frame, uint32(n))
		case n < frameSize:
			copy(buf[4:], frame[4:4+n])
			frame = buf[:4+n]
			binary.BigEndian.PutUint32(frame, uint32(n))
		}
		h.Write(frame[4:])
		if _, err := s.c.Write(frame); err != nil {
			return sent, err
		}
		sent += n
		s.moved.Add(n)
	}
}

// drainEstimate paces a timed sender so that the transfer ends near -time although the
// transport's send buffer (udt's holds 8192 packets, ≈12 MB) is large against the rate: the
// sender writes only while the backlog (bytes written but not yet acknowledged) can leave by
// -time at the rate data has been leaving the buffer, and otherwise waits for it to drain. It
// never stops for good before -time, so a brief dip in the rate (a congestion event, a
// cumulative ACK held back by a loss) pauses the writes at most until the backlog has caught
// up, and an underestimated rate costs no time at the end, only a thinner backlog. Before the
// rate is measured the backlog is held to drainFirst, so that a slow path does not start
// with seconds of data queued. Transports without a visible backlog never wait.
type drainEstimate struct {
	markAt   time.Duration // elapsed time of the last rate sample
	markLeft int64         // bytes that had left the buffer then
	rate     float64       // smoothed bytes/s leaving the buffer; 0 = not measured yet
}

const (
	drainSample = 50 * time.Millisecond // least time between two rate samples
	drainSmooth = time.Second           // time constant of the rate's smoothing
	drainFirst  = 256 << 10             // backlog allowed before the rate is measured, bytes
	drainPoll   = 5 * time.Millisecond  // how long a waiting sender sleeps before it looks again
)

// wait reports whether the sender, having written sent bytes after elapsed of a dur run on
// c, should wait (drainPoll) instead of writing more.
func (d *drainEstimate) wait(c transportConn, sent int64, elapsed, dur time.Duration) bool {
	b, ok := c.(interface{ backlog() int64 })
	if !ok {
		return false
	}
	return d.full(sent, b.backlog(), elapsed, dur)
}

// full reports whether queued of the sent bytes still in the buffer at elapsed already take
// until dur to leave.
func (d *drainEstimate) full(sent, queued int64, elapsed, dur time.Duration) bool {
	d.sample(sent-queued, elapsed)
	if d.rate <= 0 {
		return queued >= drainFirst
	}
	return float64(queued) >= d.rate*(dur-elapsed).Seconds()
}

// sample updates the rate from left, the bytes that have left the buffer by elapsed: the
// first measurement is the mean since the start (once anything has left), later ones are
// smoothed exponentially over drainSmooth, weighted by the time each covers, so that a
// stall followed by a burst averages out.
func (d *drainEstimate) sample(left int64, elapsed time.Duration) {
	dt := elapsed - d.markAt
	switch {
	case dt < drainSample:
		return
	case d.rate > 0:
		w := -math.Expm1(-dt.Seconds() / drainSmooth.Seconds())
		d.rate += w * (float64(left-d.markLeft)/dt.Seconds() - d.rate)
	case left > 0:
		d.rate = float64(left) / elapsed.Seconds()
	default:
		return // nothing has left yet: the first measurement will span from the start
	}
	d.markAt, d.markLeft = elapsed, left
}

// deliveredSoFar is the payload the receiver has got so far, as this end knows it.
func (s *session) deliveredSoFar(sender bool) int64 {
	if sender && s.progress {
		return s.delivered.Load()
	}
	return s.moved.Load()
}

// noteDelivered records the receiver's count n, which never exceeds what was sent (a hostile
// or confused peer cannot make the counts run ahead) and never goes backwards.
func (s *session) noteDelivered(n int64) {
	n = min(n, s.moved.Load())
	for {
		old := s.delivered.Load()
		if n <= old || s.delivered.CompareAndSwap(old, n) {
			return
		}
	}
}

// reportProgress sends the receiver's count every progressEvery until stop is called (which
// waits for the last message to be written).
func (s *session) reportProgress() (stop func()) {
	if !s.progress {
		return func() {}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		last := int64(-1)
		for {
			select {
			case <-quit:
				return
			case <-t.C:
			}
			if n := s.moved.Load(); n != last {
				last = n
				if s.writeMsg(&progress{Received: n}) != nil {
					return
				}
			}
		}
	}()
	return sync.OnceFunc(func() {
		close(quit)
		<-done
	})
}

// writeMsg is writeMsg on the session's connection, serialised with progress messages.
func (s *session) writeMsg(v any) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return writeMsg(s.c, v)
}

func (s *session) writeEnd(sent int64, sum string) error {
	if _, err := s.c.Write(make([]byte, 4)); err != nil {
		return err
	}
	if err := writeMsg(s.c, &trailer{Bytes: sent, SHA256: sum}); err != nil {
		return err
	}
	s.ended.Store(true)
	return nil
}

// peerError prefers the receiver's own explanation (e.g. disk full) to the write error it
// caused, waiting briefly for it.
func (s *session) peerError(err error, peer chan peerMsg) error {
	var le *localError
	if errors.As(err, &le) {
		return le.err
	}
	select {
	case m := <-peer:
		if m.err == nil && m.rep.Error != "" {
			return &peerFailure{m.rep.Error}
		}
	case <-time.After(time.Second):
	}
	return err
}

// sink receives a file; nil means discard.
type sink interface {
	io.Writer
	Commit() error // the data is complete and verified: keep it
	Abort()        // remove what was written: it is wrong or cannot be completed
	Keep()         // the transfer broke off: keep what was written for a resume
}

// receive runs the receiver's side into out (nil: discard) and returns the row. h, if not nil,
// has hashed what precedes the data (the part of a file kept from an earlier upload), so that
// the digest covers the whole file.
func (s *session) receive(out sink, h hash.Hash) (Row, error) {
	begin := time.Now()
	s.start.Store(begin.UnixNano())
	cpu0, cpuOK := processCPU()
	if h == nil {
		h = sha256.New()
	}
	buf := make([]byte, maxFrame)
	var got int64
	stopProgress := s.reportProgress()
	defer stopProgress()
	fail := func(err error) (Row, error) { // the connection broke or the sender misbehaved
		stopProgress()
		if out != nil {
			out.Keep()
		}
		return Row{}, err
	}
	for {
		n, err := readFrameHeader(s.r)
		if err != nil {
			return fail(err)
		}
		if n == 0 {
			break
		}
		if _, err := io.ReadFull(s.r, buf[:n]); err != nil {
			return fail(err)
		}
		h.Write(buf[:n])
		if out != nil {
			if _, err := out.Write(buf[:n]); err != nil {
				stopProgress()
				out.Abort()
				err = fmt.Errorf("%v (partial file removed)", err)
				writeMsg(s.c, &report{Error: err.Error()})
				drain(s.c, s.r, endGrace)
				return Row{}, &localError{err}
			}
		}
		got += int64(n)
		s.moved.Add(int64(n))
	}
	var tr trailer
	if err := readMsg(s.r, &tr); err != nil {
		return fail(err)
	}
	stopProgress()
	sum := hex.EncodeToString(h.Sum(nil))
	own := s.ownReport(false, got, sum, begin, cpu0, cpuOK)
	stored := false
	if out != nil {
		if tr.Bytes != got || tr.SHA256 != sum {
			out.Abort()
		} else if err := out.Commit(); err != nil {
			own.Error = err.Error()
		} else {
			stored = true
		}
	}
	// Once stored, the file is complete and verified against the sender's trailer whatever
	// happens to the reports: a sender gone before them does not make it a failed upload.
	unconfirmed := func(err error) error {
		if !stored {
			return err
		}
		// The sender's half from its trailer alone: its statistics are unknown (null).
		snd := report{Bytes: tr.Bytes, SHA256: tr.SHA256, CPUNs: -1, ElapsedNs: own.ElapsedNs, Protocol: own.Protocol}
		return &storedError{row: makeRow(&snd, &own), err: err}
	}
	if err := writeMsg(s.c, &own); err != nil {
		return Row{}, unconfirmed(err)
	}
	if own.Error != "" {
		drain(s.c, s.r, endGrace)
		return Row{}, &localError{errors.New(own.Error)}
	}
	var peer report
	if err := readMsg(s.r, &peer); err != nil {
		return Row{}, unconfirmed(err)
	}
	return makeRow(&peer, &own), nil
}

// storedError: the receiver stored a file complete and verified (its bytes and SHA-256 match
// the sender's trailer), but the closing exchange of reports failed (the sender left, e.g.
// interrupted after its last byte). The upload succeeded; only its statistics are missing.
type storedError struct {
	row Row // from this end's report and the sender's trailer
	err error
}

func (e *storedError) Error() string {
	return fmt.Sprintf("stored complete and verified (%d bytes, sha256 %s), but the final reports were not exchanged: %v", e.row.Bytes, e.row.ReceiverSHA256, e.err)
}

func (e *storedError) Unwrap() error { return e.err }

// ownReport is this end's half of the row.
func (s *session) ownReport(sender bool, n int64, sum string, begin time.Time, cpu0 time.Duration, cpuOK bool) report {
	r := report{Bytes: n, SHA256: sum, CPUNs: -1, ElapsedNs: int64(time.Since(begin)), Protocol: s.proto,
		Backend: s.c.Backend(), CC: s.cc, Strict: s.strict}
	if cpu1, ok := processCPU(); ok && cpuOK {
		r.CPUNs = int64(cpu1 - cpu0)
	}
	if tc, ok := s.c.(*tcpConn); ok && sender {
		r.CC = tcpCongestion(tc.TCPConn) // the kernel's algorithm this socket uses
	}
	if sender {
		st := s.c.Stats(true)
		r.Retrans, r.RTTms, r.PerWake = opt(st.retransPct()), opt(st.rttMs), opt(st.pktsPerWake)
	}
	return r
}

// opt is nil for NaN: JSON null, table "n/a".
func opt(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// peerFailure is an error the peer reported.
type peerFailure struct{ msg string }

func (e *peerFailure) Error() string { return "peer failed: " + e.msg }

// localError is a failure of this end (a file), not of the connection.
type localError struct{ err error }

func (e *localError) Error() string { return e.err.Error() }
func (e *localError) Unwrap() error { return e.err }

// dataFrames are ready-made frames of random data (a fresh key per process), so that the
// sender spends its CPU on the transport and the digest, not on generating data.
var dataFrames = sync.OnceValue(func() [][]byte {
	var seed [32]byte
	rand.Read(seed[:])
	g := mrand.NewChaCha8(seed)
	frames := make([][]byte, 8)
	for i := range frames {
		f := make([]byte, 4+frameSize)
		binary.BigEndian.PutUint32(f, frameSize)
		g.Read(f[4:])
		frames[i] = f
	}
	return frames
})
