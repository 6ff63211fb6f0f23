//go:build !linux

package main

import "errors"

// nvmeofCmd needs the kernel's NVMe target and host (internal/nvmetest): Linux.
func nvmeofCmd([]string) error {
	return errors.New("perfbench nvmeof runs in the lab, on Linux")
}
