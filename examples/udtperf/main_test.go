package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain runs udtperf itself when self mode (or a test) re-executes the test binary as a
// child process.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	// goleak: every goroutine of servers, clients and transports ends (the tests run them in
	// this process).
	goleak.VerifyTestMain(m)
}

// syncBuffer is a bytes.Buffer safe for a writer goroutine and a polling reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var listeningRE = regexp.MustCompile(`listening on 127\.0\.0\.1 port (\d+)`)

// waitListening polls a server's stderr for its "listening on" line and returns HOST:PORT.
func waitListening(t *testing.T, stderr interface{ String() string }, done <-chan int) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if m := listeningRE.FindStringSubmatch(stderr.String()); m != nil {
			return "127.0.0.1:" + m[1]
		}
		select {
		case code := <-done:
			t.Fatalf("server exited with %d before listening: %s", code, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("server did not start: %s", stderr.String())
	return ""
}

// startServer runs `udtperf server -listen 127.0.0.1:0 args...` in this process and returns its
// address and a channel that yields its exit status.
func startServer(t *testing.T, args ...string) (string, <-chan int, *syncBuffer, *syncBuffer) {
	t.Helper()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(append([]string{"server", "-listen", "127.0.0.1:0"}, args...), &stdout, &stderr)
	}()
	addr := waitListening(t, &stderr, done)
	return addr, done, &stdout, &stderr
}

// waitExit waits for a server started with -once.
func waitExit(t *testing.T, done <-chan int, stderr *syncBuffer) int {
	t.Helper()
	select {
	case code := <-done:
		return code
	case <-time.After(30 * time.Second):
		t.Fatalf("server did not exit; stderr: %s", stderr.String())
	}
	return -1
}

// runCmd runs udtperf in this process.
func runCmd(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

// oneLine checks that stderr is exactly one "udtperf: ..." line containing want.
func oneLine(t *testing.T, stderr, want string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "udtperf: ") {
		t.Errorf("stderr is not one udtperf line: %q", stderr)
	}
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr %q does not mention %q", stderr, want)
	}
}

// unusedPort returns a loopback port nothing listens on (UDP and TCP) at the time of the call.
func unusedPort(t *testing.T) string {
	t.Helper()
	for range 20 {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := pc.LocalAddr().String()
		l, err := net.Listen("tcp", addr)
		pc.Close()
		if err != nil {
			continue
		}
		l.Close()
		return addr
	}
	t.Fatal("no free port")
	return ""
}

func TestSelfSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 14 transfers in child processes")
	}
	wantRows := []string{"udt/hybrid", "udt/nanosleep", "udt/timerfd", "udt/spin", "udt/gotimer", "tcp", "quic"}

	code, out, errOut := runCmd("-bytes", "2MiB", "-no-progress")
	if code != 0 {
		t.Fatalf("self mode exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1+len(wantRows) {
		t.Fatalf("table has %d lines, want header + %d rows:\n%s", len(lines), len(wantRows), out)
	}
	for i, name := range wantRows {
		f := strings.Fields(lines[i+1])
		if name == "tcp" && strings.HasPrefix(f[0], "tcp/") { // tcp/CC: the kernel's congestion control
			name = f[0]
		}
		if len(f) != 8 || f[0] != name || f[7] != "ok" {
			t.Errorf("row %d = %q, want %s ... ok (8 columns)", i, lines[i+1], name)
		}
	}

	code, out, errOut = runCmd("-bytes", "2MiB", "-json")
	if code != 0 {
		t.Fatalf("self mode -json exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var doc map[string][]map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
	}
	if dec.More() {
		t.Fatalf("more than one JSON document on stdout:\n%s", out)
	}
	checkRowKeys(t, []byte(out)) // every documented key, null or not
	rows := doc["results"]
	if len(rows) != len(wantRows) {
		t.Fatalf("%d results, want %d", len(rows), len(wantRows))
	}
	for i, r := range rows {
		for _, k := range []string{"protocol", "backend", "goodput_mbps", "retrans_pct", "rtt_ms",
			"sender_cpu_s_per_gb", "receiver_cpu_s_per_gb", "pkts_per_wake", "sha256_ok"} {
			if _, ok := r[k]; !ok {
				t.Errorf("result %d lacks %q", i, k)
			}
		}
		name := r["protocol"].(string)
		if b := r["backend"].(string); b != "" {
			name += "/" + b
		}
		if name != wantRows[i] {
			t.Errorf("result %d is %s, want %s", i, name, wantRows[i])
		}
		if r["sha256_ok"] != true || r["sender_sha256"] != r["receiver_sha256"] {
			t.Errorf("%s: digests differ: %v vs %v", name, r["sender_sha256"], r["receiver_sha256"])
		}
		if r["bytes"].(float64) != 2<<20 {
			t.Errorf("%s: %v bytes, want %d", name, r["bytes"], 2<<20)
		}
		if g := r["goodput_mbps"].(float64); g <= 0 {
			t.Errorf("%s: goodput %v", name, g)
		}
		if r["protocol"] == "udt" && r["pkts_per_wake"] == nil {
			t.Errorf("%s: pkts_per_wake is null", name)
		}
		// cc: udt's -cc, tcp's kernel algorithm (Linux), null for quic; strict: udt only.
		udt, quic := r["protocol"] == "udt", r["protocol"] == "quic"
		if (r["cc"] == nil) != (quic || (r["protocol"] == "tcp" && runtime.GOOS != "linux")) || (r["strict"] != nil) != udt {
			t.Errorf("%s: cc %v, strict %v", name, r["cc"], r["strict"])
		}
	}
}
