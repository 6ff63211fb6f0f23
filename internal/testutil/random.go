package testutil

import (
	"encoding/binary"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

var randomCalls atomic.Uint64

// RandomBytes returns n pseudo-random bytes, made by Go code that the
// runtime can preempt. crypto/rand is not for large test data: on Linux
// from 6.11 Go fills the buffer through the vDSO's getrandom in one call
// (up to 32 MiB), which the runtime cannot preempt, so a garbage
// collection that stops the world waits for it and every goroutine stops
// meanwhile. Under the lab's emulation 32 MiB took from 0.5 s to 17 s in
// one guest on 6.12, long enough for the kernel's NVMe target to expire a
// controller whose Keep Alive stopped with it (docs/testing.md §4).
func RandomBytes(n int) []byte {
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], uint64(time.Now().UnixNano()))
	binary.LittleEndian.PutUint64(seed[8:], randomCalls.Add(1))
	b := make([]byte, n)
	rand.NewChaCha8(seed).Read(b)
	return b
}
