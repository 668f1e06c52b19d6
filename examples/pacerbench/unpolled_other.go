//go:build !linux

package main

import (
	"errors"
	"net/netip"
)

// unpolledSender is Linux's diagnostic socket (unpolled_linux.go); elsewhere -unpolled fails.
type unpolledSender struct{}

func newUnpolledSender(netip.AddrPort) (*unpolledSender, error) {
	return nil, errors.New("-unpolled: only on Linux")
}

func (*unpolledSender) send([]byte, int) {}
func (*unpolledSender) Close() error     { return nil }
