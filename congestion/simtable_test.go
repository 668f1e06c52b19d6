package congestion_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// gridTables formats a controller's grid results as markdown: a summary per bottleneck kind
// (how many cells meet each of issue 10's targets, and the worst figure), for the whole grid a
// utilisation table (rate × RTT against loss × buffer), and every cell's figures.
func gridTables(ctl simController, res map[gridCell]cellResult, runs int, steady time.Duration, full bool) string {
	var b strings.Builder
	kinds := gridKinds()
	cells := make([]gridCell, 0, len(res))
	var wall time.Duration
	for c, r := range res {
		cells = append(cells, c)
		wall += r.Wall
	}
	slices.SortFunc(cells, func(x, y gridCell) int {
		return cmpAll(x.Kind-y.Kind, int(x.Rate-y.Rate), int(x.RTT-y.RTT), sign(x.Loss-y.Loss), sign(x.Buffer-y.Buffer))
	})
	tg := issue10Targets
	fmt.Fprintf(&b, "### %s: %d cells, worst of %d run(s) each, steady state over %v after the start-up budget (10 RTT + 1 s); %v of wall clock in all\n\n",
		ctl.label(), len(cells), runs, steady, wall.Round(time.Second))
	fmt.Fprintf(&b, "| bottleneck | cells | util ≥ %.0f %% (loss ≤ 1 %%) | util ≥ %.0f %% (3 %%) | retrans ≤ loss + 1 %% | queue ≤ RTT/4 + 1 ms (buffer ≥ 1 BDP) | start-up ≤ 10 RTT + 1 s (clean) | start-up losses ≤ 1 BDP (clean) |\n",
		100*tg.Util, 100*tg.UtilLossy)
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for k, kind := range kinds {
		var n int
		var util, lossy, retx, queue, start, drops tally
		for _, c := range cells {
			if c.Kind != k {
				continue
			}
			r := res[c]
			n++
			if c.Loss <= tg.UtilLoss {
				util.add(r.Util >= tg.Util, -r.Util, pct(r.Util)+" %")
			} else {
				lossy.add(r.Util >= tg.UtilLossy, -r.Util, pct(r.Util)+" %")
			}
			retx.add(r.Retrans <= c.Loss+tg.RetxSlack, r.Retrans-c.Loss, fmt.Sprintf("%s %% at %s", pct(r.Retrans), lossName(c.Loss)))
			if c.Buffer >= 1 {
				q := r.Queue - tg.QueueAdd
				queue.add(r.Queue <= time.Duration(tg.QueueRTT*float64(c.RTT))+tg.QueueAdd, float64(q)/float64(c.RTT),
					fmt.Sprintf("%v at %v", r.Queue.Round(100*time.Microsecond), c.RTT))
			}
			if c.Loss == 0 {
				budget := c.startBudget()
				late := math.Inf(1)
				if r.Startup >= 0 {
					late = float64(r.Startup) / float64(budget)
				}
				start.add(r.Startup >= 0 && r.Startup <= budget, late, fmt.Sprintf("%s of %v", startupName(r.Startup), budget))
				drops.add(r.Drops <= tg.StartDrop, r.Drops, fmt.Sprintf("%.2f", r.Drops))
			}
		}
		if n == 0 {
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s |\n", kind.Name, n, util, lossy, retx, queue, start, drops)
	}
	b.WriteString("\nEach entry: cells meeting the target / cells it applies to (the worst figure). Bottlenecks:")
	for _, k := range kinds {
		fmt.Fprintf(&b, " %s — %s;", k.Name, k.About)
	}
	b.WriteString(" every path adds random loss before the queue.\n\n")

	if full {
		fmt.Fprintf(&b, "Steady-state utilisation, %%, of %s (columns: loss / buffer in BDP):\n\n| bottleneck | rate | RTT |", ctl.label())
		for _, l := range gridLosses {
			for _, q := range gridBuffers {
				fmt.Fprintf(&b, " %s / %g |", lossName(l), q)
			}
		}
		b.WriteString("\n|---|---|---|" + strings.Repeat("---|", len(gridLosses)*len(gridBuffers)) + "\n")
		for k, kind := range kinds {
			for _, rate := range gridRates {
				for _, rtt := range gridRTTs {
					fmt.Fprintf(&b, "| %s | %s | %v |", kind.Name, rateName(rate), rtt)
					for _, l := range gridLosses {
						for _, q := range gridBuffers {
							if r, ok := res[gridCell{Kind: k, Rate: rate, RTT: rtt, Loss: l, Buffer: q}]; ok {
								fmt.Fprintf(&b, " %s |", pct(r.Util))
							} else {
								b.WriteString(" |")
							}
						}
					}
					b.WriteString("\n")
				}
			}
		}
		b.WriteString("\n")
	}

	fmt.Fprintf(&b, "Every cell of %s:\n\n", ctl.label())
	b.WriteString("| bottleneck | rate | RTT | loss | buffer (BDP) | util % | retrans % | queue | start-up | start-up losses (BDP) | wall | misses |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range cells {
		r := res[c]
		fmt.Fprintf(&b, "| %s | %s | %v | %s | %g | %s | %.2f | %v | %s | %.2f | %v | %s |\n",
			kinds[c.Kind].Name, rateName(c.Rate), c.RTT, lossName(c.Loss), c.Buffer, pct(r.Util), 100*r.Retrans,
			r.Queue.Round(100*time.Microsecond), startupName(r.Startup), r.Drops, r.Wall.Round(100*time.Millisecond),
			strings.Join(tg.check(c, r), "; "))
	}
	b.WriteString("\n")
	return b.String()
}

// tally counts the cells meeting one target and keeps the worst figure (the largest badness).
type tally struct {
	n, ok int
	bad   float64
	worst string
}

func (t *tally) add(ok bool, badness float64, figure string) {
	if t.n == 0 || badness > t.bad {
		t.bad, t.worst = badness, figure
	}
	t.n++
	if ok {
		t.ok++
	}
}

func (t tally) String() string {
	if t.n == 0 {
		return "–"
	}
	return fmt.Sprintf("%d/%d (%s)", t.ok, t.n, t.worst)
}

func sign(x float64) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

// cmpAll returns the first non-zero comparison.
func cmpAll(cs ...int) int {
	for _, c := range cs {
		if c != 0 {
			return c
		}
	}
	return 0
}
