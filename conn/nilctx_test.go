package conn

import (
	"context"
	"net"
	"testing"
)

// Every function that takes a context panics on a nil one with a message that says so, as the
// net package's DialContext does (it panicked on a nil pointer deep in the handshake).
func TestNilContextPanics(t *testing.T) {
	var nilCtx context.Context
	raddr := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}
	for name, f := range map[string]func(){
		"DialContext":       func() { DialContext(nilCtx, "udp", "127.0.0.1:9", nil) },
		"DialPacketContext": func() { DialPacketContext(nilCtx, nil, raddr, nil) },
		"Rendezvous":        func() { Rendezvous(nilCtx, "udp", "127.0.0.1:0", "127.0.0.1:9", nil) },
		"RendezvousPacket":  func() { RendezvousPacket(nilCtx, nil, raddr, nil) },
		"Listener.AcceptUDT": func() {
			var l Listener
			l.AcceptUDT(nilCtx)
		},
		"Listener.DialContext": func() {
			var l Listener
			l.DialContext(nilCtx, "udp", "127.0.0.1:9")
		},
		"Listener.Rendezvous": func() {
			var l Listener
			l.Rendezvous(nilCtx, "udp", "127.0.0.1:9")
		},
		"Conn.CloseContext": func() {
			var c Conn
			c.CloseContext(nilCtx)
		},
	} {
		func() {
			defer func() {
				if r := recover(); r != "udt: nil context" {
					t.Errorf("%s(nil ctx): recovered %v, want the panic \"udt: nil context\"", name, r)
				}
			}()
			f()
		}()
	}
}
