//go:build !unix

package main

import (
	"os"
	"sync"
)

// lockFile, without flock(2), excludes other uploads of the same file in this process only
// (two servers sharing one -dir could mix their writes).
func lockFile(f *os.File) (unlock func(), ok bool) {
	lockedMu.Lock()
	defer lockedMu.Unlock()
	st, err := f.Stat()
	if err != nil {
		return nil, false
	}
	for _, l := range locked {
		if os.SameFile(l, st) {
			return nil, false
		}
	}
	locked = append(locked, st)
	return func() {
		lockedMu.Lock()
		defer lockedMu.Unlock()
		for i, l := range locked {
			if l == st {
				locked = append(locked[:i], locked[i+1:]...)
				return
			}
		}
	}, true
}

var (
	lockedMu sync.Mutex
	locked   []os.FileInfo
)
