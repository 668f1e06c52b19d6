//go:build linux

package main

import (
	"context"
	"errors"
)

func runMatrix(ctx context.Context, o *options) (int, error) {
	return 1, errors.New("matrix: not built yet")
}
