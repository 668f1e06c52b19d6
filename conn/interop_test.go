package conn

// Live interoperability with the UDT 4.11 C++ reference programs (spec §11.2, §11.4).
//
// These tests run only when UDT4_REF_BIN names a directory holding the reference's stock
// appserver, appclient, sendfile and recvfile binaries (built from UDT 4.11's app/*.cpp and
// linked with its libudt; on Debian, `apt-get install libudt-dev` ships the 4.11 library and the
// example sources in /usr/share/doc/libudt-dev/examples). Otherwise they skip: the reference is
// not part of the project and CI does not build it (spec §11.4, item 6).
//
//	UDT4_REF_BIN=/path/to/udt4/app go test -run Interop -v ./conn
//
// Scenarios (spec §11.4): our Dial against appserver, appclient against our Listener, and the
// sendfile/recvfile protocol in both directions, on loopback and through a relay that drops
// 1 % of the datagrams each way.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/udtgo/udt/internal/udprelay"
)

// refBin returns the path of a reference program, or skips the test.
func refBin(t *testing.T, prog string) string {
	t.Helper()
	dir := os.Getenv("UDT4_REF_BIN")
	if dir == "" {
		t.Skip("UDT4_REF_BIN is not set: skipping live interop with the UDT 4.11 reference programs " +
			"(set it to a directory holding appserver, appclient, sendfile and recvfile)")
	}
	p := filepath.Join(dir, prog)
	if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		t.Fatalf("UDT4_REF_BIN=%s: no executable %s", dir, prog)
	}
	return p
}

// lineLog collects a process's output lines and lets a test wait for one.
type lineLog struct {
	mu    sync.Mutex
	lines []string
	part  []byte
	ch    chan struct{} // closed and replaced on every new line
}

func newLineLog() *lineLog { return &lineLog{ch: make(chan struct{})} }

func (l *lineLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.part = append(l.part, b...)
	for {
		i := bytes.IndexByte(l.part, '\n')
		if i < 0 {
			break
		}
		l.lines = append(l.lines, strings.TrimRight(string(l.part[:i]), "\r"))
		l.part = l.part[i+1:]
		close(l.ch)
		l.ch = make(chan struct{})
	}
	return len(b), nil
}

// wait returns the first line matching re, waiting at most d.
func (l *lineLog) wait(re *regexp.Regexp, d time.Duration) (string, bool) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		for _, s := range l.lines {
			if re.MatchString(s) {
				l.mu.Unlock()
				return s, true
			}
		}
		ch := l.ch
		l.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			return "", false
		}
	}
}

func (l *lineLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// startRef starts a reference program; it is killed (if still running) when the test ends.
func startRef(t *testing.T, dir string, prog string, args ...string) (*exec.Cmd, *lineLog, <-chan error) {
	t.Helper()
	cmd := exec.Command(refBin(t, prog), args...)
	cmd.Dir = dir
	out := newLineLog()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{}) // closed when the process has exited
	done := make(chan error, 1)   // its Wait result, for the test to receive once
	go func() {
		done <- cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if lines := out.all(); len(lines) > 0 {
			t.Logf("%s output:\n\t%s", prog, strings.Join(lines, "\n\t"))
		}
	})
	return cmd, out, done
}

// freeUDPPort returns a UDP port on 127.0.0.1 that was free a moment ago.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	return pc.LocalAddr().(*net.UDPAddr).Port
}

func interopConfig() *Config {
	return &Config{IdleTimeout: 20 * time.Second, Linger: 30 * time.Second}
}

// lossyRelay puts a relay dropping loss of the datagrams each way in front of server.
func lossyRelay(t *testing.T, server string, loss float64) string {
	t.Helper()
	imp := udprelay.Impairment{Loss: loss}
	r, err := udprelay.New(server, udprelay.Config{Seed: 7, ToServer: imp, ToClient: imp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		st := r.Stats()
		t.Logf("relay dropped %d/%d to the server, %d/%d to the client",
			st.ToServer.Dropped(), st.ToServer.Received, st.ToClient.Dropped(), st.ToClient.Received)
		r.Close()
	})
	return r.Addr().String()
}

