package udpio

import (
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
)

// SocketDrops returns how many datagrams the kernel has dropped at pc's socket since it was
// created — its sk_drops counter, which for UDP counts chiefly datagrams that found the receive
// buffer full (the counter SO_RXQ_OVFL reports in a control message; read here on demand with
// getsockopt(SO_MEMINFO), Linux ≥ 3.9, so that no read needs the control message) — and the
// receive buffer's size in bytes (SO_RCVBUF as the kernel doubled it). The count is 32 bits and
// wraps. ok is false if pc is not a *net.UDPConn or the system has no such counter.
func SocketDrops(pc net.PacketConn) (drops uint32, rcvbuf int, ok bool) {
	uc, isUDP := pc.(*net.UDPConn)
	if !isUDP {
		return 0, 0, false
	}
	rc, err := uc.SyscallConn()
	if err != nil {
		return 0, 0, false
	}
	var mem [unix.SK_MEMINFO_VARS]uint32
	var errno unix.Errno
	cerr := rc.Control(func(fd uintptr) {
		l := uint32(unsafe.Sizeof(mem))
		_, _, errno = unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_MEMINFO,
			uintptr(unsafe.Pointer(&mem[0])), uintptr(unsafe.Pointer(&l)), 0)
	})
	if cerr != nil || errno != 0 {
		return 0, 0, false
	}
	return mem[unix.SK_MEMINFO_DROPS], int(mem[unix.SK_MEMINFO_RCVBUF]), true
}
