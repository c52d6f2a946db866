package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func numCPU() int { return runtime.NumCPU() }

func goVersion() string { return runtime.Version() }

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "model name"); ok {
			return strings.TrimSpace(strings.TrimLeft(v, " \t:"))
		}
	}
	return "unknown CPU"
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat's CPU
// times: 100 on every Linux that matters (glibc's sysconf(_SC_CLK_TCK)).
const clockTicks = 100

// cpuTime is the CPU time (user + system) process pid has used so far,
// from /proc/PID/stat (fields 14 and 15, after the parenthesised name).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("CPU time of process %d: %w", pid, err)
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("CPU time of process %d: no ')' in /proc/%d/stat", pid, pid)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("CPU time of process %d: %d fields in /proc/%d/stat, want at least 15", pid, len(f)+2, pid)
	}
	var ticks int64
	for _, x := range f[11:13] { // utime, stime
		v, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("CPU time of process %d: field %q of /proc/%d/stat: %w", pid, x, pid, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// selfCPU is the CPU time this process (the load generator) has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
