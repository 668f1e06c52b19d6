package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestClientModes runs forward, reverse and timed transfers of every protocol against one
// server that serves all three (udt and quic sharing its UDP port), in this process, and checks
// the output formats and that no goroutine outlives the server.
func TestClientModes(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	addr, done, srvOut, srvErr := startServer(t, "-json")
	for _, proto := range protocols {
		for _, tc := range []struct {
			name string
			args []string
			dir  string
		}{
			{"reverse", []string{"-reverse", "-bytes", "1MiB"}, "server->client"},
			{"timed", []string{"-time", "300ms", "-interval", "100ms"}, "client->server"},
		} {
			args := append([]string{"client", "-connect", addr, "-proto", proto, "-json"}, tc.args...)
			code, out, errOut := runCmd(args...)
			if code != 0 {
				t.Fatalf("%s %s: exit %d: %s", proto, tc.name, code, errOut)
			}
			var doc struct{ Results []Row }
			if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Results) != 1 {
				t.Fatalf("%s %s: JSON %v: %s", proto, tc.name, err, out)
			}
			checkRowKeys(t, []byte(out))
			r := doc.Results[0]
			if r.Protocol != proto || r.Direction != tc.dir || !r.SHA256OK || r.Bytes == 0 {
				t.Errorf("%s %s: row %+v", proto, tc.name, r)
			}
			if tc.name == "timed" && len(r.Intervals) < 2 {
				t.Errorf("%s timed: %d intervals, want ≥ 2", proto, len(r.Intervals))
			}
			if tc.name == "reverse" && r.Bytes != 1<<20 {
				t.Errorf("%s reverse: %d bytes", proto, r.Bytes)
			}
		}
	}
	// The server prints one JSON document per transfer, one per line.
	lines := strings.Split(strings.TrimSpace(srvOut.String()), "\n")
	if len(lines) != 2*len(protocols) {
		t.Errorf("server printed %d lines, want %d:\n%s", len(lines), 2*len(protocols), srvOut.String())
	}
	for _, l := range lines {
		var doc struct{ Results []Row }
		if err := json.Unmarshal([]byte(l), &doc); err != nil || len(doc.Results) != 1 || !doc.Results[0].SHA256OK {
			t.Errorf("server line %q: %v", l, err)
		}
		checkRowKeys(t, []byte(l))
	}
	// Stop the server the way a user does: Ctrl-C (the server has SIGINT registered).
	self, _ := os.FindProcess(os.Getpid())
	if err := self.Signal(os.Interrupt); err != nil {
		t.Skipf("cannot interrupt the server here: %v", err)
	}
	if code := waitExit(t, done, srvErr); code != 0 {
		t.Errorf("server exit %d: %s", code, srvErr.String())
	}
}
