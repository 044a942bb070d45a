package timeline

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"

	"iggynode/telemetry/spanfile"
)

// The HTML page: one self-contained file (inline CSS and SVG, no script,
// no external asset). Per group an SVG with one horizontal lane per
// replica and time on the x axis: a marker per (op, replica, step) at the
// step's first occurrence, a line per prepare sent on (sender's lane at
// forwarded to the receiver's lane at journaled) and per PrepareOk
// (backup's lane at journaled to the primary's lane at its arrival), and
// each view change, recovery, repair or transfer as a shaded band on its
// replica's lane. Every element has a <title>, which browsers show as a
// tooltip. The SVG is well-formed XML.

// Geometry of the picture, in px.
const (
	svgLeft      = 70
	svgRight     = 30
	svgTop       = 36
	svgLaneH     = 64
	svgBottom    = 24
	svgPxPerOp   = 28
	svgWidthMin  = 900
	svgWidthMax  = 20000
	svgStepDy    = 6 // steps of one replica spread down its lane in Steps order
	svgStepFirst = 12
)

// stepColors are the markers' fills, by step.
var stepColors = map[string]string{
	spanfile.EventAdmitted: "#7f7f7f", spanfile.EventPrepared: "#1f77b4", spanfile.EventJournaled: "#17becf",
	spanfile.EventForwarded: "#9467bd", spanfile.EventPrepareOK: "#ff7f0e", spanfile.EventCommitted: "#2ca02c",
	spanfile.EventApplied: "#006400", spanfile.EventReplied: "#d62728",
}

var kindColors = map[string]string{
	KindViewChange: "#d62728", KindRecovery: "#8c564b", KindRepair: "#bcbd22", KindStateTransfer: "#e377c2",
}

type svgPage struct {
	Title   string
	Clock   string
	Legend  []svgLegend
	Kinds   []svgLegend
	Groups  []svgGroup
	Skipped []string
}

type svgLegend struct{ Name, Color string }

type svgGroup struct {
	ID            uint64
	Label         string
	Summary       string
	Width, Height int
	Lanes         []svgLane
	Ticks         []svgTick
	Bands         []svgBand
	Lines         []svgLine
	Marks         []svgMark
}

type svgLane struct {
	Name string
	Y, H int
	Mid  int
}

type svgTick struct {
	X     string
	Label string
}

type svgBand struct {
	X, W, Y, H, Color, Title string
}

type svgLine struct {
	X1, Y1, X2, Y2, Class, Title string
}

type svgMark struct {
	X, Y, Color, Step, Title string
}

// WriteHTML writes m as one self-contained HTML page.
func WriteHTML(w io.Writer, m *Model, title string) error {
	p := svgPage{Title: title, Clock: "wall clock"}
	if m.Virtual {
		p.Clock = "virtual time in ms (the simulator's ticks, 10 ms each)"
	}
	for _, s := range Steps {
		p.Legend = append(p.Legend, svgLegend{s, stepColors[s]})
	}
	for _, k := range []string{KindViewChange, KindRecovery, KindRepair, KindStateTransfer} {
		p.Kinds = append(p.Kinds, svgLegend{k, kindColors[k]})
	}
	for _, g := range m.Groups {
		p.Groups = append(p.Groups, layout(g, m.T0))
	}
	for _, k := range sortedKeys(m.Skipped) {
		p.Skipped = append(p.Skipped, fmt.Sprintf("%d × %s", m.Skipped[k], k))
	}
	return pageTemplate.Execute(w, p)
}

// scale maps times of [lo, hi] onto the picture's width.
type scale struct {
	lo, hi int64
	width  int
}

func (s scale) x(t int64) float64 {
	t = max(s.lo, min(t, s.hi))
	if s.hi == s.lo {
		return svgLeft
	}
	return svgLeft + float64(t-s.lo)/float64(s.hi-s.lo)*float64(s.width)
}

func px(v float64) string { return fmt.Sprintf("%.1f", v) }

