package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestClientInterrupt interrupts a client process in mid-transfer: it must close its
// connection so that the server hears at once (its -idle-timeout is a minute), say so in one
// line and exit with 130; the server (-once) then exits non-zero, since the transfer did not
// complete. Before, the client died at once without closing, the server learned a whole idle
// timeout later, and exited 0.
func TestClientInterrupt(t *testing.T) {
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			addr, done, _, srvErr := startServer(t, "-proto", proto, "-once", "-idle-timeout", "60s")
			cmd, stderr := startSending(t, addr, proto, "-cc", "fixed:50mbit")
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			werr := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(werr, &ee) || ee.ExitCode() != exitInterrupted {
				t.Errorf("client: %v, want exit status %d; stderr:\n%s", werr, exitInterrupted, stderr.String())
			}
			if !strings.Contains(stderr.String(), "udtperf: interrupted: the transfer did not complete") {
				t.Errorf("client stderr:\n%s", stderr.String())
			}
			select {
			case code := <-done:
				if code == 0 {
					t.Errorf("server exit 0 after an aborted transfer: %s", srvErr.String())
				}
				// A hang check with a wide margin, not a timing assertion: the server's own
				// idle timeout is 60 s.
				if d := time.Since(start); d > 20*time.Second {
					t.Errorf("server learned of the abort after %v", d)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("server still waits 30 s after the client was interrupted: %s", srvErr.String())
			}
			if !strings.Contains(srvErr.String(), "closed by the peer") {
				t.Errorf("server log does not say the client closed: %s", srvErr.String())
			}
		})
	}
}

// startSending runs `udtperf client` to addr in a child process (a 60 s timed send with 100 ms
// intervals, a 60 s idle timeout, then args) and returns once its first interval line shows the
// data phase has begun; the child is killed when the test ends.
func startSending(t *testing.T, addr, proto string, args ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, append([]string{"client", "-connect", addr, "-proto", proto, "-time", "60s",
		"-interval", "100ms", "-no-progress", "-idle-timeout", "60s"}, args...)...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	waitFor(t, func() bool { return strings.Contains(stdout.String(), "Mbit/s") }, &stderr)
	return cmd, &stderr
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, cond func() bool, log *syncBuffer) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("condition not met in 10 s: %s", log.String())
}

// TestSecondInterruptExits: the first interrupt cancels the run and says so; the second exits
// at once with 130.
func TestSecondInterruptExits(t *testing.T) {
	exited := make(chan int, 1)
	exitNow = func(code int) { exited <- code }
	defer func() { exitNow = os.Exit }()
	sigs := make(chan os.Signal, 2)
	var stderr bytes.Buffer
	var mu sync.Mutex
	w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return stderr.Write(p) })
	ctx, stop := watchInterrupts(sigs, w, "closing the connection")
	defer stop()
	sigs <- os.Interrupt
	<-ctx.Done()
	if context.Cause(ctx) != errInterrupted {
		t.Errorf("cause %v", context.Cause(ctx))
	}
	select {
	case code := <-exited:
		t.Fatalf("exited (%d) at the first interrupt", code)
	case <-time.After(50 * time.Millisecond):
	}
	sigs <- os.Interrupt
	if code := <-exited; code != exitInterrupted {
		t.Errorf("second interrupt: exit %d", code)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(stderr.String(), "interrupted: closing the connection (interrupt again to quit at once)") {
		t.Errorf("stderr %q", stderr.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestServerExitStatus: a server that served a transfer which did not complete exits
// non-zero when stopped (the failure itself was logged when it happened).
func TestServerExitStatus(t *testing.T) {
	src, _ := writeRandomFile(t, t.TempDir(), "f", 10)
	addr, done, _, srvErr := startServer(t, "-proto", "tcp") // no -dir: file uploads refused
	if code, _, _ := runCmd("client", "-connect", addr, "-proto", "tcp", "-file", src); code != 1 {
		t.Errorf("refused upload: client exit %d", code)
	}
	if code, _, errOut := runCmd("client", "-connect", addr, "-proto", "tcp", "-bytes", "1MiB"); code != 0 {
		t.Fatalf("good transfer: exit %d: %s", code, errOut)
	}
	self, _ := os.FindProcess(os.Getpid())
	self.Signal(os.Interrupt)
	if code := waitExit(t, done, srvErr); code != 1 {
		t.Errorf("server exit %d, want 1", code)
	}
	if !strings.Contains(srvErr.String(), "1 of 2 transfers did not complete") {
		t.Errorf("server stderr: %s", srvErr.String())
	}
}
