package bench

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// Chart geometry, in SVG user units.
const (
	chartWidth, chartHeight = 900, 320
	chartLeft, chartRight   = 70, 20
	chartTop, chartBottom   = 30, 40
)

// ChartSeries is one line of a chart: Y against X.
type ChartSeries struct {
	Name  string
	Color string // any SVG colour
	X, Y  []float64
}

// groupColors keeps each actor group's colour across the charts; the p99
// line is drawn dashed in the same colour as p50.
var groupColors = map[string]string{"producers": "#1f77b4", "consumers": "#d62728", "producing consumers": "#2ca02c"}

// WriteChart writes a self-contained HTML page (inline SVG, no script, no
// network) with two charts over the run's seconds, throughput in MB/s per
// actor group and p50/p99 request latency in milliseconds (the console's
// unit) per group, and a table of each group's latency percentiles. Every
// point is also drawn as a dot, so a run under a second (one point per
// line) still shows.
func WriteChart(w io.Writer, r Report) error {
	var throughput, latency []ChartSeries
	for _, g := range r.groups() {
		if len(g.Series) == 0 {
			continue
		}
		color := groupColors[g.name]
		mb := ChartSeries{Name: g.name + " MB/s", Color: color}
		p50 := ChartSeries{Name: g.name + " p50", Color: color}
		p99 := ChartSeries{Name: g.name + " p99", Color: color}
		for _, s := range g.Series {
			x := float64(s.Second)
			mb.X, mb.Y = append(mb.X, x), append(mb.Y, s.MBPerSec)
			p50.X, p50.Y = append(p50.X, x), append(p50.Y, s.P50Us/1e3)
			p99.X, p99.Y = append(p99.X, x), append(p99.Y, s.P99Us/1e3)
		}
		throughput = append(throughput, mb)
		latency = append(latency, p50, p99)
	}
	c := r.Config
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>iggynode bench</title>\n")
	b.WriteString("<style>body{font-family:sans-serif;margin:20px}svg{background:#fff;border:1px solid #ccc}</style></head><body>\n")
	fmt.Fprintf(&b, "<h1>iggynode bench: %s</h1>\n<p>%s, %s: %s, %d batches x %d messages x %d B, started %s</p>\n",
		html.EscapeString(c.Workload), html.EscapeString(c.Address), html.EscapeString(c.Transport),
		html.EscapeString(c.ActorsText()), c.BatchCount, c.MessagesPerBatch, c.MessageSize, r.StartedAt.Format("2006-01-02 15:04:05 MST"))
	b.WriteString("<h2>Throughput</h2>\n")
	b.WriteString(SVGChart("Throughput per second", "MB/s", throughput, nil))
	b.WriteString("<h2>Latency</h2>\n")
	dashed := map[int]bool{}
	for i := range latency {
		dashed[i] = i%2 == 1
	}
	b.WriteString(SVGChart("Latency per second (p50 solid, p99 dashed)", "ms", latency, dashed))
	b.WriteString(percentileTable(r))
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// SVGChart draws the series as one <polyline> each (one point per X) on
// shared axes from 0, with a legend. dashed marks series (by index) drawn
// dashed. Non-finite values are drawn as 0.
func SVGChart(title, yUnit string, series []ChartSeries, dashed map[int]bool) string {
	maxX, maxY := 1.0, 0.0
	for _, s := range series {
		for i := range s.X {
			maxX = max(maxX, finite(s.X[i]))
			maxY = max(maxY, finite(s.Y[i]))
		}
	}
	if maxY == 0 {
		maxY = 1
	}
	maxY = niceCeil(maxY)
	plotW, plotH := float64(chartWidth-chartLeft-chartRight), float64(chartHeight-chartTop-chartBottom)
	px := func(x float64) float64 { return chartLeft + finite(x)/maxX*plotW }
	py := func(y float64) float64 { return chartTop + plotH - finite(y)/maxY*plotH }

	var b strings.Builder
	fmt.Fprintf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
		chartWidth, chartHeight, chartWidth, chartHeight)
	fmt.Fprintf(&b, "<text x=\"%d\" y=\"18\" font-size=\"14\">%s</text>\n", chartLeft, html.EscapeString(title))
	// Axes and a grid line per quarter of the Y range.
	for i := 0; i <= 4; i++ {
		v := maxY * float64(i) / 4
		y := py(v)
		fmt.Fprintf(&b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>\n", chartLeft, y, chartWidth-chartRight, y)
		fmt.Fprintf(&b, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%s</text>\n", chartLeft-5, y+4, formatTick(v))
	}
	fmt.Fprintf(&b, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#000\"/>\n", chartLeft, chartTop, chartLeft, chartHeight-chartBottom)
	fmt.Fprintf(&b, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#000\"/>\n", chartLeft, chartHeight-chartBottom, chartWidth-chartRight, chartHeight-chartBottom)
	fmt.Fprintf(&b, "<text x=\"%d\" y=\"%d\" font-size=\"11\">0</text>\n", chartLeft, chartHeight-chartBottom+14)
	fmt.Fprintf(&b, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">%s s</text>\n", chartWidth-chartRight, chartHeight-chartBottom+14, formatTick(maxX))
	fmt.Fprintf(&b, "<text x=\"12\" y=\"%d\" font-size=\"11\">%s</text>\n", chartTop-6, html.EscapeString(yUnit))
	for i, s := range series {
		var pts []string
		for j := range s.X {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.X[j]), py(s.Y[j])))
		}
		dash := ""
		if dashed[i] {
			dash = ` stroke-dasharray="6,4"`
		}
		fmt.Fprintf(&b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"%s\"><title>%s</title></polyline>\n",
			html.EscapeString(s.Color), dash, strings.Join(pts, " "), html.EscapeString(s.Name))
		for j := range s.X {
			fmt.Fprintf(&b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", px(s.X[j]), py(s.Y[j]), html.EscapeString(s.Color))
		}
		ly := chartTop + 14*i
		fmt.Fprintf(&b, "<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"%s\" text-anchor=\"end\">%s</text>\n",
			chartWidth-chartRight-5, ly+10, html.EscapeString(s.Color), html.EscapeString(s.Name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0
	}
	return v
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func formatTick(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// percentileTable is the run's latency percentiles per group, in ms.
func percentileTable(r Report) string {
	var b strings.Builder
	b.WriteString("<h2>Latency percentiles (ms)</h2>\n<table border=\"1\" cellpadding=\"4\" style=\"border-collapse:collapse\">\n")
	b.WriteString("<tr><th>group</th><th>requests</th><th>min</th><th>mean</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>p99.9</th><th>p99.99</th><th>max</th></tr>\n")
	for _, g := range r.groups() {
		if g.Actors == 0 {
			continue
		}
		l := g.Latency
		fmt.Fprintf(&b, "<tr><td>%s (%s)</td><td>%d</td>", html.EscapeString(g.name), g.latency, l.Count)
		for _, us := range []float64{l.MinUs, l.MeanUs, l.P50Us, l.P90Us, l.P95Us, l.P99Us, l.P999Us, l.P9999Us, l.MaxUs} {
			fmt.Fprintf(&b, "<td>%.3f</td>", us/1e3)
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n")
	return b.String()
}
