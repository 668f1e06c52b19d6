//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// deadTestbed builds a short testbed for the death tests (root only).
func deadTestbed(t *testing.T) *Testbed {
	t.Helper()
	if testing.Short() {
		t.Skip("builds namespaces; skipped with -short")
	}
	if err := CheckPrivileges(); err != nil {
		t.Skip("skipping:", err)
	}
	tb, err := New(context.Background(), Config{Rate: 100e6, RTT: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// waitDead waits (bounded) for the testbed's context to end and returns its cause.
func waitDead(t *testing.T, tb *Testbed) error {
	t.Helper()
	select {
	case <-tb.Context().Done():
	case <-time.After(10 * time.Second): // a hang check: the watcher looks every 250 ms
		t.Fatal("the testbed's context is still live 10 s after it died")
	}
	var de *DeadError
	if err := context.Cause(tb.Context()); !errors.As(err, &de) {
		t.Fatalf("cause %v, want a *DeadError", err)
	}
	return tb.Dead()
}

// TestDelayLineDies: when the delay line exits, the testbed's context ends with an error
// that says so, and a measurement under it fails with that error instead of measuring the
// path without its delay (0.1 ms, "ok"), which it did before.
func TestDelayLineDies(t *testing.T) {
	tb := deadTestbed(t)
	defer tb.Close()
	if _, _, _, err := PingRTT(tb.Context(), tb, 3); err != nil {
		t.Fatal(err)
	}
	tb.delay.cmd.Process.Kill()
	err := waitDead(t, tb)
	if !strings.Contains(err.Error(), "the delay line died") || !strings.Contains(err.Error(), "stopped") {
		t.Errorf("error %q", err)
	}
	_, _, _, perr := PingRTT(tb.Context(), tb, 20)
	if perr == nil {
		t.Fatal("ping measured a testbed whose delay line is dead")
	}
	if got := tb.explain(perr); got != err {
		t.Errorf("explain(%v) = %v, want the death", perr, got)
	}
	if got := interrupted(tb.Context(), perr); got.Error() != err.Error() {
		t.Errorf("interrupted says %q, want %q", got, err)
	}
}

// TestNamespaceDies: deleting one of the testbed's namespaces under it ends its context.
func TestNamespaceDies(t *testing.T) {
	tb := deadTestbed(t)
	defer tb.Close()
	if _, err := runCmd(context.Background(), "ip", "netns", "delete", tb.NS(Router)); err != nil {
		t.Fatal(err)
	}
	if err := waitDead(t, tb); !strings.Contains(err.Error(), "namespace "+tb.NS(Router)+" (host R) disappeared") {
		t.Errorf("error %q", err)
	}
}

// TestBannerOnStderr: a run prints results only on stdout; its banner goes to stderr.
func TestBannerOnStderr(t *testing.T) {
	if testing.Short() {
		t.Skip("builds namespaces; skipped with -short")
	}
	if err := CheckPrivileges(); err != nil {
		t.Skip("skipping:", err)
	}
	var stdout, stderr bytes.Buffer
	o := &options{cfg: Config{Rate: 100e6, RTT: 2 * time.Millisecond}, measure: "none", stdout: &stdout, stderr: &stderr}
	if code, err := run(o); code != 0 || err != nil {
		t.Fatalf("run: %d, %v", code, err)
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout %q, want nothing", stdout.String())
	}
	if !strings.Contains(stderr.String(), "testbed: rate 100mbit, rtt 2ms") {
		t.Errorf("stderr %q lacks the banner", stderr.String())
	}
}
