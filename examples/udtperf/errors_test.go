package main

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-bogus"}, "flag provided but not defined"},
		{[]string{"client"}, "needs -connect"},
		{[]string{"client", "-connect", "h:1", "-proto", "sctp"}, `unknown -proto "sctp"`},
		{[]string{"-pacer", "hybrid,nope"}, `unknown -pacer "nope"`},
		{[]string{"-cc", "vegas"}, "bad -cc"},
		{[]string{"-cc", "udt-lt"}, "was removed"},
		{[]string{"client", "-connect", "h:1", "-bytes", "12XB"}, "bad size"},
		{[]string{"client", "-connect", "h:1", "-time", "-5s"}, "-time must be positive"},
		{[]string{"server", "-interval", "1ms"}, "-interval"},
		{[]string{"client", "-connect", "h:1", "-reverse", "-file", "x"}, "cannot be combined"},
		{[]string{"client", "-connect", "h:1", "-reverse", "-cc", "udt", "-pacer", "spin"}, "-cc, -pacer configure the sender, which with -reverse is the server"},
		{[]string{"client", "-connect", "127.0.0.1"}, "bad -connect"},
		{[]string{"frobnicate"}, "unknown command"},
		{[]string{"server", "-dir", "/nonexistent/udtperf"}, "not a directory"},
		{[]string{"client", "-connect", "h:1", "extra"}, "unexpected argument"},
		{[]string{"server", "-listen", "9000"}, "bad -listen"},
		{[]string{"server", "-listen", ":70000"}, "bad -listen port"},
		{[]string{"server", "-listen", ":65535"}, "bad -listen port"},
		{[]string{"server", "-keep-partial", "-1h"}, "-keep-partial"},
		{[]string{"client", "-connect", "h:1", "-file", "x", "-bytes", "1MiB"}, "-file sends the whole file: -bytes does not apply"},
		{[]string{"client", "-connect", "h:1", "-file", "x", "-time", "3s"}, "-time does not apply"},
		{[]string{"client", "-connect", "h:1", "-file", "x", "-time", "3s", "-bytes", "1MiB"}, "-bytes and -time do not apply"},
		{[]string{"client", "-connect", "h:1", "-resume"}, "-resume needs -file"},
		{[]string{"client", "-connect", "h:1", "-reverse", "-tcp-cc", "reno"}, "-tcp-cc configure the sender"},
	} {
		code, out, errOut := runCmd(tc.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2", tc.args, code)
		}
		if out != "" {
			t.Errorf("%v: stdout %q", tc.args, out)
		}
		oneLine(t, errOut, tc.want)
	}
	if code, _, errOut := runCmd("client", "-h"); code != 0 || !strings.Contains(errOut, "-connect") {
		t.Errorf("-h: exit %d, usage %q", code, errOut)
	}
}

// TestListenBusy: a port in use is a runtime error (exit 1) in one line that names the
// address once, without a doubled "listen udt: udt:" or "listen udp" prefix.
func TestListenBusy(t *testing.T) {
	busy, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	code, _, errOut := runCmd("server", "-listen", busy.LocalAddr().String(), "-proto", "udt")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	want := "udtperf: cannot listen for udt on udp " + busy.LocalAddr().String() + ": bind: address already in use\n"
	if errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
}

func TestUnreachable(t *testing.T) {
	addr := unusedPort(t)
	for _, tc := range []struct{ proto, want string }{
		{"udt", "no udt server at " + addr + " (connection refused)"}, // the host's ICMP answer
		{"quic", "no quic server answers"},
		{"tcp", "connection refused"},
	} {
		start := time.Now()
		code, _, errOut := runCmd("client", "-connect", addr, "-proto", tc.proto, "-handshake-timeout", "1s", "-time", "1s")
		if code != 1 {
			t.Errorf("%s: exit %d, want 1", tc.proto, code)
		}
		oneLine(t, errOut, tc.want)
		if d := time.Since(start); d > 20*time.Second { // a hang check, not a timing assertion
			t.Errorf("%s: took %v", tc.proto, d)
		}
	}
}

// TestServerKilled kills a server process in mid-transfer: the client must give up within its
// idle timeout with one line, not hang.
func TestServerKilled(t *testing.T) {
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(exe, "server", "-listen", "127.0.0.1:0", "-proto", proto, "-idle-timeout", "2s")
			cmd.Env = append(os.Environ(), childEnv+"=1")
			pipe, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Wait()
			defer cmd.Process.Kill()
			line, _ := bufio.NewReader(pipe).ReadString('\n')
			m := listeningRE.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("server said %q", line)
			}
			go func() {
				time.Sleep(time.Second)
				cmd.Process.Kill()
			}()
			start := time.Now()
			code, _, errOut := runCmd("client", "-connect", "127.0.0.1:"+m[1], "-proto", proto,
				"-time", "60s", "-idle-timeout", "2s", "-interval", "0", "-no-progress")
			if code != 1 {
				t.Fatalf("exit %d, want 1", code)
			}
			want := "nothing heard from the peer for 2s"
			switch proto {
			case "tcp":
				want = "closed by the peer"
			case "udt": // the killed server's host answers with ICMP port unreachable (conn/icmp.go)
				want = "its host reported port unreachable"
			}
			oneLine(t, errOut, want)
			if d := time.Since(start); d > 30*time.Second { // a hang check, not a timing assertion
				t.Errorf("took %v", d)
			}
		})
	}
}
