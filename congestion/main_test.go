package congestion_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the test binary if any test leaves a goroutine behind (the connection-level
// simulations start and close whole connections).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
