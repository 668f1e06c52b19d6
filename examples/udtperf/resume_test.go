package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestFileResumeAfterServerKilled kills a server (SIGKILL) in the middle of a file upload,
// restarts it on the same -dir and continues the upload with -resume: the server offers what
// its partial file holds, the client sends only the rest, and both ends' SHA-256 of the whole
// file agree. Before, the killed server left a hidden temporary file that a restart neither
// removed nor resumed, and there was no -resume.
func TestFileResumeAfterServerKilled(t *testing.T) {
	const size = 24 << 20
	src, sum := writeRandomFile(t, t.TempDir(), "data.bin", size)
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "server", "-listen", "127.0.0.1:0", "-proto", "udt", "-dir", dir, "-idle-timeout", "2s")
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
	part := filepath.Join(dir, partialName("data.bin"))
	go func() { // kill the server once a few MB have arrived
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if st, err := os.Stat(part); err == nil && st.Size() >= 4<<20 {
				break
			}
		}
		cmd.Process.Kill()
	}()
	code, _, errOut := runCmd("client", "-connect", "127.0.0.1:"+m[1], "-file", src, "-cc", "fixed:40mbit",
		"-idle-timeout", "2s", "-no-progress")
	if code == 0 {
		t.Fatal("the upload survived the server's death")
	}
	t.Logf("first upload: %s", strings.TrimSpace(errOut))
	cmd.Wait()
	if names := dirNames(t, dir); !slices.Equal(names, []string{partialName("data.bin")}) {
		t.Fatalf("after the kill dir holds %q, want only the partial file", names)
	}
	st, _ := os.Stat(part)
	held := st.Size()

	addr, done, _, srvErr := startServer(t, "-proto", "udt", "-dir", dir, "-once")
	if !strings.Contains(srvErr.String(), `holds a partial upload of "data.bin"`) {
		t.Errorf("the restarted server does not mention the partial upload: %s", srvErr.String())
	}
	code, out, errOut := runCmd("client", "-connect", addr, "-file", src, "-resume", "-json")
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, errOut)
	}
	if c := waitExit(t, done, srvErr); c != 0 {
		t.Errorf("server exit %d: %s", c, srvErr.String())
	}
	var doc struct{ Results []Row }
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Results) != 1 {
		t.Fatalf("JSON %v: %s", err, out)
	}
	r := doc.Results[0]
	if r.ResumedFrom == nil || *r.ResumedFrom != held || r.Bytes != size-held {
		t.Errorf("resumed from %v, %d bytes sent; want from %d, %d bytes", r.ResumedFrom, r.Bytes, held, size-held)
	}
	if !r.SHA256OK || r.SenderSHA256 != sum || r.ReceiverSHA256 != sum {
		t.Errorf("digests %s / %s, want the whole file's %s", r.SenderSHA256, r.ReceiverSHA256, sum)
	}
	checkStored(t, dir, "data.bin", sum)
}

// checkStored asserts that dir holds exactly name, with digest sum.
func checkStored(t *testing.T, dir, name, sum string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if s := sha256.Sum256(b); hex.EncodeToString(s[:]) != sum {
		t.Errorf("stored %s differs from the source", name)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{name}) {
		t.Errorf("dir holds %q, want only %s", names, name)
	}
}

// TestFileResumeMismatch: a partial upload whose bytes differ from the client's file is not
// continued: the client sends the whole file, which is stored right.
func TestFileResumeMismatch(t *testing.T) {
	src, sum := writeRandomFile(t, t.TempDir(), "x.bin", 3<<20)
	dir := t.TempDir()
	other := make([]byte, 1<<20)
	rand.NewChaCha8([32]byte{7}).Read(other)
	if err := os.WriteFile(filepath.Join(dir, partialName("x.bin")), other, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, proto := range []string{"tcp", "quic"} {
		addr, done, _, srvErr := startServer(t, "-proto", proto, "-dir", dir, "-once", "-force")
		code, out, errOut := runCmd("client", "-connect", addr, "-proto", proto, "-file", src, "-resume", "-json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", proto, code, errOut)
		}
		waitExit(t, done, srvErr)
		if proto == "tcp" && !strings.Contains(errOut, "differs from this file: sending it whole") {
			t.Errorf("%s: client stderr %q", proto, errOut)
		}
		var doc struct{ Results []Row }
		if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Results) != 1 {
			t.Fatalf("JSON %v: %s", err, out)
		}
		if r := doc.Results[0]; r.ResumedFrom == nil || *r.ResumedFrom != 0 || r.Bytes != 3<<20 || !r.SHA256OK {
			t.Errorf("%s: row %+v", proto, r)
		}
		checkStored(t, dir, "x.bin", sum)
	}
}

