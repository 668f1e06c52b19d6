//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"
)

// delayLineCmd is the hidden subcommand that runs the delay line inside the
// router namespace: `testbed __delayline -dev NAME -delay D`. It runs in its
// own process so that the testbed's own work (TCP runners, probes, the Go
// scheduler's queue) never delays a packet. Protocol on its standard streams:
// it prints "ready" once the TUN device exists; each "stats" line on stdin is
// answered with one JSON DelayLineStats line; end of stdin (the testbed
// closed it or died) removes the device and exits.
const delayLineCmd = "__delayline"

// delayLineMain is the subcommand's body; it returns the exit code.
func delayLineMain(args []string) int {
	fs := flag.NewFlagSet(delayLineCmd, flag.ContinueOnError)
	dev := fs.String("dev", ifDelay, "TUN device to create")
	delay := fs.Duration("delay", 0, "one-way delay")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	// The testbed owns the lifetime: terminal signals go to it, and it ends
	// us by closing stdin.
	signal.Ignore(os.Interrupt, syscall.SIGHUP)
	dl, err := NewDelayLine(*dev, *delay)
	if err != nil {
		fmt.Fprintln(os.Stderr, "delay line:", err)
		return 1
	}
	// The loop recycles its buffers; with the collector off nothing can stop
	// it for a GC cycle (memory stays bounded by the packets held at once).
	debug.SetGCPercent(-1)
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(out, "ready")
	out.Flush()
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "stats" {
			b, _ := json.Marshal(dl.Stats())
			out.Write(append(b, '\n'))
			out.Flush()
		}
	}
	if err := dl.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "delay line:", err)
		return 1
	}
	return 0
}

// delayProc is the testbed's handle on the delay-line process.
type delayProc struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan string
	errb    *syncBuilder
	exited  chan struct{} // closed when the process has exited (waitErr says how)
	waitErr error
}

// syncBuilder is a strings.Builder for a process's stderr, safe to read while it writes.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startDelayProc runs this executable's delay-line subcommand in namespace ns
// and waits until the TUN device exists.
func startDelayProc(ctx context.Context, ns, dev string, delay time.Duration) (*delayProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("delay line: find own executable: %w", err)
	}
	cmd := nsCommand(context.Background(), ns, exe, delayLineCmd, "-dev", dev, "-delay", delay.String())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p := &delayProc{cmd: cmd, lines: make(chan string, 4), errb: &syncBuilder{}, exited: make(chan struct{})}
	cmd.Stderr = p.errb
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("delay line: %w", err)
	}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		p.waitErr = cmd.Wait() // after stdout's EOF, as exec requires
		close(p.exited)
	}()
	select {
	case l, ok := <-p.lines:
		if ok && l == "ready" {
			return p, nil
		}
	case <-time.After(10 * time.Second):
	case <-ctx.Done():
	}
	p.Close()
	return nil, fmt.Errorf("delay line did not start: %s", strings.TrimSpace(p.errb.String()))
}

// Stats asks the process for its counters.
func (p *delayProc) Stats() (DelayLineStats, error) {
	var s DelayLineStats
	if _, err := io.WriteString(p.stdin, "stats\n"); err != nil {
		return s, fmt.Errorf("delay line stats: %w", err)
	}
	select {
	case l, ok := <-p.lines:
		if !ok {
			return s, errors.New("delay line exited")
		}
		return s, json.Unmarshal([]byte(l), &s)
	case <-time.After(2 * time.Second):
		return s, errors.New("delay line stats: no answer")
	}
}

// died describes how the process ended on its own (it never should while the testbed runs).
func (p *delayProc) died() error {
	msg := fmt.Sprintf("the delay line died (%v)", p.waitErr)
	if e := strings.TrimSpace(p.errb.String()); e != "" {
		msg += ": " + e
	}
	return errors.New(msg)
}

// Close ends the process (closing its stdin) and waits for it; after 3 s it
// is killed.
func (p *delayProc) Close() error {
	p.stdin.Close()
	select {
	case <-p.exited:
		if p.waitErr != nil {
			return fmt.Errorf("delay line: %v: %s", p.waitErr, strings.TrimSpace(p.errb.String()))
		}
		return nil
	case <-time.After(3 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
		return errors.New("delay line did not exit; killed")
	}
}
