//go:build unix

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive, non-blocking flock(2) on f: held by its open file, so it
// excludes other opens in this process and in other processes, and the kernel releases it
// when the process dies (a partial file of a killed server is free for the next one).
func lockFile(f *os.File) (unlock func(), ok bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, false
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) { lerr = unix.Flock(int(fd), unix.LOCK_EX|unix.LOCK_NB) }); err != nil || lerr != nil {
		return nil, false
	}
	return func() { rc.Control(func(fd uintptr) { unix.Flock(int(fd), unix.LOCK_UN) }) }, true
}
