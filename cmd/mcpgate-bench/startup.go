package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// startup measures how long a server takes to start: it runs the command
// after "--", dials the loopback address every 2 ms until it accepts, and
// prints the time, the CPU the process used until then (user+system, all
// threads) and its peak resident set (VmHWM), then stops it. Polling from
// this process, not with a curl loop, keeps the measurement's own CPU off
// the two shared cores: a fork per poll cost serve on Graph 0.2–0.5 s.
//
//	mcpgate-bench startup -addr 127.0.0.1:18480 -- mcpgate serve --addr 127.0.0.1:18480 ...
func runStartup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcpgate-bench startup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "", "the loopback address the server listens on (host:port)")
	timeout := fs.Duration("timeout", time.Minute, "give up when the server has not accepted by then")
	jsonOut := fs.Bool("json", false, "print one JSON object instead of text")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cmdArgs := fs.Args()
	if *addr == "" || len(cmdArgs) == 0 {
		return errors.New("startup: want -addr HOST:PORT -- COMMAND [ARGS...]")
	}
	if err := checkTarget("http://"+*addr+"/", false); err != nil {
		return fmt.Errorf("startup: -addr: %w", err)
	}
	cmd := exec.CommandContext(ctx, cmdArgs[0], cmdArgs[1:]...)
	cmd.Stdout, cmd.Stderr = io.Discard, stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("startup: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()
	ready, err := waitAccept(*addr, start.Add(*timeout), exited)
	if err != nil {
		return fmt.Errorf("startup: %s: %w", cmdArgs[0], err)
	}
	took := ready.Sub(start)
	cpu, err := procCPU(cmd.Process.Pid)
	if err != nil {
		return err
	}
	peak, err := peakRSS(cmd.Process.Pid)
	if err != nil {
		return err
	}
	if *jsonOut {
		_, err = fmt.Fprintf(stdout, `{"readySeconds":%.3f,"cpuSeconds":%.2f,"peakRSSBytes":%d}`+"\n", took.Seconds(), cpu.Seconds(), peak)
		return err
	}
	_, err = fmt.Fprintf(stdout, "ready %.3f s  cpu %.2f s  peak RSS %d MiB\n", took.Seconds(), cpu.Seconds(), peak>>20)
	return err
}

// waitAccept dials addr every 2 ms until it accepts, the deadline passes
// or the process exits.
func waitAccept(addr string, deadline time.Time, exited <-chan struct{}) (time.Time, error) {
	for {
		if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
			now := time.Now()
			c.Close()
			return now, nil
		}
		select {
		case <-exited:
			return time.Time{}, errors.New("exited before it accepted a connection")
		case <-time.After(2 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("did not accept on %s in time", addr)
		}
	}
}

// peakRSS is a process's peak resident set in bytes (VmHWM of
// /proc/PID/status, Linux only).
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, fmt.Errorf("read peak RSS of pid %d: %w", pid, err)
	}
	return parseVmHWM(string(b))
}

func parseVmHWM(status string) (int64, error) {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("VmHWM %q: %w", v, err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("no VmHWM in /proc status")
}
