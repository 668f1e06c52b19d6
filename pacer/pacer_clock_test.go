package pacer_test

import (
	"time"

	"github.com/udtgo/udt/pacer/pacertest"
)

func newPacerClock() *pacertest.Clock { return pacertest.NewClock(time.Unix(1_000_000, 0)) }
