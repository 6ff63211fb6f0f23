package testutil

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// HangReport describes what a hung lab test left behind, for its failure
// message: every goroutine of the test process (where our programs run),
// the kernel stacks of the given processes (the C tools, whose threads
// block in the kernel: /proc/PID/task/TID/stack, readable by root), and
// the RDMA and TCP state of the guest: the QPs and CM IDs (`rdma -d
// resource show`), the TCP sockets with their queues and timers (`ss
// -tnieom`: siw carries iWARP over kernel TCP sockets, which show there)
// and the end of the kernel log. A command that fails leaves its error in
// the report. It starts with the kernel's TCP sockets that hold received
// bytes nobody read, the mark of siw's unread first message
// (docs/siw.md §10).
func HangReport(pids ...int) string {
	var b strings.Builder
	if u := unreadKernelSockets(); u != "" {
		fmt.Fprintf(&b, "\n\nkernel TCP sockets holding data nobody read (siw's sockets are the kernel's; docs/siw.md §10):\n%s", u)
	}
	for _, pid := range pids {
		fmt.Fprintf(&b, "\n\nprocess %d, kernel stacks:\n%s", pid, kernelStacks(pid))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range [][]string{
		{"rdma", "-d", "resource", "show", "qp"},
		{"rdma", "resource", "show", "cm_id"},
		{"ss", "-tnieom"},
		{"sh", "-c", "dmesg | tail -n 40"},
	} {
		out, err := exec.CommandContext(ctx, c[0], c[1:]...).CombinedOutput()
		fmt.Fprintf(&b, "\n\n$ %s\n%s", strings.Join(c, " "), out)
		if err != nil {
			fmt.Fprintf(&b, "(%v)\n", err)
		}
	}
	buf := make([]byte, 4<<20)
	fmt.Fprintf(&b, "\n\ngoroutines:\n%s", buf[:runtime.Stack(buf, true)])
	return b.String()
}

func kernelStacks(pid int) string {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	if err != nil || len(tasks) == 0 {
		return "(gone)\n"
	}
	var b strings.Builder
	for _, task := range tasks {
		comm, _ := os.ReadFile(filepath.Join(task, "comm"))
		stack, err := os.ReadFile(filepath.Join(task, "stack"))
		if err != nil {
			stack = []byte(err.Error() + "\n")
		}
		fmt.Fprintf(&b, "thread %s (%s):\n%s", filepath.Base(task), strings.TrimSpace(string(comm)), stack)
	}
	return b.String()
}

// unreadKernelSockets lists the IPv4 TCP sockets of no process (inode 0 in
// /proc/net/tcp: the kernel's own, such as siw's) whose receive queue is
// not empty, one "local -> remote: N bytes" line each.
func unreadKernelSockets() string {
	raw, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, line := range strings.Split(string(raw), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 10 || f[9] != "0" {
			continue
		}
		_, rx, _ := strings.Cut(f[4], ":")
		n, err := strconv.ParseUint(rx, 16, 32)
		if err != nil || n == 0 {
			continue
		}
		fmt.Fprintf(&b, "%s -> %s: %d bytes\n", procNetAddr(f[1]), procNetAddr(f[2]), n)
	}
	return b.String()
}

// procNetAddr turns /proc/net/tcp's "0100000A:1F90" (the IPv4 address as
// the host's 32-bit word, the port) into "10.0.0.1:8080".
func procNetAddr(s string) string {
	h, p, ok := strings.Cut(s, ":")
	a, err1 := strconv.ParseUint(h, 16, 32)
	port, err2 := strconv.ParseUint(p, 16, 16)
	if !ok || err1 != nil || err2 != nil {
		return s
	}
	var ip [4]byte
	binary.NativeEndian.PutUint32(ip[:], uint32(a))
	return netip.AddrPortFrom(netip.AddrFrom4(ip), uint16(port)).String()
}
