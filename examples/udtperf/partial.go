package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// partialUpload is a partial file found in the server's -dir.
type partialUpload struct {
	file     string // the partial file's name
	name     string // the upload's name, "" if the partial file's name does not tell it
	size     int64
	modified time.Time
}

// sweepPartials removes udtperf's hidden files in dir that cannot or should no longer be
// resumed: partial uploads last written more than keep ago (all of them with keep 0) and the
// randomly named temporary files of older udtperf versions (".NAME.udtperf-" + hex), which
// a server killed mid-transfer left behind. Files that another upload holds locked are left
// alone. It returns the partial uploads kept.
func sweepPartials(dir string, keep time.Duration, now time.Time) (kept []partialUpload, removed []string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil
	}
	for _, e := range entries {
		p, ok := parsePartial(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		st, err := e.Info()
		if err != nil {
			continue
		}
		p.size, p.modified = st.Size(), st.ModTime()
		legacy := !strings.Contains(p.file, tempSuffix+"partial")
		if !legacy && now.Sub(p.modified) < keep {
			kept = append(kept, p)
			continue
		}
		if removeUnlocked(filepath.Join(dir, p.file)) {
			removed = append(removed, p.file)
		}
	}
	return kept, removed
}

// parsePartial recognises udtperf's hidden files: ".NAME.udtperf-partial", ".udtperf-partial-"
// + digest (long names), and older versions' ".NAME.udtperf-" + hex and "udtperf-" + hex.
func parsePartial(file string) (partialUpload, bool) {
	p := partialUpload{file: file}
	if name, ok := strings.CutPrefix(file, "."); ok {
		if name, ok := strings.CutSuffix(name, tempSuffix+"partial"); ok && name != "" {
			p.name = name
			return p, true
		}
		if i := strings.LastIndex(name, tempSuffix); i > 0 && isHex(name[i+len(tempSuffix):], 12) {
			p.name = name[:i]
			return p, true
		}
	}
	rest, ok := strings.CutPrefix(file, tempSuffix)
	if !ok {
		rest, ok = strings.CutPrefix(file, tempSuffix[1:])
	}
	if ok {
		if digest, ok := strings.CutPrefix(rest, "partial-"); ok {
			return p, isHex(digest, 32)
		}
		return p, isHex(rest, 12)
	}
	return p, false
}

// isHex reports whether s is n lower-case hex digits (udtperf's random and digest suffixes).
func isHex(s string, n int) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return len(s) == n
}

// removeUnlocked removes path unless another upload holds it locked.
func removeUnlocked(path string) bool {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	unlock, ok := lockFile(f)
	if !ok {
		return false
	}
	defer unlock()
	return os.Remove(path) == nil
}

// reportPartials tells the operator, at start, what the sweep did and which uploads can be
// continued.
func reportPartials(w io.Writer, kept []partialUpload, removed []string, keep time.Duration) {
	if len(removed) > 0 {
		fmt.Fprintf(w, "udtperf: removed %d stale partial upload file(s) from -dir: %s\n", len(removed), strings.Join(removed, ", "))
	}
	for _, p := range kept {
		name := p.name
		if name == "" {
			name = p.file
		}
		fmt.Fprintf(w, "udtperf: -dir holds a partial upload of %q (%d bytes, %s): `udtperf client -file %s -resume` continues it; removed after %v (-keep-partial)\n",
			name, p.size, p.modified.Format(time.RFC3339), name, keep)
	}
}
