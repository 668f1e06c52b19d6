package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udtgo/udt/conn/trace"
)

// TestTraceAndPlot: client -trace writes the connection's events as JSON lines, which
// `udtperf plot` draws.
func TestTraceAndPlot(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "t.jsonl")
	addr, done, _, srvErr := startServer(t, "-proto", "udt", "-once")
	code, _, errOut := runCmd("client", "-connect", addr, "-bytes", "4MiB", "-trace", file, "-no-progress")
	if code != 0 {
		t.Fatalf("client exit %d: %s", code, errOut)
	}
	waitExit(t, done, srvErr)
	if !strings.Contains(errOut, "trace written to "+file) {
		t.Errorf("stderr %q", errOut)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := trace.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if info := r.Info(); info.Server || info.MSS != 1500 || info.Remote.String() != addr {
		t.Errorf("connection line %+v", info)
	}
	count := map[trace.Kind]int{}
	var sent int
	var last trace.Event
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		count[ev.Kind]++
		if ev.Kind == trace.PacketSent {
			sent += ev.Bytes
		}
		last = ev
	}
	// The data phase's payload (4 MiB plus udtperf's framing and messages) was sent.
	if sent < 4<<20 || count[trace.ACKReceived] == 0 || count[trace.CongestionState] == 0 || last.Kind != trace.Closed {
		t.Errorf("%d payload bytes sent, events %v, last %+v", sent, count, last)
	}

	png := filepath.Join(dir, "out.png")
	code, _, errOut = runCmd("plot", file, "-o", png)
	if code != 0 {
		t.Fatalf("plot exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) || len(b) < 10000 {
		t.Errorf("plot output: %d bytes, %v", len(b), err)
	}
	if code, _, _ := runCmd("plot", "-bin", "50ms", file); code != 0 { // default output: t.png
		t.Errorf("plot with the default output: exit %d", code)
	}
	if _, err := os.Stat(filepath.Join(dir, "t.png")); err != nil {
		t.Error(err)
	}
}

func TestTracePlotErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"client", "-connect", "h:1", "-proto", "tcp", "-trace", "x"}, 2, "-trace traces udt connections"},
		{[]string{"plot"}, 2, "plot needs a trace file"},
		{[]string{"plot", "a", "b"}, 2, "unexpected argument"},
		{[]string{"plot", "a", "-o", "x.gif"}, 2, "want a .png"},
		{[]string{"plot", filepath.Join(t.TempDir(), "none.jsonl")}, 1, "cannot read trace"},
		{[]string{"client", "-connect", "h:1", "-trace", filepath.Join(t.TempDir(), "no", "such", "dir")}, 1, "cannot create the -trace file"},
	} {
		code, _, errOut := runCmd(tc.args...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d", tc.args, code, tc.code)
		}
		oneLine(t, errOut, tc.want)
	}
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, []byte("not a trace\n"), 0o644)
	if code, _, errOut := runCmd("plot", bad); code != 1 || !strings.Contains(errOut, "not a connection line") {
		t.Errorf("bad trace: exit %d, %q", code, errOut)
	}
}
