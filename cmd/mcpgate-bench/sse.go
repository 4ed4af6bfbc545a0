package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// errStreamEnded reports an SSE stream that ended before the wanted event.
var errStreamEnded = errors.New("event stream ended before the response")

// maxSSELine bounds one SSE line (a single data: line of a large result).
const maxSSELine = 16 << 20

// readSSE reads a text/event-stream and calls onData with the data of each
// event (multiple data: lines joined by "\n", as the SSE standard says) until
// onData returns true or an error. Comment lines (":"), event:, id: and
// retry: fields are ignored. A final event not terminated by a blank line is
// discarded, as the standard says. Lines may end in LF or CRLF; a lone CR is
// not taken as a line end (no MCP server emits one).
func readSSE(r io.Reader, onData func(data []byte) (done bool, err error)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxSSELine)
	var data []byte
	has := false
	for sc.Scan() {
		line := bytes.TrimSuffix(sc.Bytes(), []byte("\r"))
		if len(line) == 0 { // dispatch
			if has {
				done, err := onData(data)
				if err != nil || done {
					return err
				}
			}
			data, has = data[:0], false
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, found := bytes.Cut(line, []byte(":"))
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		if string(field) == "data" {
			if has {
				data = append(data, '\n')
			}
			data = append(data, value...)
			has = true
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read event stream: %w", err)
	}
	return errStreamEnded
}
