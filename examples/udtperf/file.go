package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// checkName accepts only a plain base name: no directory part, no "." or "..", no separators,
// control characters or NUL, at most 255 bytes of valid UTF-8. The refusal says which rule the
// name broke.
func checkName(name string) error {
	refuse := func(why string) error {
		return fmt.Errorf("refusing file name %q: %s", name, why)
	}
	switch {
	case name == "":
		return refuse("empty")
	case name == "." || name == "..":
		return refuse("not a file name")
	case len(name) > 255:
		return refuse(fmt.Sprintf("%d bytes long, at most 255 allowed", len(name)))
	case !utf8.ValidString(name):
		return refuse("not valid UTF-8")
	case strings.ContainsAny(name, `/\`) || filepath.Base(name) != name || filepath.IsAbs(name) || filepath.VolumeName(name) != "":
		return refuse("only a plain file name is allowed, no path")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return refuse("control characters (newline, tab, NUL…) are not allowed")
		}
	}
	return nil
}

// fileSink stores a received file inside a directory opened as an os.Root (so that neither the
// name nor a symlink in the directory can lead outside it). The data goes to a hidden partial
// file next to the target, ".NAME.udtperf-partial" (partialName), which takes the final name
// only in Commit, once the transfer is complete and the SHA-256 of the whole file verified. The
// final name thus never holds a partial file, even if this process dies mid-transfer. A
// transfer that breaks off keeps the partial file (Keep), so that the client can continue it
// with -resume (the server offers its length and the SHA-256 of what it holds; the client
// continues only if its own file has the same prefix); partial files nobody continues are
// removed after -keep-partial (sweepPartials). While a transfer writes it, the partial file is
// locked (lockFile), so that two uploads of one name, in one server or in two, cannot mix. An
// existing target is refused up front unless force; without force, Commit also refuses to
// replace a target that appeared during the transfer.
type fileSink struct {
	root   *os.Root
	f      *os.File
	w      io.Writer
	name   string // final name
	part   string // partial file being written
	force  bool
	unlock func()
	offset int64     // bytes of an earlier partial upload kept (resume); 0 = from the start
	prefix hash.Hash // SHA-256 of those bytes

	keepPartial bool  // Keep keeps the partial file (the server's -keep-partial > 0)
	kept        int64 // bytes Keep kept
}

// wrapFileWriter, when set (tests only), wraps the writer of every received file: it stands in
// for a full disk.
var wrapFileWriter func(io.Writer) io.Writer

// tempSuffix marks udtperf's hidden files: ".NAME" + tempSuffix + "partial" (older udtperf:
// random hex, removed at start).
const tempSuffix = ".udtperf-"

// openSink prepares to receive name into dir. With resume, an earlier partial upload of name
// is kept if it is no longer than size (the file's size): s.offset and s.prefix describe it;
// otherwise the partial file starts empty.
func openSink(dir, name string, force, resume bool, size int64) (*fileSink, error) {
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
	s := &fileSink{root: root, name: name, part: partialName(name), force: force, prefix: sha256.New()}
	fail := func(err error) (*fileSink, error) {
		if s.f != nil {
			s.unlock()
			s.f.Close()
		}
		root.Close()
		return nil, err
	}
	if st, err := root.Lstat(s.part); err == nil && !st.Mode().IsRegular() {
		return fail(fmt.Errorf("cannot store %q: %s on the server is not a regular file", name, s.part))
	}
	f, err := root.OpenFile(s.part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fail(fmt.Errorf("cannot create %q on the server: %v", name, err))
	}
	unlock, ok := lockFile(f)
	if !ok {
		f.Close()
		return fail(fmt.Errorf("an upload of %q is already in progress on the server", name))
	}
	s.f, s.unlock = f, unlock
	if resume {
		if err := s.keepPrefix(size); err != nil {
			return fail(fmt.Errorf("cannot read the partial upload of %q on the server: %v", name, err))
		}
	}
	if err := s.restartAt(s.offset); err != nil {
		return fail(fmt.Errorf("cannot write %q on the server: %v", name, err))
	}
	return s, nil
}

// partialName is the hidden partial file of name: ".NAME.udtperf-partial", or for a name too
// long for that, ".udtperf-partial-" and a digest of the name.
func partialName(name string) string {
	p := "." + name + tempSuffix + "partial"
	if len(p) > 255 {
		sum := sha256.Sum256([]byte(name))
		p = tempSuffix + "partial-" + hex.EncodeToString(sum[:16])
	}
	return p
}

// keepPrefix hashes the partial file, if it is no longer than size, and keeps it as the prefix.
func (s *fileSink) keepPrefix(size int64) error {
	st, err := s.f.Stat()
	if err != nil {
		return err
	}
	if st.Size() == 0 || st.Size() > size {
		return nil
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if _, err := io.CopyN(s.prefix, s.f, st.Size()); err != nil {
		return err
	}
	s.offset = st.Size()
	return nil
}

// restartAt truncates the partial file to off bytes (the prefix kept, or 0) and positions the
// writes there.
func (s *fileSink) restartAt(off int64) error {
	if off == 0 && s.offset != 0 {
		s.offset = 0
		s.prefix.Reset()
	}
	if err := s.f.Truncate(off); err != nil {
		return err
	}
	if _, err := s.f.Seek(off, io.SeekStart); err != nil {
		return err
	}
	s.w = s.f
	if wrapFileWriter != nil {
		s.w = wrapFileWriter(s.f)
	}
	return nil
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

// Commit flushes the partial file to disk and gives it the final name; on failure it removes
// the partial file.
func (s *fileSink) Commit() error {
	defer s.root.Close()
	err := s.f.Sync()
	if err == nil {
		err = s.rename()
	}
	s.unlock()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		s.root.Remove(s.part)
		return fmt.Errorf("cannot store %q: %v (received data discarded)", s.name, err)
	}
	return nil
}

// rename moves the partial file onto the final name. Without force it must not replace a file
// that appeared meanwhile: a hard link fails if the name exists; where the file system has no
// hard links, a check just before the rename has to do.
func (s *fileSink) rename() error {
	if s.force {
		return s.root.Rename(s.part, s.name)
	}
	appeared := errors.New("a file of that name appeared during the transfer (the server has no -force)")
	err := s.root.Link(s.part, s.name)
	switch {
	case err == nil:
		s.root.Remove(s.part)
		return nil
	case errors.Is(err, fs.ErrExist):
		return appeared
	}
	if _, err := s.root.Lstat(s.name); err == nil {
		return appeared
	}
	return s.root.Rename(s.part, s.name)
}

// Abort closes and removes the partial file (its data is wrong or unwanted); the final name is
// untouched.
func (s *fileSink) Abort() {
	s.root.Remove(s.part) // while locked: no other upload has opened it meanwhile
	s.unlock()
	s.f.Close()
	s.root.Close()
}

// Keep closes the partial file of a transfer that broke off, for a later -resume (until
// sweepPartials removes it), and records its size in kept; without keepPartial it aborts.
func (s *fileSink) Keep() {
	if !s.keepPartial {
		s.Abort()
		return
	}
	if st, err := s.f.Stat(); err == nil {
		s.kept = st.Size()
	}
	s.f.Sync()
	s.unlock()
	s.f.Close()
	s.root.Close()
}