func layout(g *Group, t0 int64) svgGroup {
	lo, hi := g.Span()
	if len(g.Ops) == 0 {
		for i, iv := range g.Intervals {
			if i == 0 {
				lo, hi = iv.Start, iv.End
			}
			lo, hi = min(lo, iv.Start), max(hi, iv.End)
		}
	}
	width := max(svgWidthMin, min(svgWidthMax, len(g.Ops)*svgPxPerOp))
	sc := scale{lo: lo, hi: hi, width: width}
	sg := svgGroup{ID: g.ID, Label: g.Label(), Summary: g.Summarize().line(g.Label()), Width: svgLeft + width + svgRight,
		Height: svgTop + len(g.Replicas)*svgLaneH + svgBottom}
	lane := map[int]int{} // replica -> lane top
	for i, r := range g.Replicas {
		y := svgTop + i*svgLaneH
		lane[r] = y
		sg.Lanes = append(sg.Lanes, svgLane{Name: replicaName(r), Y: y, H: svgLaneH, Mid: y + svgLaneH/2})
	}
	sg.Ticks = axisTicks(lo, hi, t0, sc)
	for _, iv := range g.Intervals {
		x1, x2 := sc.x(iv.Start), sc.x(iv.End)
		title := fmt.Sprintf("%s on %s: %s–%s ms (%s ms), view %s, reason %s, outcome %s", iv.Kind, replicaName(iv.Replica),
			ms(iv.Start-t0), ms(iv.End-t0), ms(iv.End-iv.Start), orDash(iv.View), dash(iv.Reason), dash(iv.Outcome))
		sg.Bands = append(sg.Bands, svgBand{X: px(x1), W: px(max(x2-x1, 2)), Y: fmt.Sprint(lane[iv.Replica]), H: fmt.Sprint(svgLaneH),
			Color: kindColors[iv.Kind], Title: title})
	}
	stepY := map[string]int{}
	for i, s := range Steps {
		stepY[s] = svgStepFirst + i*svgStepDy
	}
	for _, o := range g.Ops {
		sg.Lines = append(sg.Lines, opLines(o, sc, lane, t0)...)
		for _, r := range g.Replicas {
			for _, s := range Steps {
				t, ok := o.At(r, s)
				if !ok {
					continue
				}
				sg.Marks = append(sg.Marks, svgMark{X: px(sc.x(t)), Y: fmt.Sprint(lane[r] + stepY[s]), Color: stepColors[s], Step: s,
					Title: fmt.Sprintf("op %d (view %s) %s on %s at +%s ms (%s ms)", o.Op, orDash(o.View), s, replicaName(r), ms(t-o.Start), ms(t-t0))})
			}
		}
	}
	return sg
}

