package h1

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// cannedResponse is what the benchmark's server answers to every request.
var cannedResponse = []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Tue, 01 Dec 2026 14:00:00 GMT\r\nContent-Length: 27\r\n\r\n{\"id\":1,\"name\":\"Rex\",\"x\":1}")

// cannedServer answers every request head (a bodiless request) with
// cannedResponse, allocating nothing per request: what
// BenchmarkRoundTrip allocates is the transport's own work.
func cannedServer(b *testing.B) string {
	return rawServer(b, func(_ int, c net.Conn) {
		defer c.Close()
		br := bufio.NewReader(c)
		end := []byte("\r\n\r\n")
		var head []byte
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			head = append(head, line...)
			if !bytes.HasSuffix(head, end) {
				continue
			}
			head = head[:0]
			if _, err := c.Write(cannedResponse); err != nil {
				return
			}
		}
	})
}

// BenchmarkRoundTrip is one GET on a kept-alive connection, its body
// read to its end, as package proxy sends it: each request has a context
// of its own with a timeout (which is part of what is measured: the
// transport watches it).
func BenchmarkRoundTrip(b *testing.B) {
	url := cannedServer(b)
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	base, err := http.NewRequest("GET", url+"/pets/1", nil)
	if err != nil {
		b.Fatal(err)
	}
	base.Header = http.Header{"Accept": {"application/json"}, "Authorization": {"Bearer demo-token"}}
	buf := make([]byte, 512)
	b.ReportAllocs()
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		resp, err := tr.RoundTrip(base.WithContext(ctx))
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for err == nil {
			var m int
			m, err = resp.Body.Read(buf[n:])
			n += m
		}
		if err != io.EOF || n != 27 {
			b.Fatal(n, err)
		}
		resp.Body.Close()
		cancel()
	}
}