var (
	reReady  = regexp.MustCompile(`^server is ready at port: \d+`)
	reBroken = regexp.MustCompile(`^recv:Connection was broken\.`)
)

// TestInteropDialAppserver: our Dial streams to the reference appserver, whose log must show
// the connection from our port, then our Close (Shutdown) must break its recv promptly.
func TestInteropDialAppserver(t *testing.T) {
	port := freeUDPPort(t)
	_, out, _ := startRef(t, "", "appserver", strconv.Itoa(port))
	if _, ok := out.wait(reReady, 5*time.Second); !ok {
		t.Fatal("appserver did not become ready")
	}
	c, err := Dial("udp4", fmt.Sprintf("127.0.0.1:%d", port), interopConfig())
	if err != nil {
		t.Fatal(err)
	}
	lport := c.LocalAddr().(*net.UDPAddr).Port
	reNew := regexp.MustCompile(fmt.Sprintf(`^new connection: 127\.0\.0\.1:%d$`, lport))
	buf := make([]byte, 100000)
	start := time.Now()
	var n int64
	c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	for time.Since(start) < 2*time.Second && n < 256<<20 {
		k, err := c.Write(buf)
		n += int64(k)
		if err != nil {
			c.Close()
			t.Fatalf("write after %d bytes: %v", n, err)
		}
	}
	if _, ok := out.wait(reNew, 5*time.Second); !ok {
		t.Errorf("appserver did not log %q", reNew)
	}
	st := c.Stats()
	closeStart := time.Now()
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	closed := time.Since(closeStart)
	el := time.Since(start)
	t.Logf("wrote %d bytes in %v (%.0f Mbit/s, Close %v); sent %d, retransmitted %d, NAKs received %d, ACKs %d, ACK2 %d, RTT %v",
		n, el, float64(n)*8/el.Seconds()/1e6, closed, st.PktSent, st.PktRetrans, st.PktRecvNAK, st.PktRecvACK, st.ACK2Sent, st.RTT)
	if _, ok := out.wait(reBroken, 5*time.Second); !ok {
		t.Errorf("appserver did not log %q within 5 s of our Close", reBroken)
	}
	if st.PktRecvACK == 0 || st.ACK2Sent == 0 {
		t.Errorf("no full ACK from the reference or no ACK2 sent: %+v", st)
	}
}

// perfLine is one line of appclient's perfmon output (spec §11.2).
var rePerf = regexp.MustCompile(`^([0-9.]+)\s+([0-9.]+)\s+(\d+)\s+([0-9.]+)\s+(\d+)\s+(\d+)$`)

