package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// selfServerCmd is the hidden subcommand self mode runs as its child process: a server for one
// transfer on loopback that prints its address on stdout first.
const selfServerCmd = "_selfserver"

type server struct {
	o      *serverOptions
	lns    map[string]transportListener
	port   int // the base port: udt (UDP) and tcp; quic on port+quicPortOffset
	stdout io.Writer
	stderr io.Writer
	outMu  sync.Mutex

	mu       sync.Mutex
	active   map[transportConn]bool // connections being served
	stopping atomic.Bool            // close has begun: errors of aborted transfers are expected
	served   atomic.Int64           // clients handled (a refusal included)
	failed   atomic.Int64           // of them, transfers that did not complete and verify
}

// quicPortOffset: quic is served on UDP port PORT+1, next to udt's UDP port PORT, so that each
// has a socket of its own with its batched I/O (GSO, GRO, recvmmsg; a socket shared by peer
// address would cost udt its batching). The client adds it for -proto quic.
const quicPortOffset = 1

// quicAddr is the quic address of a server at addr.
func quicAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	p, err := net.LookupPort("udp", port)
	if err != nil {
		return addr
	}
	return net.JoinHostPort(host, strconv.Itoa(p+quicPortOffset))
}

// listen opens the listeners: udt on UDP port PORT, tcp on TCP port PORT, quic on UDP port
// PORT+1. With port 0 it finds a PORT whose neighbour is free as well.
func listen(o *serverOptions) (*server, error) {
	host, port, err := splitListen(o.listen)
	if err != nil {
		return nil, usageError{err}
	}
	if port != 0 {
		return listenAt(o, host, port)
	}
	for range 20 {
		if s, err2 := listenAt(o, host, 0); err2 == nil {
			return s, nil
		} else {
			err = err2
		}
	}
	return nil, err
}

// splitListen checks a -listen value HOST:PORT: PORT a number or service name, at most
// 65535−quicPortOffset (quic listens on PORT+1).
func splitListen(addr string) (string, int, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("bad -listen %q: want HOST:PORT, e.g. :9000 or 192.0.2.1:9000", addr)
	}
	port, err := net.LookupPort("udp", portStr)
	if err != nil || port > 65535-quicPortOffset {
		return "", 0, fmt.Errorf("bad -listen port %q: want 0 to %d (quic uses PORT+%d)", portStr, 65535-quicPortOffset, quicPortOffset)
	}
	return host, port, nil
}

func listenAt(o *serverOptions, host string, port int) (*server, error) {
	s := &server{o: o, lns: map[string]transportListener{}, active: map[transportConn]bool{}, port: port}
	for _, p := range protocols {
		if !slices.Contains(o.protos, p) {
			continue
		}
		pp := s.port
		if p == "quic" && s.port != 0 {
			pp += quicPortOffset
		}
		addr := net.JoinHostPort(host, strconv.Itoa(pp))
		l, err := listenTransport(p, addr, &o.tr)
		if err != nil {
			s.close(nil)
			nw := "udp"
			if p == "tcp" {
				nw = "tcp"
			}
			var oe *net.OpError
			for errors.As(err, &oe) { // the address is in our own words already
				err = oe.Err
			}
			return nil, fmt.Errorf("cannot listen for %s on %s %s: %v", p, nw, addr, err)
		}
		s.lns[p] = l
		if s.port == 0 {
			s.port = portOf(l.Addr())
			if p == "quic" {
				s.port -= quicPortOffset
			}
		}
	}
	return s, nil
}

// close closes the listeners and aborts the transfers in progress, then waits for their
// goroutines (wait).
func (s *server) close(wait func()) {
	s.stopping.Store(true)
	for _, l := range s.lns {
		l.Close()
	}
	s.mu.Lock()
	for c := range s.active {
		c.Abort() // the client learns at once
	}
	s.mu.Unlock()
	if wait != nil {
		wait()
	}
}

// addr is the address clients connect to (quic: its port + quicPortOffset).
func (s *server) addr() string {
	host, _, _ := net.SplitHostPort(s.o.listen)
	return net.JoinHostPort(host, strconv.Itoa(s.port))
}

