package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"
)

// Format writes records for a person ("text": one aligned line each) or a
// program ("json": JSON lines, the sinks' format).
func Format(w io.Writer, records []Record, format string) error {
	switch format {
	case "json":
		var buf bytes.Buffer
		if err := encodeLines(&buf, records); err != nil {
			return err
		}
		_, err := w.Write(buf.Bytes())
		return err
	case "text", "":
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "TIME\tKIND\tSUBJECT\tTOOL\tCALL\tSTATUS\tOUTCOME\tDURATION\tREPLICA")
		for i := range records {
			r := &records[i]
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
				r.Time.UTC().Format(time.RFC3339Nano), r.Kind, dash(r.Subject), dash(joinTool(r.API, r.Tool)),
				dash(joinCall(r)), dash(status(r)), r.Outcome, duration(r), dash(r.Replica))
		}
		return tw.Flush()
	}
	return fmt.Errorf("audit: format %q: want text or json", format)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func joinTool(api, tool string) string {
	if api == "" {
		return tool
	}
	return api + "/" + tool
}

func joinCall(r *Record) string {
	if r.Kind == KindTask {
		return "task " + r.TaskID
	}
	if r.Method == "" {
		return r.Path
	}
	return r.Method + " " + r.Path
}

// status is the most specific level at which the call ended.
func status(r *Record) string {
	switch {
	case r.Kind == KindTask:
		return r.TaskStatus
	case r.RPCError != nil:
		return "rpc " + strconv.Itoa(r.RPCError.Code)
	case r.RefusedBy != "":
		return "by " + r.RefusedBy
	case r.HTTPStatus != 0:
		return "http " + strconv.Itoa(r.HTTPStatus)
	}
	return ""
}

func duration(r *Record) string {
	if r.Kind == KindTask {
		return "-"
	}
	return strconv.FormatFloat(r.DurationMS, 'f', -1, 64) + "ms"
}

// ReadFile returns the records of a JSON-lines audit file (a file sink's)
// that f selects, newest first. A line that is not a record is an error
// naming the file and the line.
func ReadFile(ctx context.Context, path string, f Filter) ([]Record, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	defer file.Close()
	f = f.Normalize()
	var out []Record
	br := bufio.NewReader(file)
	for line := 1; ; line++ {
		if line%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		b, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			var r Record
			if uerr := json.Unmarshal(b, &r); uerr != nil {
				return nil, fmt.Errorf("audit: %s:%d: not an audit record: %w", path, line, uerr)
			}
			if f.Match(&r) {
				out = append(out, r)
				if len(out) > 2*f.Limit {
					out = newest(out, f.Limit)
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("audit: read %s: %w", path, err)
		}
	}
	return newest(out, f.Limit), nil
}

// newest sorts records newest first and keeps the first n.
func newest(rs []Record, n int) []Record {
	slices.SortStableFunc(rs, func(a, b Record) int { return b.Time.Compare(a.Time) })
	if len(rs) > n {
		rs = rs[:n]
	}
	return rs
}
