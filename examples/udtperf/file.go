package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// checkName accepts only a plain base name: no directory part, no "." or "..", no separators,
// control characters or NUL, at most 255 bytes of valid UTF-8.
func checkName(name string) error {
	bad := name == "" || name == "." || name == ".." || len(name) > 255 || !utf8.ValidString(name) ||
		strings.ContainsAny(name, `/\`) || filepath.Base(name) != name || filepath.IsAbs(name) ||
		filepath.VolumeName(name) != ""
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			bad = true
		}
	}
	if bad {
		return fmt.Errorf("refusing file name %q: only a plain file name is allowed (no path)", name)
	}
	return nil
}

// fileSink stores a received file inside a directory opened as an os.Root (so that neither the
// name nor a symlink in the directory can lead outside it). Without -force the target name is
// created exclusively up front; with -force the data goes to a temporary name and replaces the
// target only when complete and verified. Abort removes whatever was written.
type fileSink struct {
	root *os.Root
	f    *os.File
	w    io.Writer
	name string // final name
	path string // name being written: name, or the temporary name with -force
}

// wrapFileWriter, when set (tests only), wraps the writer of every received file: it stands in
// for a full disk.
var wrapFileWriter func(io.Writer) io.Writer

func openSink(dir, name string, force bool) (*fileSink, error) {
	if dir == "" {
		return nil, errors.New("this server does not accept files (start it with -dir DIR)")
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("cannot open the server's -dir: %v", err)
	}
	s := &fileSink{root: root, name: name, path: name}
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		if st, err := root.Lstat(name); err == nil && !st.Mode().IsRegular() {
			root.Close()
			return nil, fmt.Errorf("%q exists on the server and is not a regular file", name)
		}
		var r [6]byte
		rand.Read(r[:])
		s.path = "." + name + ".udtperf-" + hex.EncodeToString(r[:])
		if len(s.path) > 255 {
			s.path = ".udtperf-" + hex.EncodeToString(r[:])
		}
	}
	f, err := root.OpenFile(s.path, flags, 0o644)
	if err != nil {
		root.Close()
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("file %q already exists on the server (start the server with -force to overwrite)", name)
		}
		return nil, fmt.Errorf("cannot create %q on the server: %v", name, err)
	}
	s.f, s.w = f, f
	if wrapFileWriter != nil {
		s.w = wrapFileWriter(f)
	}
	return s, nil
}

func (s *fileSink) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		err = fmt.Errorf("cannot write %q: %v", s.name, err)
	}
	return n, err
}

// Commit flushes the file to disk and gives it its final name.
func (s *fileSink) Commit() error {
	defer s.root.Close()
	err := s.f.Sync()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if err == nil && s.path != s.name {
		err = s.root.Rename(s.path, s.name)
	}
	if err != nil {
		s.root.Remove(s.path)
		return fmt.Errorf("cannot store %q: %v (partial file removed)", s.name, err)
	}
	return nil
}

// Abort closes and removes the partial file.
func (s *fileSink) Abort() {
	s.f.Close()
	s.root.Remove(s.path)
	s.root.Close()
}
