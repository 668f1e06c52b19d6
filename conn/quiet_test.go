package conn

import (
	"bytes"
	"io"
	"runtime"
	"testing"
)

// TestQuietWritesOnFirstData checks that a socket conn opened itself takes its write readiness
// out of the Go runtime's netpoller when it first sends data (Linux), not before, and that data
// and control packets still flow both ways afterwards: the client sends, the server echoes.
func TestQuietWritesOnFirstData(t *testing.T) {
	c, s, ln := loopbackPair(t, nil)
	defer ln.Close()
	defer c.Close()
	defer s.Close()
	if c.mux.quiet.Load() || s.mux.quiet.Load() {
		t.Fatal("quiet before any data was sent")
	}
	go func() { io.Copy(s, s) }()
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	go c.Write(want)
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("echo differs")
	}
	linux := runtime.GOOS == "linux"
	if c.mux.quiet.Load() != linux || s.mux.quiet.Load() != linux {
		t.Fatalf("quiet: dialer %v, listener %v; want %v on %s", c.mux.quiet.Load(), s.mux.quiet.Load(), linux, runtime.GOOS)
	}
}
