package udpio

// OwnWrites declares that every datagram sent on the socket goes through this Conn (as when the
// caller opened the socket for it and shares it with no one). On Linux the Conn's writes then
// never wait in Go's netpoller: they pass MSG_DONTWAIT, and a full socket send buffer waits for
// room in poll(2), in slices of a few milliseconds, until there is room or the PacketConn is
// closed, so the PacketConn's write deadline no longer applies to them. That is what lets
// QuietWrites take the socket's write readiness out of the netpoller safely. Call it before the
// first write; elsewhere it does nothing.
func (c *Conn) OwnWrites() { c.b.ownWrites() }

// QuietWrites stops sends on this socket from waking the Go runtime (Linux; it reports whether
// it did). Package net registers every socket with the runtime's epoll instance for reading and
// writing, edge-triggered (runtime/netpoll_epoll.go: EPOLLIN|EPOLLOUT|EPOLLRDHUP|EPOLLET), and
// Linux signals write space each time a sent datagram's buffer is freed (net/core/sock.c,
// sock_wfree), so every send wakes the runtime thread that waits in epoll_wait whenever a
// processor is idle; that thread runs the scheduler, finds no goroutine waiting to write, and
// sleeps again. On this project's 2-vCPU development VM those wake-ups cost a paced sender 0.45–0.6×
// its CPU again (examples/pacerbench rate, README "What the Go runtime costs the sender").
//
// QuietWrites removes EPOLLOUT from the registration (EPOLL_CTL_MOD on the runtime's epoll
// instance, which it finds through /proc/self/fd and /proc/self/fdinfo, keeping the registration's
// own data), so readiness to read, errors (EPOLLERR: queued ICMP reports) and hang-ups still wake
// the netpoller. It requires OwnWrites (without it, a write waiting in the netpoller for room
// would wait for good) and fails, changing nothing, when the registration cannot be found as the
// runtime makes it (another runtime, no /proc) or the environment variable UDT_NETPOLL_WRITES is
// "1" (the escape hatch). It reads /proc, so call it off any latency-critical path (conn calls it
// when a socket first sends data). Elsewhere than Linux it returns false.
func (c *Conn) QuietWrites() bool { return c.b.quietWrites() }

func (p *portable) ownWrites()        {}
func (p *portable) quietWrites() bool { return false }
