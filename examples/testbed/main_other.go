//go:build !linux

package main

import "errors"

// run is Linux-only: network namespaces, veth, tbf, nftables and TUN are.
func run(*options) (int, error) {
	return 1, errors.New("needs Linux (network namespaces, tbf, nftables, TUN)")
}

const delayLineCmd = "__delayline"

func delayLineMain([]string) int { return 1 }