// TestInteropAppclientListener: the reference appclient connects to our Listener (cookie
// exchange and ISN echo) and streams; its perfmon lines must show ACKs and a sane RTT.
func TestInteropAppclientListener(t *testing.T) {
	refBin(t, "appclient")
	ln, err := Listen("udp4", "127.0.0.1:0", interopConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.UDPAddr).Port
	_, out, done := startRef(t, "", "appclient", "127.0.0.1", strconv.Itoa(port))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := ln.AcceptUDT(ctx)
	if err != nil {
		t.Fatalf("accept: %v (appclient: %q)", err, out.all())
	}
	defer c.Close()
	start := time.Now()
	c.SetReadDeadline(start.Add(3500 * time.Millisecond))
	buf := make([]byte, 1<<20)
	var n int64
	for {
		k, err := c.Read(buf)
		n += int64(k)
		if err != nil {
			if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
				t.Errorf("read: %v", err)
			}
			break
		}
	}
	el := time.Since(start)
	select {
	case err := <-done:
		t.Fatalf("appclient exited early: %v", err)
	default:
	}
	st := c.Stats()
	t.Logf("read %d bytes in %v (%.0f Mbit/s); received %d, lost %d, ACKs sent %d (+%d light), NAKs sent %d, ACK2 received %d, RTT %v",
		n, el, float64(n)*8/el.Seconds()/1e6, st.PktRecv, st.PktRcvLoss, st.PktSentACK, st.LightACKSent, st.PktSentNAK, st.ACK2Recv, st.RTT)
	if n == 0 {
		t.Fatal("no data from appclient")
	}
	var perf [][]string
	for _, s := range out.all() {
		if m := rePerf.FindStringSubmatch(strings.TrimSpace(s)); m != nil {
			perf = append(perf, m)
		}
	}
	if len(perf) == 0 {
		t.Fatalf("no perfmon line from appclient: %q", out.all())
	}
	for _, m := range perf {
		rtt, _ := strconv.ParseFloat(m[2], 64)
		acks, _ := strconv.Atoi(m[5])
		if acks == 0 || rtt <= 0 || rtt > 1000 {
			t.Errorf("appclient perfmon line not sane (RecvACK %d, RTT %g ms): %q", acks, rtt, m[0])
		}
		if m[6] != "0" {
			t.Logf("appclient received %s NAKs in one second (loss in the local UDP buffers)", m[6])
		}
	}
	if st.ACK2Recv == 0 {
		t.Error("the reference answered no ACK with ACK2")
	}
}

// serveFile answers one request of the sendfile/recvfile protocol (spec §11.2): a 4-byte
// little-endian name length, the name, then an 8-byte little-endian size and the contents.
func serveFile(ln *Listener, want string, data []byte, stats *Stats) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := ln.AcceptUDT(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	defer func() { *stats = c.Stats() }()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	var l [4]byte
	if _, err := io.ReadFull(c, l[:]); err != nil {
		return fmt.Errorf("name length: %w", err)
	}
	nl := binary.LittleEndian.Uint32(l[:])
	if nl > 4096 {
		return fmt.Errorf("name length %d", nl)
	}
	name := make([]byte, nl)
	if _, err := io.ReadFull(c, name); err != nil {
		return fmt.Errorf("name: %w", err)
	}
	if string(name) != want {
		return fmt.Errorf("asked for %q, want %q", name, want)
	}
	var sz [8]byte
	binary.LittleEndian.PutUint64(sz[:], uint64(len(data)))
	if _, err := c.Write(sz[:]); err != nil {
		return err
	}
	if _, err := c.Write(data); err != nil {
		return err
	}
	// recvfile closes once it has everything: wait for its Shutdown.
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		return fmt.Errorf("after the file: %v, want EOF", err)
	}
	return nil
}

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// TestInteropRecvfile: the reference recvfile fetches a file from our Listener, over a clean
// path, with 1 % loss, and with a quarter of our packets 5 ms late: recvfile NAKs every gap at
// once (UDT 4.11), so our sender must hold those NAKs for its reordering window instead of
// resending every late packet.
func TestInteropRecvfile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		loss    float64
		reorder bool
	}{{"loss=0%", 0, false}, {"loss=1%", 0.01, false}, {"reorder=25%", 0, true}} {
		t.Run(tc.name, func(t *testing.T) {
			refBin(t, "recvfile")
			data := randomBytes(t, 8<<20)
			ln, err := Listen("udp4", "127.0.0.1:0", interopConfig())
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			addr := ln.Addr().String()
			if tc.loss > 0 {
				addr = lossyRelay(t, addr, tc.loss)
			}
			if tc.reorder {
				late := udprelay.Impairment{Delay: 10 * time.Millisecond, Reorder: 0.25, ReorderDelay: 5 * time.Millisecond}
				r, err := udprelay.New(addr, udprelay.Config{Seed: 7, ToServer: udprelay.Impairment{Delay: 10 * time.Millisecond}, ToClient: late})
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				addr = r.Addr().String()
			}
			host, port, _ := net.SplitHostPort(addr)
			served := make(chan error, 1)
			var st Stats
			go func() { served <- serveFile(ln, "remote.bin", data, &st) }()
			dir := t.TempDir()
			start := time.Now()
			_, out, done := startRef(t, dir, "recvfile", host, port, "remote.bin", "local.bin")
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("recvfile: %v %q", err, out.all())
				}
			case <-time.After(60 * time.Second):
				t.Fatal("recvfile did not finish in 60 s")
			}
			el := time.Since(start)
			if err := <-served; err != nil {
				t.Errorf("server: %v", err)
			}
			got, err := os.ReadFile(filepath.Join(dir, "local.bin"))
			if err != nil {
				t.Fatal(err)
			}
			if sha256.Sum256(got) != sha256.Sum256(data) {
				t.Fatalf("recvfile's copy differs: %d bytes, want %d", len(got), len(data))
			}
			t.Logf("%d bytes, SHA-256 equal, %v (%.0f Mbit/s); sent %d, retransmitted %d (%d spurious), NAKs %d, held %d, late %d, window %v",
				len(data), el, float64(len(data))*8/el.Seconds()/1e6, st.PktSent, st.PktRetrans, st.PktSpurious,
				st.PktRecvNAK, st.LossDeferred, st.LossLate, st.SendReorderWindow)
			// Resending every late packet would be a quarter of them: after the first few spurious
			// retransmissions teach the window, a few per cent remain (new records of lateness).
			if tc.reorder && st.PktRetrans > st.PktSent/10 {
				t.Errorf("retransmitted %d of %d packets on a path that loses none", st.PktRetrans, st.PktSent)
			}
		})
	}
}

