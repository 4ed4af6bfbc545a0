package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
)

// The report reads the -json summaries of many runs, each labelled with its
// target (-label) and round (-round), and prints, per target and client
// count, the median of every figure over the rounds and, against a base
// target, the median and the spread (min–max) of the per-round ratios: a
// ratio is taken between two runs of the same round, which ran seconds
// apart, so a slow spell of a shared machine hits both sides of it.

// cellKey is one target at one client count.
type cellKey struct {
	label   string
	clients int
}

// reportData is the runs grouped by cell, cells in the order first seen.
type reportData struct {
	order []cellKey
	runs  map[cellKey][]summary
}

// readReport reads JSON summary lines; blank lines are skipped, and every
// other line must be a labelled summary.
func readReport(r io.Reader, name string) (*reportData, error) {
	d := &reportData{runs: map[cellKey][]summary{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var s summary
		if err := json.Unmarshal([]byte(text), &s); err != nil {
			return nil, fmt.Errorf("%s:%d: not a JSON summary: %w", name, line, err)
		}
		if s.Label == "" || s.Clients < 1 {
			return nil, fmt.Errorf("%s:%d: a summary without -label or clients", name, line)
		}
		k := cellKey{s.Label, s.Clients}
		if _, ok := d.runs[k]; !ok {
			d.order = append(d.order, k)
		}
		d.runs[k] = append(d.runs[k], s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return d, nil
}

// median of xs (the mean of the two middle values for an even count); 0 for
// none. xs is not modified.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// spread is the distribution of one per-round ratio of a cell.
type spread struct {
	median, min, max float64
	wins, rounds     int // rounds in which the target did better than the base
}

func (s spread) String() string {
	if s.rounds == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f (%.2f–%.2f) %d/%d", s.median, s.min, s.max, s.wins, s.rounds)
}

// ratioSpread computes, round by round, figure(target)/figure(base) for the
// rounds both ran with a positive figure. better says whether a ratio is a
// win for the target (higher rps, lower latency or CPU).
func ratioSpread(target, base []summary, figure func(summary) float64, better func(float64) bool) spread {
	byRound := map[int]float64{}
	for _, b := range base {
		if v := figure(b); v > 0 {
			byRound[b.Round] = v
		}
	}
	var ratios []float64
	var sp spread
	for _, t := range target {
		b, ok := byRound[t.Round]
		v := figure(t)
		if !ok || v <= 0 {
			continue
		}
		r := v / b
		ratios = append(ratios, r)
		if better(r) {
			sp.wins++
		}
	}
	if len(ratios) == 0 {
		return spread{}
	}
	sp.rounds = len(ratios)
	sp.median, sp.min, sp.max = median(ratios), slices.Min(ratios), slices.Max(ratios)
	return sp
}

// column is one figure of the medians table: ok is false for a run that
// does not have it (no -pid or -metrics for that process).
type column struct {
	title, format string
	get           func(summary) (v float64, ok bool)
}

// perProcess reads a figure of one named process from a summary's map.
func perProcess(m func(summary) map[string]float64, name string, scale float64) func(summary) (float64, bool) {
	return func(s summary) (float64, bool) {
		v, ok := m(s)[name]
		return v * scale, ok
	}
}

func cpuOf(s summary) map[string]float64    { return s.CPUPerReq }
func allocsOf(s summary) map[string]float64 { return s.AllocsPerReq }
func bytesOf(s summary) map[string]float64  { return s.BytesPerReq }
func gcOf(s summary) map[string]float64     { return s.GCPerSec }

var medianColumns = []column{
	{"rps", "%.0f", func(s summary) (float64, bool) { return s.RPS, true }},
	{"p50 ms", "%.3f", func(s summary) (float64, bool) { return s.P50ms, true }},
	{"p99 ms", "%.3f", func(s summary) (float64, bool) { return s.P99ms, true }},
	{"srv µs/req", "%.0f", perProcess(cpuOf, "srv", 1)},
	{"up µs/req", "%.0f", perProcess(cpuOf, "up", 1)},
	{"gen µs/req", "%.0f", perProcess(cpuOf, "harness", 1)},
	{"allocs/req", "%.0f", perProcess(allocsOf, "srv", 1)},
	{"KB/req", "%.1f", perProcess(bytesOf, "srv", 1.0/1024)},
	{"GC/s", "%.1f", perProcess(gcOf, "srv", 1)},
}

// medianCell formats the median of a column over a cell's runs, "-" when
// no run has it.
func medianCell(runs []summary, c column) string {
	var xs []float64
	for _, r := range runs {
		if v, ok := c.get(r); ok {
			xs = append(xs, v)
		}
	}
	if len(xs) == 0 {
		return "-"
	}
	return fmt.Sprintf(c.format, median(xs))
}

// The ratios of the second table, and what counts as a win for the target.
func rps(s summary) float64     { return s.RPS }
func p99(s summary) float64     { return s.P99ms }
func srvCPU(s summary) float64  { return s.CPUPerReq["srv"] }
func higher(ratio float64) bool { return ratio > 1 }
func lower(ratio float64) bool  { return ratio < 1 }

// write prints the load the runs saw, the medians and the ratios.
func (d *reportData) write(w io.Writer, base string) error {
	d.writeLoad(w)
	if err := d.writeMedians(w); err != nil {
		return err
	}
	if err := d.writeRatios(w, base); err != nil {
		return err
	}
	d.writeRounds(w, base)
	_, err := fmt.Fprintf(w, "\nsrv: the server under test (for direct: the upstream itself); up: the upstream; gen: the load\n"+
		"generator. CPU is user+system time from /proc per request; allocs/req, KB/req and GC/s come from\n"+
		"the server's Go metrics. A ratio wins when rps is higher, or p99 or CPU lower, than %s's in the\n"+
		"same round; quote a ratio as a claim only when every round supports it.\n", base)
	return err
}

func (d *reportData) writeLoad(w io.Writer) {
	var loads []float64
	for _, k := range d.order {
		for _, r := range d.runs[k] {
			if r.Load1 > 0 {
				loads = append(loads, r.Load1)
			}
		}
	}
	if len(loads) > 0 {
		fmt.Fprintf(w, "load average (1 min) at the end of each run: median %.1f, %.1f–%.1f\n",
			median(loads), slices.Min(loads), slices.Max(loads))
	}
}

func (d *reportData) writeMedians(w io.Writer) error {
	fmt.Fprint(w, "\nmedians over the rounds (errors: the sum)\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	width := d.labelWidth()
	fmt.Fprintf(tw, "%-*s\tc\trounds\terrors\t", width, "target")
	for _, c := range medianColumns {
		fmt.Fprintf(tw, "%s\t", c.title)
	}
	fmt.Fprintln(tw)
	for _, k := range d.order {
		runs := d.runs[k]
		var errs int64
		for _, r := range runs {
			errs += r.Errors
		}
		fmt.Fprintf(tw, "%-*s\t%d\t%d\t%d\t", width, k.label, k.clients, len(runs), errs)
		for _, c := range medianColumns {
			fmt.Fprintf(tw, "%s\t", medianCell(runs, c))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

func (d *reportData) writeRatios(w io.Writer, base string) error {
	fmt.Fprintf(w, "\nratio to %s in the same round: median (min–max over the rounds) rounds won/rounds\n", base)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "target\tc\trps ×\tp99 ×\tsrv cpu ×\t\n")
	for _, k := range d.order {
		b, ok := d.runs[cellKey{base, k.clients}]
		if k.label == base || !ok {
			continue
		}
		t := d.runs[k]
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t\n", k.label, k.clients,
			ratioSpread(t, b, rps, higher), ratioSpread(t, b, p99, lower), ratioSpread(t, b, srvCPU, lower))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// writeRounds lists every round's rps ratio, in round order, so that a
// drift of the machine during the run shows.
func (d *reportData) writeRounds(w io.Writer, base string) {
	fmt.Fprintf(w, "\nrps × %s, round by round\n", base)
	for _, k := range d.order {
		b, ok := d.runs[cellKey{base, k.clients}]
		if k.label == base || !ok {
			continue
		}
		baseRPS := map[int]float64{}
		for _, r := range b {
			baseRPS[r.Round] = r.RPS
		}
		runs := slices.SortedFunc(slices.Values(d.runs[k]), func(a, b summary) int { return a.Round - b.Round })
		fmt.Fprintf(w, "  %-*s c=%-3d", d.labelWidth(), k.label, k.clients)
		for _, r := range runs {
			if br := baseRPS[r.Round]; br > 0 {
				fmt.Fprintf(w, " %5.2f", r.RPS/br)
			} else {
				fmt.Fprint(w, "     -")
			}
		}
		fmt.Fprintln(w)
	}
}

// runReport is "mcpgate-bench report [-base NAME] [FILE...]": the report
// over the runs in the files (standard input when none is named).
func runReport(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcpgate-bench report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("base", "revproxy", "the target every other target is compared with")
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: mcpgate-bench report [-base NAME] [FILE...]\n\n"+
			"Reads the one-line JSON summaries of runs made with -json -label NAME -round N\n"+
			"(standard input when no file is named) and prints per target and client count the\n"+
			"medians over the rounds and the per-round ratios to the base target.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	d := &reportData{runs: map[cellKey][]summary{}}
	if fs.NArg() == 0 {
		var err error
		if d, err = readReport(stdin, "standard input"); err != nil {
			return err
		}
	}
	for _, name := range fs.Args() {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		part, err := readReport(f, name)
		f.Close()
		if err != nil {
			return err
		}
		d.merge(part)
	}
	if len(d.order) == 0 {
		return errors.New("report: no runs to report on")
	}
	return d.write(stdout, *base)
}

// labelWidth is the width of the longest target name.
func (d *reportData) labelWidth() int {
	w := len("target")
	for _, k := range d.order {
		w = max(w, len(k.label))
	}
	return w
}

// merge appends another file's runs.
func (d *reportData) merge(o *reportData) {
	for _, k := range o.order {
		if _, ok := d.runs[k]; !ok {
			d.order = append(d.order, k)
		}
		d.runs[k] = append(d.runs[k], o.runs[k]...)
	}
}
