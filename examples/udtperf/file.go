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
// name nor a symlink in the directory can lead outside it). The data goes to a temporary file
// next to the target, ".NAME.udtperf-RANDOM" (created exclusively, as os.CreateTemp does, but
// inside the root), which takes the final name only in Commit, once the transfer is complete and
// its SHA-256 verified. Abort removes it. The final name thus never holds a partial file, even
// if this process dies mid-transfer (that leaves at most the hidden temporary file). An existing
// target is refused up front unless force; without force, Commit also refuses to replace a
// target that appeared during the transfer.
type fileSink struct {
	root  *os.Root
	f     *os.File
	w     io.Writer
	name  string // final name
	tmp   string // temporary name being written
	force bool
}

// wrapFileWriter, when set (tests only), wraps the writer of every received file: it stands in
// for a full disk.
var wrapFileWriter func(io.Writer) io.Writer

// tempSuffix marks udtperf's temporary files: ".NAME" + tempSuffix + random hex.
const tempSuffix = ".udtperf-"

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
	if st, err := root.Lstat(name); err == nil {
		if !force {
			root.Close()
			return nil, existsError(name)
		}
		if !st.Mode().IsRegular() {
			root.Close()
			return nil, fmt.Errorf("%q exists on the server and is not a regular file", name)
		}
	}
	s := &fileSink{root: root, name: name, force: force}
	f, err := s.createTemp()
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("cannot create %q on the server: %v", name, err)
	}
	s.f, s.w = f, f
	if wrapFileWriter != nil {
		s.w = wrapFileWriter(f)
	}
	return s, nil
}

// createTemp creates the temporary file exclusively under a fresh random name.
func (s *fileSink) createTemp() (*os.File, error) {
	for range 10 {
		var r [6]byte
		rand.Read(r[:])
		s.tmp = "." + s.name + tempSuffix + hex.EncodeToString(r[:])
		if len(s.tmp) > 255 {
			s.tmp = tempSuffix[1:] + hex.EncodeToString(r[:])
		}
		f, err := s.root.OpenFile(s.tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, errors.New("no free temporary name")
}

func existsError(name string) error {
	return fmt.Errorf("file %q already exists on the server (start the server with -force to overwrite)", name)
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

// Commit flushes the temporary file to disk and gives it the final name; on failure it
// removes the temporary file.
func (s *fileSink) Commit() error {
	defer s.root.Close()
	err := s.f.Sync()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.rename()
	}
	if err != nil {
		s.root.Remove(s.tmp)
		return fmt.Errorf("cannot store %q: %v (received data discarded)", s.name, err)
	}
	return nil
}

// rename moves the temporary file onto the final name. Without force it must not replace a
// file that appeared meanwhile: a hard link fails if the name exists; where the file system
// has no hard links, a check just before the rename has to do.
func (s *fileSink) rename() error {
	if s.force {
		return s.root.Rename(s.tmp, s.name)
	}
	appeared := errors.New("a file of that name appeared during the transfer (the server has no -force)")
	err := s.root.Link(s.tmp, s.name)
	switch {
	case err == nil:
		s.root.Remove(s.tmp)
		return nil
	case errors.Is(err, fs.ErrExist):
		return appeared
	}
	if _, err := s.root.Lstat(s.name); err == nil {
		return appeared
	}
	return s.root.Rename(s.tmp, s.name)
}

// Abort closes and removes the temporary file; the final name is untouched.
func (s *fileSink) Abort() {
	s.f.Close()
	s.root.Remove(s.tmp)
	s.root.Close()
}
