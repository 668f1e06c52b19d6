package main

import (
	"fmt"
	"image/color"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// saveFrontier draws rate mode's frontier into a PNG at path: per rate, one point per backend
// and tolerance at (pacing CPU, p99 departure error), both on log axes, labelled
// "backend tolerance". The cheap and precise corner is the bottom left.
func saveFrontier(path string, rows []rateRow) error {
	p := plot.New()
	p.Title.Text = "pacerbench rate: pacing CPU against departure precision"
	p.X.Label.Text = "pacing CPU (% of one core: the pacing thread, else the sender process)"
	p.Y.Label.Text = "p99 |departure − slot| (µs, departures within 1 ms)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top = true
	var rates []float64
	for _, r := range rows {
		if !slices.Contains(rates, r.TargetMbps) {
			rates = append(rates, r.TargetMbps)
		}
	}
	for i, rate := range rates {
		var pts plotter.XYs
		var labels []string
		for _, r := range rows {
			if r.TargetMbps != rate {
				continue
			}
			// Log axes cannot show 0: floor at 0.01 % of a core and 0.01 µs.
			cpu := r.ThreadCPUPct
			if cpu < 0 { // not measured: not Linux, or the goroutine moved between threads (threadCPU)
				cpu = r.PacerCPUPct
			}
			pts = append(pts, plotter.XY{X: max(cpu, 0.01), Y: max(r.ErrP99US, 0.01)})
			labels = append(labels, r.Backend+" "+tolName(r.ToleranceUS))
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return fmt.Errorf("frontier: %w", err)
		}
		sc.GlyphStyle.Color = plotutil.Color(i)
		sc.GlyphStyle.Shape = plotutil.Shape(i)
		sc.GlyphStyle.Radius = vg.Points(3)
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: pts, Labels: labels})
		if err != nil {
			return fmt.Errorf("frontier: %w", err)
		}
		for k := range lb.TextStyle {
			lb.TextStyle[k].Color = color.Gray{Y: 80}
			lb.TextStyle[k].Font.Size = vg.Points(7)
			lb.TextStyle[k].XAlign = draw.XLeft
		}
		lb.Offset = vg.Point{X: vg.Points(4), Y: vg.Points(-3)}
		p.Add(sc, lb)
		p.Legend.Add(fmt.Sprintf("%g Mbit/s", rate), sc)
	}
	p.Add(plotter.NewGrid())
	return p.Save(9*vg.Inch, 6*vg.Inch, path)
}