// opLines draws o's prepares (sender at forwarded to receiver at
// journaled) and PrepareOks (backup at journaled to primary at arrival).
func opLines(o *Op, sc scale, lane map[int]int, t0 int64) []svgLine {
	var out []svgLine
	mid := func(r int) string { return fmt.Sprint(lane[r] + svgLaneH/2) }
	for _, h := range o.Forwards {
		arrive, ok := o.At(h.To, spanfile.EventJournaled)
		if !ok || arrive < h.At {
			arrive = h.At
		}
		out = append(out, svgLine{X1: px(sc.x(h.At)), Y1: mid(h.From), X2: px(sc.x(arrive)), Y2: mid(h.To), Class: "prepare",
			Title: fmt.Sprintf("op %d prepare %s → %s at %s ms", o.Op, replicaName(h.From), replicaName(h.To), ms(h.At-t0))})
	}
	for _, h := range o.Acks {
		sent, ok := o.At(h.From, spanfile.EventJournaled)
		if !ok || sent > h.At {
			sent = h.At
		}
		out = append(out, svgLine{X1: px(sc.x(sent)), Y1: mid(h.From), X2: px(sc.x(h.At)), Y2: mid(h.To), Class: "ack",
			Title: fmt.Sprintf("op %d prepare_ok %s → %s arrived at %s ms", o.Op, replicaName(h.From), replicaName(h.To), ms(h.At-t0))})
	}
	return out
}

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font: 13px/1.4 system-ui, sans-serif; margin: 16px; color: #222; }
h2 { font-size: 15px; margin: 20px 0 4px; }
.scroll { overflow-x: auto; border: 1px solid #ddd; }
.legend span { display: inline-block; margin-right: 12px; }
.legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; vertical-align: middle; }
svg text { font: 11px system-ui, sans-serif; fill: #444; }
svg .lane { fill: #fafafa; stroke: #e4e4e4; }
svg .prepare { stroke: #1f77b4; stroke-opacity: 0.45; }
svg .ack { stroke: #ff7f0e; stroke-opacity: 0.45; stroke-dasharray: 3 2; }
svg .band { fill-opacity: 0.18; }
svg .tick { stroke: #eee; }
</style>
</head>
<body>
<h1 style="font-size:17px">{{.Title}}</h1>
<p>Times: {{.Clock}}. Hover a marker, line or band for details.</p>
<p class="legend">Steps: {{range .Legend}}<span><i style="background:{{.Color}}"></i>{{.Name}}</span>{{end}}</p>
<p class="legend">Intervals: {{range .Kinds}}<span><i style="background:{{.Color}};opacity:0.4"></i>{{.Name}}</span>{{end}}
<span><i style="background:#1f77b4"></i>prepare</span><span><i style="background:#ff7f0e"></i>prepare_ok</span></p>
{{range .Groups}}
<h2>{{.Label}}</h2>
<p>{{.Summary}}</p>
<div class="scroll">
<svg xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}">
{{range .Lanes}}<rect class="lane" x="0" y="{{.Y}}" width="100%" height="{{.H}}"/><text x="8" y="{{.Mid}}">{{.Name}}</text>
{{end}}{{range .Ticks}}<line class="tick" x1="{{.X}}" y1="20" x2="{{.X}}" y2="100%"/><text x="{{.X}}" y="14" text-anchor="middle">{{.Label}}</text>
{{end}}{{range .Bands}}<rect class="band" x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}" fill="{{.Color}}"><title>{{.Title}}</title></rect>
{{end}}{{range .Lines}}<line class="{{.Class}}" x1="{{.X1}}" y1="{{.Y1}}" x2="{{.X2}}" y2="{{.Y2}}"><title>{{.Title}}</title></line>
{{end}}{{range .Marks}}<circle class="step {{.Step}}" cx="{{.X}}" cy="{{.Y}}" r="2.5" fill="{{.Color}}"><title>{{.Title}}</title></circle>
{{end}}</svg>
</div>
{{end}}
{{if .Skipped}}<p>Skipped: {{range .Skipped}}{{.}}; {{end}}</p>{{end}}
</body>
</html>
`))

// axisTicks puts about ten ticks on [lo, hi] at a round step in ms (1, 2
// or 5 times a power of ten), labelled from t0 with just the decimals the
// step needs, so no two ticks read the same however short the span.
func axisTicks(lo, hi, t0 int64, sc scale) []svgTick {
	span := float64(hi-lo) / 1e6 // ms
	if span <= 0 {
		return []svgTick{{X: px(sc.x(lo)), Label: ms(lo-t0) + " ms"}}
	}
	step := math.Pow(10, math.Floor(math.Log10(span/10)))
	for _, m := range []float64{1, 2, 5, 10} {
		if span/(m*step) <= 10 {
			step *= m
			break
		}
	}
	decimals := max(0, int(-math.Floor(math.Log10(step))))
	from := float64(lo-t0) / 1e6
	var out []svgTick
	last := ""
	for v := math.Ceil(from/step) * step; v <= from+span+step/1e6; v += step {
		label := strconv.FormatFloat(v, 'f', decimals, 64) + " ms"
		if label == last {
			continue
		}
		last = label
		out = append(out, svgTick{X: px(sc.x(t0 + int64(math.Round(v*1e6)))), Label: label})
	}
	return out
}
