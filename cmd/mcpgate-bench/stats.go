package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// errKind classifies a failed request. okKind is a success.
type errKind int

const (
	okKind        errKind = iota
	errTransport          // connection failure, timeout, unreadable body
	errHTTPStatus         // unexpected HTTP status
	errProtocol           // reply is not a well-formed JSON-RPC response for our id
	errJSONRPC            // JSON-RPC error response
	errTool               // tools/call result with isError: true
	numKinds
)

func (k errKind) String() string {
	switch k {
	case okKind:
		return "ok"
	case errTransport:
		return "transport"
	case errHTTPStatus:
		return "http"
	case errProtocol:
		return "protocol"
	case errJSONRPC:
		return "jsonrpc"
	case errTool:
		return "tool"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// summary is the outcome of one measured run.
type summary struct {
	Label    string           `json:"label,omitempty"`
	Round    int              `json:"round,omitempty"`
	URL      string           `json:"url"`
	Mode     string           `json:"mode"`
	Proto    string           `json:"proto,omitempty"`
	Tool     string           `json:"tool,omitempty"`
	Clients  int              `json:"clients"`
	Requests int64            `json:"requests"`
	Errors   int64            `json:"errors"`
	ByKind   map[string]int64 `json:"errorKinds,omitempty"`
	Seconds  float64          `json:"seconds"`
	RPS      float64          `json:"rps"`
	P50ms    float64          `json:"p50_ms"`
	P90ms    float64          `json:"p90_ms"`
	P99ms    float64          `json:"p99_ms"`
	MaxMs    float64          `json:"max_ms"`
	MeanMs   float64          `json:"mean_ms"`
	// CPUPerReq is the CPU time (user+system, µs) each -pid process used per
	// measured request.
	CPUPerReq map[string]float64 `json:"cpuUsPerReq,omitempty"`
	// AllocsPerReq and BytesPerReq are the heap allocations (objects,
	// bytes) each -metrics process made per measured request, GCPerSec its
	// collections per second of the measured phase.
	AllocsPerReq map[string]float64 `json:"allocsPerReq,omitempty"`
	BytesPerReq  map[string]float64 `json:"bytesPerReq,omitempty"`
	GCPerSec     map[string]float64 `json:"gcPerSec,omitempty"`
	// Load1 is the machine's 1-minute load average when the run ended (0
	// where /proc/loadavg is not readable).
	Load1 float64 `json:"load1,omitempty"`
	// FirstErrors holds the first error seen of each kind, for diagnosis.
	FirstErrors map[string]string `json:"firstErrors,omitempty"`
}

// latencySummary is the distribution of the successful requests' latencies.
type latencySummary struct {
	N                   int
	Mean, P50, P90, P99 time.Duration
	Max                 time.Duration
}

// summarize sorts lat in place and returns its distribution. Percentiles use
// the nearest-rank method: pX is the smallest value with at least X% of the
// samples at or below it.
func summarize(lat []time.Duration) latencySummary {
	if len(lat) == 0 {
		return latencySummary{}
	}
	slices.Sort(lat)
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	return latencySummary{
		N:    len(lat),
		Mean: sum / time.Duration(len(lat)),
		P50:  percentile(lat, 50),
		P90:  percentile(lat, 90),
		P99:  percentile(lat, 99),
		Max:  lat[len(lat)-1],
	}
}

// percentile returns the nearest-rank p-th percentile of sorted, non-empty s.
func percentile(sorted []time.Duration, p float64) time.Duration {
	// rank = ceil(p/100 * n), 1-based.
	n := len(sorted)
	rank := int(p / 100 * float64(n))
	if float64(rank) < p/100*float64(n) {
		rank++
	}
	rank = max(1, min(rank, n))
	return sorted[rank-1]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// newSummary combines the counts, latencies and wall time of a run.
func newSummary(cfg *config, counts [numKinds]int64, lat []time.Duration, elapsed time.Duration) summary {
	s := summary{Label: cfg.label, Round: cfg.round, URL: cfg.url, Mode: cfg.mode, Clients: cfg.c, Seconds: elapsed.Seconds()}
	if cfg.mode == "mcp" {
		s.Proto, s.Tool = cfg.proto, cfg.tool
	}
	for k := errKind(0); k < numKinds; k++ {
		s.Requests += counts[k]
		if k != okKind && counts[k] > 0 {
			if s.ByKind == nil {
				s.ByKind = map[string]int64{}
			}
			s.ByKind[k.String()] = counts[k]
			s.Errors += counts[k]
		}
	}
	if elapsed > 0 {
		s.RPS = float64(s.Requests) / elapsed.Seconds()
	}
	ls := summarize(lat)
	s.P50ms, s.P90ms, s.P99ms, s.MaxMs, s.MeanMs = ms(ls.P50), ms(ls.P90), ms(ls.P99), ms(ls.Max), ms(ls.Mean)
	return s
}

// print writes the summary for humans, or as one JSON line.
func (s summary) print(w io.Writer, asJSON bool) error {
	if asJSON {
		b, err := json.Marshal(s)
		if err != nil {
			return fmt.Errorf("encode summary: %w", err)
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	target := s.Mode
	if s.Mode == "mcp" {
		target = fmt.Sprintf("mcp %s tools/call %s", s.Proto, s.Tool)
	}
	_, err := fmt.Fprintf(w, "target    %s (%s)\n"+
		"clients   %d, %.2fs\n"+
		"requests  %d\n"+
		"errors    %d %v\n"+
		"rps       %.1f\n"+
		"latency   p50 %.3fms  p90 %.3fms  p99 %.3fms  max %.3fms  mean %.3fms (successful requests)\n",
		s.URL, target, s.Clients, s.Seconds, s.Requests, s.Errors, s.ByKind, s.RPS,
		s.P50ms, s.P90ms, s.P99ms, s.MaxMs, s.MeanMs)
	if err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	for _, line := range []struct {
		title, format string
		values        map[string]float64
	}{
		{"cpu/req  ", "%s %.1fµs", s.CPUPerReq},
		{"allocs/req", "%s %.0f", s.AllocsPerReq},
		{"bytes/req", "%s %.0f", s.BytesPerReq},
		{"gc/s     ", "%s %.1f", s.GCPerSec},
	} {
		if err := printPerName(w, line.title, line.format, line.values); err != nil {
			return err
		}
	}
	for k, e := range s.FirstErrors {
		if _, err := fmt.Fprintf(w, "first %s error: %s\n", k, e); err != nil {
			return fmt.Errorf("write summary: %w", err)
		}
	}
	return nil
}

// printPerName writes one line of per-process figures, in name order; none
// when there are no figures.
func printPerName(w io.Writer, title, format string, values map[string]float64) error {
	if len(values) == 0 {
		return nil
	}
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf(format, n, values[n])
	}
	if _, err := fmt.Fprintf(w, "%s %s\n", title, strings.Join(parts, "  ")); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}
