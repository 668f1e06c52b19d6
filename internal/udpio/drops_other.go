//go:build !linux

package udpio

import "net"

// SocketDrops reports ok = false: the kernel's per-socket drop counter is read on Linux only.
func SocketDrops(net.PacketConn) (drops uint32, rcvbuf int, ok bool) { return 0, 0, false }