// TestFileResumeNothingHeld: -resume with no partial upload on the server sends the whole file.
func TestFileResumeNothingHeld(t *testing.T) {
	src, sum := writeRandomFile(t, t.TempDir(), "n.bin", 1<<20)
	dir := t.TempDir()
	addr, done, _, srvErr := startServer(t, "-proto", "udt", "-dir", dir, "-once")
	if code, _, errOut := runCmd("client", "-connect", addr, "-file", src, "-resume"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	waitExit(t, done, srvErr)
	checkStored(t, dir, "n.bin", sum)
}

// TestSweepPartials: at start the server removes older udtperf versions' temporary files and
// partial uploads older than -keep-partial, keeps the rest and names them.
func TestSweepPartials(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, age time.Duration) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
		mt := time.Now().Add(-age)
		os.Chtimes(p, mt, mt)
	}
	write(".old.bin.udtperf-0123456789ab", time.Minute) // udtperf before -resume: random suffix
	write(partialName("stale.bin"), 48*time.Hour)
	write(partialName("fresh.bin"), time.Hour)
	write(partialName(strings.Repeat("l", 250)), time.Hour)
	write(".notours.udtperf-xyz", 48*time.Hour) // not udtperf's pattern: left alone
	write("plain.bin", 48*time.Hour)
	_, done, _, srvErr := startServer(t, "-proto", "tcp", "-dir", dir, "-keep-partial", "24h")
	self, _ := os.FindProcess(os.Getpid())
	self.Signal(os.Interrupt)
	waitExit(t, done, srvErr)
	want := []string{".fresh.bin.udtperf-partial", ".notours.udtperf-xyz", partialName(strings.Repeat("l", 250)), "plain.bin"}
	slices.Sort(want)
	if names := dirNames(t, dir); !slices.Equal(names, want) {
		t.Errorf("dir holds %q, want %q", names, want)
	}
	log := srvErr.String()
	for _, s := range []string{"removed 2 stale partial upload file(s)", `partial upload of "fresh.bin"`, "-resume"} {
		if !strings.Contains(log, s) {
			t.Errorf("server log lacks %q: %s", s, log)
		}
	}
}

// TestFileSinkLocked: while one upload writes a name's partial file, another upload of that
// name is refused, and the sweep leaves the file alone.
func TestFileSinkLocked(t *testing.T) {
	dir := t.TempDir()
	s, err := openSink(dir, "busy.bin", false, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openSink(dir, "busy.bin", false, true, 100); err == nil || !strings.Contains(err.Error(), "already in progress") {
		t.Errorf("second upload of the same name: %v", err)
	}
	if _, removed := sweepPartials(dir, 0, time.Now()); len(removed) != 0 {
		t.Errorf("the sweep removed a partial file in use: %q", removed)
	}
	s.keepPartial = true
	s.Write([]byte("abc"))
	s.Keep()
	if s.kept != 3 {
		t.Errorf("kept %d bytes, want 3", s.kept)
	}
	r, err := openSink(dir, "busy.bin", false, true, 10)
	if err != nil {
		t.Fatal(err)
	}
	if r.offset != 3 {
		t.Errorf("resume offers %d bytes, want 3", r.offset)
	}
	r.Abort()
	if names := dirNames(t, dir); len(names) != 0 {
		t.Errorf("after Abort dir holds %q", names)
	}
}