func runServer(o *serverOptions, stdout, stderr io.Writer) error {
	stopProfile, err := startProfile(o.out.cpuprofile)
	if err != nil {
		return err
	}
	defer stopProfile()
	s, err := listen(o)
	if err != nil {
		return err
	}
	s.stdout, s.stderr = stdout, stderr
	if o.dir != "" {
		kept, removed := sweepPartials(o.dir, o.keepPartial, time.Now())
		reportPartials(stderr, kept, removed, o.keepPartial)
	}
	var served []string
	for _, p := range protocols {
		if slices.Contains(o.protos, p) {
			port := s.port
			if p == "quic" {
				port += quicPortOffset
			}
			served = append(served, fmt.Sprintf("%s on %d", p, port))
		}
	}
	fmt.Fprintf(stderr, "udtperf: listening on %s port %d (%s)\n", hostOf(o.listen), s.port, strings.Join(served, ", "))
	if fp := quicFingerprint.Load(); fp != nil && slices.Contains(o.protos, "quic") {
		fmt.Fprintf(stderr, "udtperf: quic certificate (self-signed, new each start) SHA-256 %s\n", *fp)
	}
	ctx, stop := interruptContext(stderr, "stopping the server (transfers in progress are aborted)")
	defer stop()
	return s.serve(ctx)
}

func portOf(a net.Addr) int {
	switch a := a.(type) {
	case *net.UDPAddr:
		return a.Port
	case *net.TCPAddr:
		return a.Port
	}
	_, p, _ := net.SplitHostPort(a.String())
	n, _ := strconv.Atoi(p)
	return n
}

func hostOf(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil || h == "" {
		return "all addresses"
	}
	return h
}

// runSelfServer is self mode's child: one transfer, the address first on stdout, no report
// (the parent prints the row).
func runSelfServer(o *serverOptions, stdout, stderr io.Writer) error {
	o.once = true
	s, err := listen(o)
	if err != nil {
		return err
	}
	s.stdout, s.stderr = io.Discard, stderr
	signal.Ignore(os.Interrupt) // the parent (self mode) owns the run: it aborts our connection
	fmt.Fprintln(stdout, s.addr())
	if f, ok := stdout.(*os.File); ok {
		f.Sync()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	return s.serve(ctx)
}

// serve accepts on every listener until ctx ends (or, with -once, the first transfer ends) and
// handles each client in its own goroutine.
func (s *server) serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	first := make(chan error, 1)
	for proto, l := range s.lns {
		wg.Go(func() {
			for {
				c, err := l.Accept(ctx)
				if err != nil {
					if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
						return
					}
					s.logf("%s accept: %v", proto, err)
					select {
					case <-ctx.Done():
						return
					case <-time.After(100 * time.Millisecond):
					}
					continue
				}
				s.mu.Lock()
				s.active[c] = true
				s.mu.Unlock()
				wg.Go(func() {
					err := s.handle(c, proto)
					s.served.Add(1)
					if err != nil {
						s.failed.Add(1)
					}
					s.mu.Lock()
					delete(s.active, c)
					s.mu.Unlock()
					if s.o.once {
						select {
						case first <- err:
						default:
						}
						cancel()
					}
				})
				if s.o.once {
					return
				}
			}
		})
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-first:
	}
	s.close(wg.Wait)
	if err == nil {
		select {
		case err = <-first:
		default:
		}
	}
	if err == nil && s.failed.Load() > 0 {
		// Every failure was logged as it happened; the exit status says that there were some.
		err = fmt.Errorf("%d of %d transfers did not complete (see above)", s.failed.Load(), s.served.Load())
	}
	return err
}

// openUpload opens the file of a file-mode hello, removing expired partial uploads first.
func (s *server) openUpload(h *hello) (*fileSink, error) {
	if s.o.dir != "" {
		sweepPartials(s.o.dir, s.o.keepPartial, time.Now())
	}
	f, err := openSink(s.o.dir, h.Name, s.o.force, h.Resume && s.o.keepPartial > 0, h.Bytes)
	if err != nil {
		return nil, err
	}
	f.keepPartial = s.o.keepPartial > 0
	return f, nil
}

// startUpload reads the client's choice after the server offered to resume at out.offset: that
// offset (its file has the same prefix) or 0 (it does not: start over).
func (s *server) startUpload(sess *session, out *fileSink, h *hello) error {
	// The client hashes its own prefix first: allow that time at a conservative 100 MB/s.
	sess.c.SetReadDeadline(time.Now().Add(s.o.tr.handshake + s.o.tr.idle + hashTime(out.offset)))
	defer sess.c.SetReadDeadline(time.Time{})
	var st start
	if err := readMsg(sess.r, &st); err != nil {
		return err
	}
	switch st.Offset {
	case out.offset:
		return nil
	case 0:
		if err := out.restartAt(0); err != nil {
			return &localError{fmt.Errorf("cannot write %q: %v", h.Name, err)}
		}
		return nil
	}
	return &protocolError{fmt.Sprintf("client chose to start at byte %d, offered %d", st.Offset, out.offset)}
}

