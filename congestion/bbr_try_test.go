package congestion_test

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/udtgo/udt/congestion"
)

func bbrSeeded(seed uint64) congestion.Factory {
	return func() congestion.Controller {
		return congestion.NewBBR(congestion.WithBBRRandSource(rand.NewPCG(seed, seed)))
	}
}

func envF(k string, d float64) float64 {
	if v, err := strconv.ParseFloat(os.Getenv(k), 64); err == nil {
		return v
	}
	return d
}

func TestBBRTry(t *testing.T) {
	if os.Getenv("BBRTRY") == "" {
		t.Skip()
	}
	sc := connScenario{Rate: int64(envF("RATE", 100e6)), RTT: time.Duration(envF("RTT", 20)) * time.Millisecond, Seed: 1,
		Loss: envF("LOSS", 0), QueueBDP: envF("QBDP", 1), Bucket: time.Duration(envF("BUCKET", 0)) * time.Millisecond,
		Flows: []connFlow{{Name: "bbr", CC: bbrSeeded(1)}}, Duration: time.Duration(envF("DUR", 10)) * time.Second}
	r := runConns(t, sc)
	logShares(t, "try", sc, r)
}

type fixedDeliv struct{ *congestion.Fixed }

func (fixedDeliv) OnDelivery(time.Time, congestion.Delivery) {}

func TestBBRTryFixed(t *testing.T) {
	if os.Getenv("BBRTRY") == "" {
		t.Skip()
	}
	sc := connScenario{Rate: 100e6, RTT: 100 * time.Millisecond, Seed: 1, Loss: envF("LOSS", 0.01), QueueBDP: 4,
		Flows: []connFlow{{Name: "fixed", CC: func() congestion.Controller { return fixedDeliv{congestion.NewFixed(int64(envF("FIXED", 90e6)))} }}}, Duration: 5 * time.Second}
	r := runConns(t, sc)
	logShares(t, "fixed", sc, r)
}