// TestInteropSendfile: our Dial fetches a file from the reference sendfile.
func TestInteropSendfile(t *testing.T) {
	for _, loss := range []float64{0, 0.01} {
		t.Run(fmt.Sprintf("loss=%g%%", loss*100), func(t *testing.T) {
			refBin(t, "sendfile")
			dir := t.TempDir()
			data := randomBytes(t, 8<<20)
			if err := os.WriteFile(filepath.Join(dir, "remote.bin"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			port := freeUDPPort(t)
			_, out, _ := startRef(t, dir, "sendfile", strconv.Itoa(port))
			if _, ok := out.wait(reReady, 5*time.Second); !ok {
				t.Fatal("sendfile did not become ready")
			}
			addr := fmt.Sprintf("127.0.0.1:%d", port)
			if loss > 0 {
				addr = lossyRelay(t, addr, loss)
			}
			start := time.Now()
			c, err := Dial("udp4", addr, interopConfig())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(60 * time.Second))
			req := binary.LittleEndian.AppendUint32(nil, uint32(len("remote.bin")))
			req = append(req, "remote.bin"...)
			if _, err := c.Write(req); err != nil {
				t.Fatal(err)
			}
			var sz [8]byte
			if _, err := io.ReadFull(c, sz[:]); err != nil {
				t.Fatalf("size: %v", err)
			}
			if size := int64(binary.LittleEndian.Uint64(sz[:])); size != int64(len(data)) {
				t.Fatalf("size %d, want %d", size, len(data))
			}
			h := sha256.New()
			if _, err := io.CopyN(h, bufio.NewReader(c), int64(len(data))); err != nil {
				t.Fatalf("contents: %v", err)
			}
			el := time.Since(start)
			if !bytes.Equal(h.Sum(nil), func() []byte { s := sha256.Sum256(data); return s[:] }()) {
				t.Fatal("received file differs")
			}
			if _, ok := out.wait(regexp.MustCompile(`^speed = `), 5*time.Second); !ok {
				t.Error("sendfile did not report its transfer")
			}
			st := c.Stats()
			t.Logf("%d bytes, SHA-256 equal, %v (%.0f Mbit/s); lost %d, NAKs sent %d, ACK2 received %d",
				len(data), el, float64(len(data))*8/el.Seconds()/1e6, st.PktRcvLoss, st.PktSentNAK, st.ACK2Recv)
		})
	}
}
