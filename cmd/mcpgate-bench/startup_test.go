package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// startupChildEnv makes the test binary a stand-in server for TestStartup:
// it waits, holds some memory, then listens on the address the variable
// names ("exit" exits at once instead).
const startupChildEnv = "MCPGATE_BENCH_STARTUP_CHILD"

// startupChild is the stand-in server's life; it never returns.
func startupChild(addr string) {
	if addr == "exit" {
		os.Exit(3)
	}
	time.Sleep(150 * time.Millisecond)
	held := make([]byte, 48<<20)
	for i := range held {
		held[i] = byte(i)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		os.Exit(2)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(int(held[0]))
		}
		c.Close()
	}
}

// TestMain runs the stand-in server when this binary is started as one.
func TestMain(m *testing.M) {
	if addr := os.Getenv(startupChildEnv); addr != "" {
		startupChild(addr)
	}
	os.Exit(m.Run())
}

func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestStartup(t *testing.T) {
	addr := freeLoopbackAddr(t)
	t.Setenv(startupChildEnv, addr)
	var out, errOut bytes.Buffer
	if err := run(t.Context(), []string{"startup", "-json", "-addr", addr, "--", os.Args[0], "-test.run=^$"}, &out, &errOut); err != nil {
		t.Fatalf("startup: %v (%s)", err, errOut.String())
	}
	var got struct {
		ReadySeconds float64 `json:"readySeconds"`
		CPUSeconds   float64 `json:"cpuSeconds"`
		PeakRSSBytes int64   `json:"peakRSSBytes"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%s: %v", out.String(), err)
	}
	if got.ReadySeconds < 0.15 || got.ReadySeconds > 30 || got.PeakRSSBytes < 48<<20 || got.CPUSeconds < 0 {
		t.Errorf("ready %.3f s (want ≥ 0.15), cpu %.2f s, peak %d bytes (want ≥ 48 MiB)", got.ReadySeconds, got.CPUSeconds, got.PeakRSSBytes)
	}
}

func TestStartupErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  string
		want string
	}{
		{"no address", []string{"startup", "--", "true"}, "", "want -addr"},
		{"no command", []string{"startup", "-addr", "127.0.0.1:1"}, "", "want -addr"},
		{"not loopback", []string{"startup", "-addr", "192.0.2.1:80", "--", "true"}, "", "not a loopback"},
		{"exits first", []string{"startup", "-addr", "", "--", os.Args[0], "-test.run=^$"}, "exit", "exited before"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.env != "" {
				t.Setenv(startupChildEnv, tc.env)
				args = append([]string{}, args...)
				args[2] = freeLoopbackAddr(t)
			}
			var out, errOut bytes.Buffer
			err := run(t.Context(), args, &out, &errOut)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestParseVmHWM(t *testing.T) {
	got, err := parseVmHWM("Name:\tx\nVmPeak:\t  9000 kB\nVmHWM:\t  2048 kB\nVmRSS:\t 1024 kB\n")
	if err != nil || got != 2048<<10 {
		t.Errorf("got %d, %v; want %d", got, err, 2048<<10)
	}
	if _, err := parseVmHWM("Name:\tx\n"); err == nil {
		t.Error("a status without VmHWM was accepted")
	}
}
