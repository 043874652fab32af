// Package procid identifies a process across pid reuse: its pid together
// with its start time. Runners record it for what they leave on disk
// (sandboxes, job directories), so that a later runner can tell what a
// dead runner left behind from what a live one is using.
package procid

import (
	"os"
	"strconv"
	"strings"
)

// Start is process pid's start time in clock ticks since boot (field 22 of
// /proc/PID/stat), "" when there is no such process.
func Start(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	// The command name (field 2) may hold spaces and parentheses.
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// Alive tells whether the process recorded as pid and start still runs.
func Alive(pid int, start string) bool {
	return pid > 0 && start != "" && Start(pid) == start
}
