package nvmeof

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/goverbs/rdma/internal/unix"
)

// TargetNamespace is a namespace a Target serves: blocks kept in memory
// (MemoryNamespace), in a file or block device (FileNamespace), or in any
// io.ReaderAt and io.WriterAt (NewNamespace). Set its exported fields
// before Listen; the Target reads them once. One TargetNamespace may be
// served by several subsystems and Targets at once.
type TargetNamespace struct {
	// ID is the namespace ID (NSID), 1 to 0xFFFFFFFE; 0 numbers it by its
	// place in Subsystem.Namespaces, counted from 1.
	ID uint32
	// NGUID and UUID identify the namespace to hosts, which must never see
	// two namespaces with the same ones (the kernel's host refuses a
	// namespace whose identifiers another has). Zero values are derived
	// from the subsystem's NQN and the ID, the same on every run.
	NGUID, UUID [16]byte
	// ReadOnly reports the namespace write protected (NSATTR) and fails
	// writes with "namespace is write protected".
	ReadOnly bool

	store     io.ReaderAt
	wstore    io.WriterAt
	size      int64
	blockSize int
	closer    io.Closer
	closeOnce sync.Once
	closeErr  error
}

// NamespaceStore is what a namespace's blocks are read from and written
// to. If it also has a Sync() error method (as *os.File has), Flush and
// writes with Force Unit Access call it.
type NamespaceStore interface {
	io.ReaderAt
	io.WriterAt
}

// syncer is the optional durability step of a store.
type syncer interface{ Sync() error }

// zeroer is a store that sets a range to zero itself, for Write Zeroes;
// others get blocks of zeros written.
type zeroer interface{ zeroAt(off, n int64) error }

func checkBlockSize(bs int) (int, error) {
	if bs == 0 {
		return 512, nil
	}
	if bs < 512 || bs > 4096 || bs&(bs-1) != 0 {
		return 0, fmt.Errorf("nvmeof: block size %d: give 512, 1024, 2048 or 4096 (a power of two a host's page holds): %w", bs, unix.EINVAL)
	}
	return bs, nil
}

// NewNamespace serves size bytes of store (rounded down to whole blocks)
// as a namespace of blockSize-byte blocks (0 for 512). The caller keeps
// store open for as long as a Target serves it.
func NewNamespace(store NamespaceStore, size int64, blockSize int) (*TargetNamespace, error) {
	bs, err := checkBlockSize(blockSize)
	if err != nil {
		return nil, err
	}
	if store == nil {
		return nil, fmt.Errorf("nvmeof: a namespace needs a store: %w", unix.EINVAL)
	}
	if size < int64(bs) {
		return nil, fmt.Errorf("nvmeof: a namespace of %d bytes: it needs at least one %d-byte block: %w", size, bs, unix.EINVAL)
	}
	return &TargetNamespace{store: store, wstore: store, size: size - size%int64(bs), blockSize: bs}, nil
}

// MemoryNamespace returns a namespace of size bytes kept in memory, all
// zero at first, of blockSize-byte blocks (0 for 512).
func MemoryNamespace(size int64, blockSize int) (*TargetNamespace, error) {
	bs, err := checkBlockSize(blockSize)
	if err != nil {
		return nil, err
	}
	if size < int64(bs) || size > 1<<40 {
		return nil, fmt.Errorf("nvmeof: a memory namespace of %d bytes: give at least one %d-byte block and at most 1 TiB: %w", size, bs, unix.EINVAL)
	}
	m := &memStore{b: make([]byte, size-size%int64(bs))}
	return &TargetNamespace{store: m, wstore: m, size: int64(len(m.b)), blockSize: bs}, nil
}

// FileNamespace serves the file or block device at path (opened for
// reading and writing) as a namespace of blockSize-byte blocks (0 for
// 512); its size is rounded down to whole blocks. Flush and writes with
// Force Unit Access sync the file. Close closes it.
func FileNamespace(path string, blockSize int) (*TargetNamespace, error) {
	bs, err := checkBlockSize(blockSize)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("nvmeof: namespace: %w", err)
	}
	size, err := f.Seek(0, io.SeekEnd) // a block device's size too
	if err == nil && size < int64(bs) {
		err = fmt.Errorf("%s has %d bytes, less than one %d-byte block: %w", path, size, bs, unix.EINVAL)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("nvmeof: namespace: %w", err)
	}
	return &TargetNamespace{store: f, wstore: f, size: size - size%int64(bs), blockSize: bs, closer: f}, nil
}

// Size returns the namespace's size in bytes, whole blocks.
func (ns *TargetNamespace) Size() int64 { return ns.size }

// BlockSize returns the bytes per block.
func (ns *TargetNamespace) BlockSize() int { return ns.blockSize }

// ReadAt reads the namespace's bytes as hosts see them.
func (ns *TargetNamespace) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > ns.size {
		return 0, fmt.Errorf("nvmeof: read at %d of a %d-byte namespace: %w", off, ns.size, unix.EINVAL)
	}
	n := len(p)
	var eof error
	if off+int64(n) > ns.size {
		n, eof = int(ns.size-off), io.EOF
	}
	m, err := ns.store.ReadAt(p[:n], off)
	if err == nil {
		err = eof
	}
	return m, err
}

// WriteAt writes to the namespace as a host's Write would, without a
// host; it ignores ReadOnly.
func (ns *TargetNamespace) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > ns.size {
		return 0, fmt.Errorf("nvmeof: write of %d bytes at %d: the namespace has %d: %w", len(p), off, ns.size, unix.EINVAL)
	}
	return ns.wstore.WriteAt(p, off)
}

// Close closes the file of a FileNamespace; a namespace of another kind
// holds nothing. Close the namespace after the Targets that serve it.
// Close is idempotent and safe on nil.
func (ns *TargetNamespace) Close() error {
	if ns == nil {
		return nil
	}
	ns.closeOnce.Do(func() {
		if ns.closer != nil {
			ns.closeErr = ns.closer.Close()
		}
	})
	return ns.closeErr
}

func (ns *TargetNamespace) sync() error {
	if s, ok := ns.wstore.(syncer); ok {
		return s.Sync()
	}
	return nil
}

// zeroBlock is what Write Zeroes writes to a store that cannot zero a
// range itself.
var zeroBlock [64 << 10]byte

func (ns *TargetNamespace) zero(off, n int64) error {
	if z, ok := ns.wstore.(zeroer); ok {
		return z.zeroAt(off, n)
	}
	for n > 0 {
		k := min(n, int64(len(zeroBlock)))
		if _, err := ns.wstore.WriteAt(zeroBlock[:k], off); err != nil {
			return err
		}
		off += k
		n -= k
	}
	return nil
}

// memStore is a memory namespace's bytes. Commands may overlap: the lock
// keeps each command's copy whole.
type memStore struct {
	mu sync.RWMutex
	b  []byte
}

var errOutside = errors.New("nvmeof: outside the namespace")

func (m *memStore) ReadAt(p []byte, off int64) (int, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if off < 0 || off+int64(len(p)) > int64(len(m.b)) {
		return 0, errOutside
	}
	return copy(p, m.b[off:]), nil
}

func (m *memStore) WriteAt(p []byte, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if off < 0 || off+int64(len(p)) > int64(len(m.b)) {
		return 0, errOutside
	}
	return copy(m.b[off:], p), nil
}

func (m *memStore) zeroAt(off, n int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if off < 0 || off+n > int64(len(m.b)) {
		return errOutside
	}
	clear(m.b[off : off+n])
	return nil
}
