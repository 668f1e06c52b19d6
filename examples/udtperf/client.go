package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"time"
)

func runClient(o *clientOptions, stdout, stderr io.Writer) error {
	stopProfile, err := startProfile(o.out.cpuprofile)
	if err != nil {
		return err
	}
	defer stopProfile()
	if o.msg.size > 0 {
		return runMessageClient(o, stdout) // message.go
	}
	h := &hello{Proto: o.proto, Mode: modeSend, Bytes: int64(o.limit.bytes), TimeNs: int64(o.limit.time), Progress: true}
	var src *os.File
	if o.reverse {
		h.Mode = modeReverse
	}
	if o.file != "" {
		f, size, err := openSource(o.file)
		if err != nil {
			return err
		}
		defer f.Close()
		src = f
		*h = hello{Proto: o.proto, Mode: modeFile, Bytes: size, Name: filepath.Base(o.file), Progress: true, Resume: o.resume}
	}
	label := o.proto
	if o.proto == "udt" {
		label += "/" + o.tr.pacer
	}
	ctx, stop := interruptContext(stderr, "closing the connection")
	defer stop()
	if o.trace != "" {
		tf, err := createTrace(o.trace)
		if err != nil {
			return err
		}
		o.tr.tracer = tf.tracer
		defer func() {
			if terr := tf.close(); terr != nil {
				fmt.Fprintf(stderr, "udtperf: -trace %s: %v\n", o.trace, terr)
			} else if tf.used() {
				fmt.Fprintf(stderr, "udtperf: trace written to %s (udtperf plot %s -o plot.png)\n", o.trace, o.trace)
			}
		}()
	}
	row, err := clientTransfer(ctx, o.proto, o.connect, &o.tr, h, src, &o.out, stdout, stderr, label, "")
	if err != nil {
		return err
	}
	if o.out.json {
		if err := writeJSON(stdout, []Row{row}); err != nil {
			return err
		}
	} else {
		writeTable(stdout, []Row{row})
		summaryLines(stdout, "", &row)
		if o.file != "" {
			fmt.Fprintf(stdout, "sent %s as %q: %d bytes, sha256 %s\n", o.file, h.Name, row.Bytes, row.SenderSHA256)
		}
	}
	if !row.SHA256OK {
		return fmt.Errorf("sha256 mismatch: sent %s, server received %s (%d bytes)", row.SenderSHA256, row.ReceiverSHA256, row.Bytes)
	}
	return nil
}

