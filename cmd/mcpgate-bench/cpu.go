package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of utime/stime in /proc/PID/stat: USER_HZ, which Linux
// fixes at 100 for user space on every architecture Go supports.
const userHZ = 100

// pidFlags collects repeated -pid [NAME=]PID flags: processes whose CPU time
// the harness reports per request.
type pidFlags []namedPID

type namedPID struct {
	name string
	pid  int
}

func (p *pidFlags) String() string {
	var parts []string
	for _, np := range *p {
		parts = append(parts, np.name+"="+strconv.Itoa(np.pid))
	}
	return strings.Join(parts, ",")
}

func (p *pidFlags) Set(s string) error {
	name, num, ok := strings.Cut(s, "=")
	if !ok {
		name, num = s, s
	}
	pid, err := strconv.Atoi(num)
	if err != nil || pid <= 0 || name == "" {
		return fmt.Errorf("-pid %q: want PID or NAME=PID", s)
	}
	*p = append(*p, namedPID{name: name, pid: pid})
	return nil
}

// procCPU returns the user+system CPU time a process (all its threads) has
// used, from /proc/PID/stat (Linux only).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("read CPU time of pid %d: %w", pid, err)
	}
	return parseProcStat(string(b))
}

// parseProcStat extracts utime+stime from the text of /proc/PID/stat. The
// command name (field 2) is in parentheses and may itself contain spaces or
// parentheses, so fields are counted after the last ')'.
func parseProcStat(s string) (time.Duration, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc stat %q", s)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("malformed /proc stat %q", s)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("malformed /proc stat times %q %q", f[11], f[12])
	}
	return time.Duration(ut+st) * time.Second / userHZ, nil
}

// cpuSnapshot reads the CPU time of every watched process.
func cpuSnapshot(pids pidFlags) ([]time.Duration, error) {
	out := make([]time.Duration, len(pids))
	for i, p := range pids {
		d, err := procCPU(p.pid)
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}

// loadAverage returns the 1-minute load average from /proc/loadavg, or 0
// where it cannot be read (the figure is informative only).
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	first, _, _ := strings.Cut(string(b), " ")
	v, err := strconv.ParseFloat(first, 64)
	if err != nil {
		return 0
	}
	return v
}
