package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writeRandomFile writes n pseudo-random bytes to dir/sub/name and returns its path and digest.
func writeRandomFile(t *testing.T, dir, name string, n int) (string, string) {
	t.Helper()
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{byte(n)}).Read(b)
	p := filepath.Join(dir, "sub", name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return p, hex.EncodeToString(sum[:])
}

func TestFileRoundTrip(t *testing.T) {
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			src, sum := writeRandomFile(t, t.TempDir(), "data.bin", 3<<20+12345)
			dir := t.TempDir()
			addr, done, srvOut, srvErr := startServer(t, "-proto", proto, "-dir", dir, "-once")
			code, out, errOut := runCmd("client", "-connect", addr, "-proto", proto, "-file", src, "-json")
			if code != 0 {
				t.Fatalf("client exit %d: %s", code, errOut)
			}
			if c := waitExit(t, done, srvErr); c != 0 {
				t.Fatalf("server exit %d: %s", c, srvErr.String())
			}
			var doc struct{ Results []Row }
			if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Results) != 1 {
				t.Fatalf("client JSON: %v\n%s", err, out)
			}
			if m := checkRowKeys(t, []byte(out)); m[0]["file"] != "data.bin" {
				t.Errorf("JSON file = %#v", m[0]["file"])
			}
			r := doc.Results[0]
			if !r.SHA256OK || r.SenderSHA256 != sum || r.ReceiverSHA256 != sum || r.File == nil || *r.File != "data.bin" {
				t.Errorf("row %+v, want digest %s for data.bin", r, sum)
			}
			got, err := os.ReadFile(filepath.Join(dir, "data.bin"))
			if err != nil {
				t.Fatal(err)
			}
			if s := sha256.Sum256(got); hex.EncodeToString(s[:]) != sum {
				t.Errorf("stored file differs from the source")
			}
			if !strings.Contains(srvOut.String(), sum) {
				t.Errorf("server output lacks the digest: %s", srvOut.String())
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Errorf("server dir holds %d entries, want 1", len(entries))
			}
		})
	}
}

func TestFileOverwrite(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.bin"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	src, sum := writeRandomFile(t, t.TempDir(), "x.bin", 200<<10)

	addr, done, _, srvErr := startServer(t, "-proto", "udt", "-dir", dir, "-once")
	code, _, errOut := runCmd("client", "-connect", addr, "-file", src, "-no-progress")
	if code == 0 {
		t.Fatal("overwrite without -force succeeded")
	}
	oneLine(t, errOut, "already exists")
	waitExit(t, done, srvErr)
	if b, _ := os.ReadFile(filepath.Join(dir, "x.bin")); string(b) != "old" {
		t.Fatalf("existing file changed to %d bytes", len(b))
	}

	addr, done, _, srvErr = startServer(t, "-proto", "udt", "-dir", dir, "-once", "-force")
	if code, _, errOut := runCmd("client", "-connect", addr, "-file", src, "-no-progress"); code != 0 {
		t.Fatalf("client with -force server: exit %d: %s", code, errOut)
	}
	waitExit(t, done, srvErr)
	b, _ := os.ReadFile(filepath.Join(dir, "x.bin"))
	if s := sha256.Sum256(b); hex.EncodeToString(s[:]) != sum {
		t.Fatal("-force did not replace the file")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temporary file left behind: %d entries", len(entries))
	}
}

// failingWriter fails with ENOSPC once more than room bytes were written.
type failingWriter struct {
	w    io.Writer
	room int
}

func (f *failingWriter) Write(p []byte) (int, error) {
	if len(p) > f.room {
		return 0, &fs.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}
	}
	f.room -= len(p)
	return f.w.Write(p)
}

func TestFileDiskFull(t *testing.T) {
	wrapFileWriter = func(w io.Writer) io.Writer { return &failingWriter{w: w, room: 1 << 20} }
	defer func() { wrapFileWriter = nil }()
	src, _ := writeRandomFile(t, t.TempDir(), "big.bin", 4<<20)
	dir := t.TempDir()
	addr, done, _, srvErr := startServer(t, "-proto", "udt", "-dir", dir, "-once")
	code, _, errOut := runCmd("client", "-connect", addr, "-file", src, "-no-progress")
	if code != 1 {
		t.Fatalf("client exit %d, want 1", code)
	}
	oneLine(t, errOut, "no space left on device (partial file removed)")
	if c := waitExit(t, done, srvErr); c == 0 {
		t.Error("server -once exited 0 after a failed transfer")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("partial file left behind: %v", entries)
	}
}

func TestFileTraversalRefused(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "store")
	os.Mkdir(dir, 0o755)
	for _, name := range []string{"../evil", "..", "a/b", `a\b`, "/etc/passwd", "", ".", "x\x00y", "new\nline"} {
		t.Run(name, func(t *testing.T) {
			addr, done, _, srvErr := startServer(t, "-proto", "tcp", "-dir", dir, "-once")
			tr := testTransport(t)
			c, err := dialTransport(context.Background(), "tcp", addr, tr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := writeHello(c, &hello{Proto: "tcp", Mode: modeFile, Bytes: 3, Name: name}); err != nil {
				t.Fatal(err)
			}
			var w welcome
			if err := readMsg(bufio.NewReader(c), &w); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(w.Error, "refusing file name") {
				t.Errorf("welcome %+v, want a refusal", w)
			}
			c.Close()
			waitExit(t, done, srvErr)
		})
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 1 {
		t.Errorf("something was written next to the store: %v", entries)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("something was stored: %v", entries)
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"a", "data.bin", ".hidden", "ünïcode", "a b", strings.Repeat("x", 255)} {
		if err := checkName(ok); err != nil {
			t.Errorf("checkName(%q) = %v", ok, err)
		}
	}
	for bad, why := range map[string]string{
		"": "empty", ".": "not a file name", "..": "not a file name", "../a": "no path", "a/..": "no path",
		"a/b": "no path", `a\b`: "no path", "/a": "no path", "a\x00": "control characters", "a\x7f": "control characters",
		"new\nline": "control characters", "\xff": "UTF-8", strings.Repeat("x", 256): "256 bytes long",
	} {
		if err := checkName(bad); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("checkName(%q) = %v, want a refusal saying %q", bad, err, why)
		}
	}
}

func TestFileUnreadable(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.bin")
	code, _, errOut := runCmd("client", "-connect", "127.0.0.1:9", "-file", missing)
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	oneLine(t, errOut, "cannot read file")
	code, _, errOut = runCmd("client", "-connect", "127.0.0.1:9", "-file", dir)
	if code != 1 {
		t.Fatalf("directory: exit %d, want 1", code)
	}
	oneLine(t, errOut, "not a regular file")
}

func TestFileRefusedWithoutDir(t *testing.T) {
	src, _ := writeRandomFile(t, t.TempDir(), "f", 10)
	addr, done, _, srvErr := startServer(t, "-proto", "quic", "-once")
	code, _, errOut := runCmd("client", "-connect", addr, "-proto", "quic", "-file", src)
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	oneLine(t, errOut, "does not accept files")
	waitExit(t, done, srvErr)
}

func testTransport(t *testing.T) *transportFlags {
	tr := &transportFlags{pacer: "hybrid", cc: "udt", mss: 1500, handshake: 2 * time.Second, idle: 5 * time.Second}
	if err := tr.validate([]string{tr.pacer}); err != nil {
		t.Fatal(err)
	}
	return tr
}
