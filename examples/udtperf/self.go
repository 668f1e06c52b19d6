package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/udtgo/udt/pacer"
)

// childEnv is set in the environment of self mode's child processes (a test binary's TestMain
// looks for it to run udtperf instead of the tests).
const childEnv = "UDTPERF_SELF_CHILD"

// selfRowSpec names one row of self mode.
type selfRowSpec struct{ proto, backend string }

func (s selfRowSpec) label() string {
	if s.backend != "" {
		return s.proto + "/" + s.backend
	}
	return s.proto
}

// runSelf measures every requested protocol and udt pacer backend on loopback. Each row's
// receiver runs in a child process (this program re-executed with a hidden subcommand), so
// that getrusage separates the sender's CPU from the receiver's.
func runSelf(o *selfOptions, stdout, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("self mode cannot find its own executable: %v", err)
	}
	os.Setenv("QUIC_GO_DISABLE_RECEIVE_BUFFER_WARNING", "true")
	stopProfile, err := startProfile(o.out.cpuprofile)
	if err != nil {
		return err
	}
	defer stopProfile()
	var specs []selfRowSpec
	for _, p := range o.protos {
		if p != "udt" {
			specs = append(specs, selfRowSpec{proto: p})
			continue
		}
		for _, b := range o.pacers {
			specs = append(specs, selfRowSpec{proto: p, backend: b})
		}
	}
	what := o.limit.time.String()
	if o.limit.bytes > 0 {
		what = fmt.Sprintf("%d bytes", int64(o.limit.bytes))
	}
	transfers := "transfers"
	if len(specs) == 1 {
		transfers = "transfer"
	}
	fmt.Fprintf(stderr, "udtperf: self mode on loopback: %d %s of %s (cc %s, strict %v, pacing tolerance %v); receivers run in child processes\n",
		len(specs), transfers, what, o.tr.cc, o.tr.strict, &o.tr.tolerance)
	ctx, stop := interruptContext(stderr, "aborting the row in progress")
	defer stop()
	var rows []Row
	var msgs []MessageRow // -message: a message-mode row after each udt row (message.go)
	failed := 0
	for _, sp := range specs {
		if ctx.Err() != nil {
			break
		}
		row, err := selfRow(ctx, exe, o, sp, stdout, stderr)
		if err != nil {
			cc := o.tr.cc
			if sp.proto == "tcp" {
				cc = o.tr.tcpCC
			}
			row = failedRow(sp.proto, sp.backend, cc, o.tr.strict, err)
			fmt.Fprintf(stderr, "udtperf: %s: %v\n", sp.label(), err)
			failed++
		} else if !row.SHA256OK {
			failed++
		}
		rows = append(rows, row)
		if o.msg.size > 0 && sp.proto == "udt" {
			m, ok := selfMessages(exe, o, sp.backend, &row, stderr)
			if !ok {
				failed++
			}
			msgs = append(msgs, m)
		}
	}
	if o.out.json {
		write := func() error { return writeJSON(stdout, rows) }
		if o.msg.size > 0 {
			write = func() error { return writeMessagesJSON(stdout, rows, msgs) }
		}
		if err := write(); err != nil {
			return err
		}
	} else {
		writeTable(stdout, rows)
		if len(msgs) > 0 {
			fmt.Fprintln(stdout)
			writeMessageTable(stdout, msgs)
		}
	}
	if ctx.Err() != nil {
		return interruptedError{fmt.Errorf("interrupted after %d of %d self-mode transfers", len(rows), len(specs))}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d self-mode transfers failed", failed, len(rows))
	}
	return nil
}

// selfRow runs one row: a child receiver, this process as the sender.
func selfRow(ctx context.Context, exe string, o *selfOptions, sp selfRowSpec, stdout, stderr io.Writer) (Row, error) {
	tr := o.tr
	tr.pacer = pacer.DefaultWaiter
	if sp.backend != "" {
		tr.pacer = sp.backend
	}
	cmd := exec.Command(exe, selfServerCmd, "-listen", "127.0.0.1:0", "-proto", sp.proto, "-pacer", tr.pacer,
		"-cc", tr.cc, "-strict="+strconv.FormatBool(tr.strict), "-mss", strconv.Itoa(tr.mss), "-tcp-cc", tr.tcpCC,
		"-handshake-timeout", tr.handshake.String(), "-idle-timeout", tr.idle.String())
	child, addr, err := startReceiver(cmd, stderr)
	if err != nil {
		return Row{}, err
	}
	h := &hello{Proto: sp.proto, Mode: modeSend, Bytes: int64(o.limit.bytes), TimeNs: int64(o.limit.time), Progress: true}
	row, err := clientTransfer(ctx, sp.proto, addr, &tr, h, nil, &o.out, stdout, stderr,
		sp.label(), sp.label()+" ")
	if err := child.finish(err); err != nil {
		return Row{}, err
	}
	return row, nil
}

// receiver is self mode's receiver process.
type receiver struct {
	cmd    *exec.Cmd
	exited chan error
}

// startReceiver starts cmd (udtperf's hidden receiver command) and returns it with the address
// it printed on its first stdout line; a receiver that prints none within 20 s is killed.
func startReceiver(cmd *exec.Cmd, stderr io.Writer) (*receiver, string, error) {
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("cannot start the receiver process: %v", err)
	}
	r := &receiver{cmd: cmd, exited: make(chan error, 1)}
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(pipe).ReadString('\n')
		lines <- strings.TrimSpace(line)
		io.Copy(io.Discard, pipe)
		r.exited <- cmd.Wait()
	}()
	var addr string
	select {
	case addr = <-lines:
	case <-time.After(20 * time.Second):
	}
	if addr == "" {
		return nil, "", fmt.Errorf("receiver process did not start (%v)", r.stop(0))
	}
	return r, addr, nil
}

// stop waits up to grace for the receiver to exit, then kills it.
func (r *receiver) stop(grace time.Duration) error {
	select {
	case err := <-r.exited:
		return err
	case <-time.After(grace):
		r.cmd.Process.Kill()
		<-r.exited
		return errors.New("receiver process did not exit; killed")
	}
}

// finish ends the receiver after a transfer that returned err: it gets 15 s to report and exit
// after a success, 2 s after a failure. It returns err, or the receiver's own failure.
func (r *receiver) finish(err error) error {
	grace := 15 * time.Second
	if err != nil {
		grace = 2 * time.Second
	}
	werr := r.stop(grace)
	if err != nil {
		return err
	}
	if werr != nil {
		return fmt.Errorf("receiver process failed: %v", werr)
	}
	return nil
}
