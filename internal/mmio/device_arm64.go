package mmio

import "sync/atomic"

// LoadFromDevice32: see device_amd64.go. The acquire load orders later
// reads only within the inner-shareable domain; DMB OSHLD orders them
// after the device's writes too (udma_from_device_barrier on aarch64).
func LoadFromDevice32(p *atomic.Uint32) uint32 {
	v := p.Load()
	FromDeviceBarrier()
	return v
}
