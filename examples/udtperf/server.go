package main

import (
	"context"
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
	"syscall"
	"time"
)

// selfServerCmd is the hidden subcommand self mode runs as its child process: a server for one
// transfer on loopback that prints its address on stdout first.
const selfServerCmd = "_selfserver"

type server struct {
	o      *serverOptions
	lns    map[string]transportListener
	share  *udpShare // the UDP socket udt and quic share, if they do
	stdout io.Writer
	stderr io.Writer
	outMu  sync.Mutex

	mu       sync.Mutex
	active   map[transportConn]bool // connections being served
	stopping atomic.Bool            // close has begun: errors of aborted transfers are expected
}

// listen opens the listeners: udt and quic on one UDP port (shared by peer address when both
// are served), tcp on the same port number.
func listen(o *serverOptions) (*server, error) {
	s := &server{o: o, lns: map[string]transportListener{}, active: map[transportConn]bool{}}
	fail := func(err error) (*server, error) {
		s.close(nil)
		return nil, err
	}
	udt, quic, tcp := slices.Contains(o.protos, "udt"), slices.Contains(o.protos, "quic"), slices.Contains(o.protos, "tcp")
	addr := o.listen
	switch {
	case udt && quic:
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return fail(fmt.Errorf("cannot listen on udp %s: %v", addr, err))
		}
		s.share = newUDPShare(pc.(*net.UDPConn))
		for _, p := range []string{"udt", "quic"} {
			var spc net.PacketConn = s.share.udt
			if p == "quic" {
				spc = s.share.quic
			}
			l, err := listenTransport(p, "", spc, &o.tr)
			if err != nil {
				return fail(err)
			}
			s.lns[p] = l
		}
	case udt || quic:
		p := "udt"
		if quic {
			p = "quic"
		}
		l, err := listenTransport(p, addr, nil, &o.tr)
		if err != nil {
			return fail(fmt.Errorf("cannot listen on udp %s: %v", addr, err))
		}
		s.lns[p] = l
	}
	if tcp {
		taddr := addr
		for _, l := range s.lns { // the UDP port, when ":0" picked one
			host, _, _ := net.SplitHostPort(addr)
			taddr = net.JoinHostPort(host, strconv.Itoa(portOf(l.Addr())))
			break
		}
		l, err := listenTransport("tcp", taddr, nil, &o.tr)
		if err != nil {
			return fail(fmt.Errorf("cannot listen on tcp %s: %v", taddr, err))
		}
		s.lns["tcp"] = l
	}
	return s, nil
}

// close closes the listeners, aborts the transfers in progress, and once their goroutines
// (wait) are done, closes the shared UDP socket: udt's multiplexer must have stopped reading it
// first (it reads until its last connection is closed).
func (s *server) close(wait func()) {
	s.stopping.Store(true)
	for _, l := range s.lns {
		l.Close()
	}
	s.mu.Lock()
	for c := range s.active {
		c.Close()
	}
	s.mu.Unlock()
	if wait != nil {
		wait()
	}
	if s.share != nil {
		s.share.Close()
	}
}

// addr is the address clients connect to.
func (s *server) addr() net.Addr {
	for _, p := range protocols {
		if l, ok := s.lns[p]; ok {
			return l.Addr()
		}
	}
	return nil
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
	fmt.Fprintf(stderr, "udtperf: listening on %s port %d (%s)\n", hostOf(o.listen), portOf(s.addr()), strings.Join(o.protos, ", "))
	if fp := quicFingerprint.Load(); fp != nil && slices.Contains(o.protos, "quic") {
		fmt.Fprintf(stderr, "udtperf: quic certificate (self-signed, new each start) SHA-256 %s\n", *fp)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
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
	fmt.Fprintln(stdout, s.addr().String())
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
	return err
}

func (s *server) logf(format string, args ...any) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	fmt.Fprintf(s.stderr, "udtperf: "+format+"\n", args...)
}

// handle serves one client: hello, welcome, transfer, report.
func (s *server) handle(c transportConn, proto string) error {
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
	var out sink
	if h.Mode == modeFile {
		f, err := openSink(s.o.dir, h.Name, s.o.force)
		if err != nil {
			return refuse(err.Error())
		}
		out = f
	}
	if err := writeMsg(c, &welcome{}); err != nil {
		if out != nil {
			out.Abort()
		}
		return err
	}
	c.SetReadDeadline(time.Time{})
	sender := h.Mode == modeReverse
	prefix := fmt.Sprintf("[%s %s] ", proto, peer)
	o := s.o.out
	o.noProgress = true
	mon := startMonitor(sess, sender, &o, s.stdout, s.stderr, "", prefix, h.Bytes, time.Duration(h.TimeNs))
	var row Row
	var err error
	if sender {
		row, err = sess.send(sendSpec{bytes: h.Bytes, dur: time.Duration(h.TimeNs)})
	} else {
		row, err = sess.receive(out)
	}
	row.Intervals = mon.stop()
	if err != nil {
		err = explain(err, "client", proto, peer, &s.o.tr)
		if s.stopping.Load() {
			err = errors.New("transfer aborted: the server is stopping")
		}
		s.logf("%s client %s: %v", proto, peer, err)
		return err
	}
	row.Direction = "client->server"
	if sender {
		row.Direction = "server->client"
	}
	row.File = h.Name
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
