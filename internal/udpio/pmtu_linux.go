package udpio

import (
	"net"
	"net/netip"
	"strconv"

	"golang.org/x/sys/unix"
)

// Header bytes in front of a UDP payload: IPv4 (without options) or IPv6, plus UDP.
const (
	udp4Overhead = 20 + 8
	udp6Overhead = 40 + 8
)

// setPMTUDisc sets IP_MTU_DISCOVER (and IPV6_MTU_DISCOVER on an AF_INET6 socket, whose IPv4 peers
// still follow the IPv4 option) to v4 / v6.
func (s *sysConn) setPMTUDisc(fd int, v4, v6 int) error {
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, v4); err != nil && s.family == unix.AF_INET {
		return err
	}
	if s.family == unix.AF_INET6 {
		return unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER, v6)
	}
	return nil
}

func (s *sysConn) enableDontFragment() bool {
	var err error
	cerr := s.rc.Control(func(fd uintptr) {
		err = s.setPMTUDisc(int(fd), unix.IP_PMTUDISC_DO, unix.IPV6_PMTUDISC_DO)
	})
	ok := cerr == nil && err == nil
	s.df.Store(ok)
	return ok
}

func (s *sysConn) writeFragmented(b []byte, to netip.AddrPort, mtu int) error {
	if !s.df.Load() {
		_, err := s.writeBatch([][]byte{b}, nil, to)
		return err
	}
	s.fragMu.Lock()
	defer s.fragMu.Unlock()
	v6 := s.family == unix.AF_INET6 && !to.Addr().Unmap().Is4()
	var serr error
	s.rc.Control(func(fd uintptr) {
		serr = s.setPMTUDisc(int(fd), unix.IP_PMTUDISC_DONT, unix.IPV6_PMTUDISC_DONT)
		if serr == nil && v6 {
			// IPv6 routers never fragment: fragments must fit the path, so size them here.
			unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_MTU, max(mtu, 1280))
		}
	})
	_, err := s.writeBatch([][]byte{b}, nil, to)
	s.rc.Control(func(fd uintptr) {
		if v6 {
			unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_MTU, 0)
		}
		s.setPMTUDisc(int(fd), unix.IP_PMTUDISC_DO, unix.IPV6_PMTUDISC_DO)
	})
	if serr != nil {
		return serr
	}
	return err
}

// maxDatagram reads the kernel's path MTU to `to` from a throwaway socket connected there
// (connect(2) on UDP sends nothing; IP_MTU is only defined on a connected socket, ip(7)).
func (s *sysConn) maxDatagram(to netip.AddrPort) int {
	a := to.Addr().Unmap()
	fam, level, opt, overhead := unix.AF_INET, unix.IPPROTO_IP, unix.IP_MTU, udp4Overhead
	var sa unix.Sockaddr
	if a.Is4() {
		sa = &unix.SockaddrInet4{Port: int(to.Port()), Addr: a.As4()}
	} else {
		var zone uint32
		if z := a.Zone(); z != "" {
			if v, err := strconv.ParseUint(z, 10, 32); err == nil {
				zone = uint32(v)
			} else if ifi, err := net.InterfaceByName(z); err == nil {
				zone = uint32(ifi.Index)
			}
		}
		fam, level, opt, overhead = unix.AF_INET6, unix.IPPROTO_IPV6, unix.IPV6_MTU, udp6Overhead
		sa = &unix.SockaddrInet6{Port: int(to.Port()), Addr: a.As16(), ZoneId: zone}
	}
	fd, err := unix.Socket(fam, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	defer unix.Close(fd)
	if unix.Connect(fd, sa) != nil {
		return 0
	}
	mtu, err := unix.GetsockoptInt(fd, level, opt)
	if err != nil || mtu <= overhead {
		return 0
	}
	return mtu - overhead
}