func (s *server) logf(format string, args ...any) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	fmt.Fprintf(s.stderr, "udtperf: "+format+"\n", args...)
}

// handle serves one client: hello, welcome, transfer, report.
func (s *server) handle(c transportConn, proto string) error {
	if proto == "udt" && s.o.tr.message {
		return s.handleMessages(c) // message.go
	}
	defer c.Close()
	peer := c.RemoteAddr().String()
	sess := newSession(c, proto, &s.o.tr)
	c.SetReadDeadline(time.Now().Add(s.o.tr.handshake + s.o.tr.idle))
	var h hello
	if err := readHello(sess.r, &h); err != nil {
		err = explain(err, "client", proto, peer, &s.o.tr)
		s.logf("%s client %s: %v", proto, peer, err)
		return err
	}
	refuse := func(msg string) error {
		writeMsg(c, &welcome{Error: msg})
		drain(c, sess.r, endGrace)
		s.logf("%s client %s refused: %s", proto, peer, msg)
		return errors.New(msg)
	}
	if h.Proto != proto {
		return refuse(fmt.Sprintf("asked for %s on a %s connection", h.Proto, proto))
	}
	var out *fileSink
	w := welcome{Progress: h.Progress}
	if h.Mode == modeFile {
		f, err := s.openUpload(&h)
		if err != nil {
			return refuse(err.Error())
		}
		out = f
		if f.offset > 0 {
			w.Offset, w.PrefixSHA256 = f.offset, hex.EncodeToString(f.prefix.Sum(nil))
		}
	}
	sess.progress = h.Progress
	if err := writeMsg(c, &w); err != nil {
		if out != nil {
			out.Keep()
		}
		return err
	}
	c.SetReadDeadline(time.Time{})
	if out != nil && w.Offset > 0 {
		if err := s.startUpload(sess, out, &h); err != nil {
			out.Keep()
			err = explain(err, "client", proto, peer, &s.o.tr)
			s.logf("%s client %s: %v", proto, peer, err)
			return err
		}
	}
	sender := h.Mode == modeReverse
	prefix := fmt.Sprintf("[%s %s] ", proto, peer)
	o := s.o.out
	o.noProgress = true
	mon := startMonitor(sess, sender, &o, s.stdout, s.stderr, "", prefix, h.Bytes, time.Duration(h.TimeNs))
	var row Row
	var err error
	switch {
	case sender:
		row, err = sess.send(sendSpec{bytes: h.Bytes, dur: time.Duration(h.TimeNs)})
	case out != nil:
		row, err = sess.receive(out, out.prefix)
		row.ResumedFrom = new(out.offset)
	default:
		row, err = sess.receive(nil, nil)
	}
	if se := (*storedError)(nil); errors.As(err, &se) {
		// The file is in place, whole and verified: a success without the client's statistics
		// (its row's sender fields are null), reported as any other below.
		s.logf("%s client %s: the client left before the final reports (%v); the file is whole and verified",
			proto, peer, explain(se.err, "client", proto, peer, &s.o.tr))
		row, err = se.row, nil
	}
	row.Intervals = mon.stop()
	if err != nil {
		err = explain(err, "client", proto, peer, &s.o.tr)
		if s.stopping.Load() {
			err = errors.New("transfer aborted: the server is stopping")
		}
		if out != nil && out.kept > 0 {
			err = fmt.Errorf("%v; the server keeps the %d bytes it has of %q for -resume", err, out.kept, h.Name)
		}
		s.logf("%s client %s: %v", proto, peer, err)
		return err
	}
	row.Direction = "client->server"
	if sender {
		row.Direction = "server->client"
	}
	if h.Name != "" {
		row.File = new(h.Name)
	}
	s.outMu.Lock()
	defer s.outMu.Unlock()
	if s.o.out.json {
		writeJSONLine(s.stdout, row)
	} else {
		summaryLines(s.stdout, prefix, &row)
		if h.Mode == modeFile && row.SHA256OK {
			fmt.Fprintf(s.stdout, "%sstored %q in %s: %d bytes, sha256 %s\n", prefix, h.Name, s.o.dir, row.Bytes, row.ReceiverSHA256)
		}
	}
	if !row.SHA256OK {
		return fmt.Errorf("sha256 mismatch with client %s", peer)
	}
	return nil
}