// openSource opens a file to send and returns its size.
func openSource(path string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("cannot read file: %v", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("cannot read file: %v", err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("cannot send %s: not a regular file", path)
	}
	// Read one byte now so that an unreadable file (e.g. a directory on some systems, EIO)
	// fails before connecting.
	var b [1]byte
	if _, err := f.ReadAt(b[:], 0); err != nil && !errors.Is(err, io.EOF) {
		f.Close()
		return nil, 0, fmt.Errorf("cannot read file: %v", err)
	}
	return f, st.Size(), nil
}

// clientTransfer connects, sends the hello and runs the transfer; errors are phrased for users.
func clientTransfer(ctx context.Context, proto, addr string, tr *transportFlags, h *hello, src *os.File,
	out *outputFlags, stdout, stderr io.Writer, label, prefix string) (Row, error) {
	if proto == "quic" {
		addr = quicAddr(addr)
	}
	c, err := dialTransport(ctx, proto, addr, tr)
	if err != nil {
		if context.Cause(ctx) == errInterrupted {
			return Row{}, interruptedError{fmt.Errorf("interrupted while connecting to %s", addr)}
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return Row{}, fmt.Errorf("no %s server answers at %s (no handshake within %v)", proto, addr, tr.handshake)
		}
		return Row{}, errors.New(describeNetError(err, proto, addr, tr, true))
	}
	defer c.Close()
	s := newSession(c, proto, tr)
	// An interrupt aborts the connection: the peer learns at once, and the blocked reads and
	// writes here fail.
	defer context.AfterFunc(ctx, func() { c.Abort() })()
	interrupted := func(err error) error {
		if context.Cause(ctx) != errInterrupted {
			return err
		}
		what := "delivered"
		if h.Mode != modeReverse && !s.progress {
			what = "sent" // no progress messages from the receiver
		}
		if h.Mode == modeFile && s.ended.Load() && s.progress && s.delivered.Load() >= s.moved.Load() {
			// The server reported reading every byte sent, and the trailer was written: only
			// its report did not arrive. (Written is not delivered: the abort drops what the
			// transport still holds, so without the server's count this is not said.)
			return interruptedError{fmt.Errorf("interrupted before the server's report: it had read every byte sent (%d), so it may have stored the file whole (a -resume then finds it exists)", s.moved.Load())}
		}
		return interruptedError{fmt.Errorf("interrupted: the transfer did not complete (%d bytes %s)", s.deliveredSoFar(h.Mode != modeReverse), what)}
	}
	if err := writeHello(c, h); err != nil {
		return Row{}, interrupted(explain(err, "server", proto, addr, tr))
	}
	wait := tr.handshake + tr.idle
	if h.Resume {
		wait += hashTime(h.Bytes) // the server hashes what it holds of the file first
	}
	c.SetReadDeadline(time.Now().Add(wait))
	var w welcome
	if err := readMsg(s.r, &w); err != nil {
		return Row{}, interrupted(explain(err, "server", proto, addr, tr))
	}
	if w.Error != "" {
		return Row{}, fmt.Errorf("server refused: %s", w.Error)
	}
	s.progress = w.Progress && h.Progress
	c.SetReadDeadline(time.Time{})
	sender := h.Mode != modeReverse
	spec := sendSpec{bytes: h.Bytes, dur: time.Duration(h.TimeNs)}
	var resumed int64
	if src != nil {
		spec.src = src
		if w.Offset != 0 {
			if resumed, spec.hash, err = resumeAt(c, src, h, &w, stderr); err != nil {
				return Row{}, interrupted(explain(err, "server", proto, addr, tr))
			}
			spec.bytes -= resumed
		}
	}
	mon := startMonitor(s, sender, out, stdout, stderr, label, prefix, spec.bytes, spec.dur)
	var row Row
	if sender {
		row, err = s.send(spec)
	} else {
		row, err = s.receive(nil, nil)
	}
	row.Intervals = mon.stop()
	if err != nil {
		return Row{}, interrupted(explain(err, "server", proto, addr, tr))
	}
	row.Direction = "client->server"
	if !sender {
		row.Direction = "server->client"
	}
	if h.Name != "" {
		row.File, row.ResumedFrom = new(h.Name), new(resumed)
	}
	return row, nil
}

// resumeAt answers a welcome that offers to continue an upload at w.Offset: if the file's
// first w.Offset bytes have the server's SHA-256, it continues there (and returns the offset
// and the hash of those bytes, which the whole file's digest continues), else it starts over.
func resumeAt(c transportConn, f *os.File, h *hello, w *welcome, stderr io.Writer) (int64, hash.Hash, error) {
	if w.Offset < 0 || w.Offset > h.Bytes {
		return 0, nil, &protocolError{fmt.Sprintf("server offers to resume at byte %d of %d", w.Offset, h.Bytes)}
	}
	sum := sha256.New()
	if _, err := io.CopyN(sum, io.NewSectionReader(f, 0, w.Offset), w.Offset); err != nil {
		return 0, nil, &localError{fmt.Errorf("cannot read file: %v", err)}
	}
	off := w.Offset
	if hex.EncodeToString(sum.Sum(nil)) != w.PrefixSHA256 {
		fmt.Fprintf(stderr, "udtperf: the server's partial upload of %q (%d bytes) differs from this file: sending it whole\n", h.Name, off)
		off, sum = 0, nil
	} else {
		fmt.Fprintf(stderr, "udtperf: resuming %q at byte %d of %d (the server's partial upload has the same SHA-256)\n", h.Name, off, h.Bytes)
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return 0, nil, &localError{fmt.Errorf("cannot read file: %v", err)}
	}
	if err := writeMsg(c, &start{Offset: off}); err != nil {
		return 0, nil, err
	}
	return off, sum, nil
}

// explain phrases a transfer error for users; who is "server" or "client".
func explain(err error, who, proto, peer string, tr *transportFlags) error {
	var pf *peerFailure
	var pe *protocolError
	var le *localError
	switch {
	case errors.As(err, &pf):
		return fmt.Errorf("%s reports: %s", who, pf.msg)
	case errors.As(err, &pe):
		return fmt.Errorf("%s %s: %v", who, peer, pe)
	case errors.As(err, &le):
		return le.err
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("connection to %s %s closed by the peer in mid-transfer", who, peer)
	}
	return errors.New(describeNetError(err, proto, peer, tr, false))
}
