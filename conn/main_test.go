package conn

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine outlives the tests: every Listener, Conn and
// socket must end its goroutines on Close (design §6).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
