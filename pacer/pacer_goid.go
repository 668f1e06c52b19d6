package pacer

import "runtime"

// goroutineID returns the current goroutine's id, parsed from the "goroutine N [" header of
// runtime.Stack. Go has no public API for it; the pacer needs it only on the rare path where
// Remove or Close finds a Release in progress and must tell "called from inside that Release"
// (return at once) from "called by another goroutine" (wait for it), so its ~1 µs cost is not
// on any per-packet path.
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	const prefix = "goroutine "
	if len(b) < len(prefix) || string(b[:len(prefix)]) != prefix {
		return 0
	}
	var id uint64
	for _, c := range b[len(prefix):] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}
