package main

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// dirNames lists the names in dir, sorted.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// isTempName reports whether name is a temporary file of the sink for final.
func isTempName(name, final string) bool {
	return strings.HasPrefix(name, "."+final+tempSuffix)
}

func TestFileSinkCompletedTransfer(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 2*frameSize+999)
	rand.NewChaCha8([32]byte{1}).Read(data)
	out, err := openSink(dir, "done.bin", false, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	snd, rcv := pipePair(nil)
	sRow, _, sErr, rErr := transfer(t, snd, rcv, sendSpec{bytes: int64(len(data)), src: bytes.NewReader(data)}, out)
	if sErr != nil || rErr != nil || !sRow.SHA256OK {
		t.Fatalf("send: %v, receive: %v, row %+v", sErr, rErr, sRow)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"done.bin"}) {
		t.Fatalf("dir holds %q, want only the final file", names)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "done.bin")); !bytes.Equal(got, data) {
		t.Error("stored file differs from the data sent")
	}
}

// TestFileSinkSenderDies: a sender that vanishes mid-transfer leaves neither the final name
// nor the temporary file, and while data arrives only the temporary file exists.
func TestFileSinkSenderDies(t *testing.T) {
	dir := t.TempDir()
	out, err := openSink(dir, "cut.bin", false, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	snd, rcv := pipePair(nil)
	tr := testTransport(t)
	rErr := make(chan error, 1)
	go func() {
		_, err := newSession(rcv, "tcp", tr).receive(out, nil)
		rcv.Close()
		rErr <- err
	}()
	frame := make([]byte, 4+1000)
	binary.BigEndian.PutUint32(frame, 1000)
	for range 3 {
		if _, err := snd.Write(frame); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for { // the receiver has written all 3000 bytes to the temporary file
		names := dirNames(t, dir)
		if len(names) != 1 || !isTempName(names[0], "cut.bin") {
			t.Fatalf("mid-transfer dir holds %q, want only a temporary file", names)
		}
		if st, err := os.Stat(filepath.Join(dir, names[0])); err == nil && st.Size() == 3000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the receiver did not write the data")
		}
		time.Sleep(5 * time.Millisecond)
	}
	snd.Close() // the sender dies
	if err := <-rErr; err == nil {
		t.Fatal("receive succeeded after the sender died")
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Errorf("aborted transfer left %q", names)
	}
}

func TestFileSinkForce(t *testing.T) {
	dir := t.TempDir()
	final := filepath.Join(dir, "x.bin")
	if err := os.WriteFile(final, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := openSink(dir, "x.bin", false, false, 0); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("existing file without force: %v", err)
	}
	// Aborted with force: the old file stays, the temporary file goes.
	s, err := openSink(dir, "x.bin", true, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Write([]byte("new data"))
	if b, _ := os.ReadFile(final); string(b) != "old" {
		t.Errorf("during the transfer the target holds %q, want the old file", b)
	}
	s.Abort()
	if names := dirNames(t, dir); !slices.Equal(names, []string{"x.bin"}) {
		t.Errorf("after Abort dir holds %q", names)
	}
	if b, _ := os.ReadFile(final); string(b) != "old" {
		t.Errorf("after Abort the target holds %q, want the old file", b)
	}
	// Committed with force: replaced.
	if s, err = openSink(dir, "x.bin", true, false, 0); err != nil {
		t.Fatal(err)
	}
	s.Write([]byte("new data"))
	if err := s.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(final); string(b) != "new data" {
		t.Errorf("after Commit the target holds %q", b)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"x.bin"}) {
		t.Errorf("after Commit dir holds %q", names)
	}
}

// TestFileSinkTargetAppears: without force, a file created under the final name during the
// transfer is kept, and the received data is discarded.
func TestFileSinkTargetAppears(t *testing.T) {
	dir := t.TempDir()
	s, err := openSink(dir, "y.bin", false, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Write([]byte("received"))
	final := filepath.Join(dir, "y.bin")
	if err := os.WriteFile(final, []byte("other"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(); err == nil || !strings.Contains(err.Error(), "appeared") {
		t.Fatalf("Commit over a new file: %v", err)
	}
	if b, _ := os.ReadFile(final); string(b) != "other" {
		t.Errorf("target holds %q, want the other writer's file", b)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"y.bin"}) {
		t.Errorf("dir holds %q", names)
	}
}

func TestFileSinkLongName(t *testing.T) {
	dir := t.TempDir()
	name := strings.Repeat("n", 250)
	s, err := openSink(dir, name, false, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if names := dirNames(t, dir); len(names) != 1 || !strings.HasPrefix(names[0], tempSuffix+"partial-") {
		t.Errorf("temporary file of a long name: %q", names)
	}
	s.Abort()
	if names := dirNames(t, dir); len(names) != 0 {
		t.Errorf("after Abort dir holds %q", names)
	}
}
