//go:build !linux

package udpio

import "net"

// newSys returns nil: batched system calls are Linux-only, other systems use the portable path.
func newSys(*net.UDPConn, options) batcher { return nil }
