package nvmeof

import (
	"context"
	"fmt"
	"io"

	"github.com/goverbs/rdma/internal/unix"
)

// Namespace is one namespace of a controller: an io.ReaderAt and
// io.WriterAt over its blocks. Offsets and lengths are in bytes and must
// be whole blocks (BlockSize); nothing is read to complete a partial one.
// Its methods may be called from many goroutines at once: each command
// goes to the controller's next I/O queue.
type Namespace struct {
	c    *Controller
	info NamespaceInfo
}

var (
	_ io.ReaderAt = (*Namespace)(nil)
	_ io.WriterAt = (*Namespace)(nil)
)

// Namespace identifies namespace id and returns it for I/O.
func (c *Controller) Namespace(ctx context.Context, id uint32) (*Namespace, error) {
	info, err := c.IdentifyNamespace(ctx, id)
	if err != nil {
		return nil, err
	}
	if info.Size == 0 {
		return nil, fmt.Errorf("nvmeof: namespace %d is not active on %s (ActiveNamespaces lists those that are): %w", id, c.nqn, unix.ENOENT)
	}
	q, err := c.ioQueue()
	if err != nil {
		return nil, err
	}
	if info.BlockSize > q.dataSize {
		return nil, fmt.Errorf("nvmeof: namespace %d has %d-byte blocks, more than a command carries here (%d bytes): raise Config.MaxIOSize: %w", id, info.BlockSize, q.dataSize, ErrNotSupported)
	}
	return &Namespace{c: c, info: info}, nil
}

// Info returns what Identify Namespace said.
func (n *Namespace) Info() NamespaceInfo { return n.info }

// Size returns the namespace's size in bytes.
func (n *Namespace) Size() int64 { return int64(n.info.Size) * int64(n.info.BlockSize) }

// BlockSize returns the bytes per block.
func (n *Namespace) BlockSize() int { return n.info.BlockSize }

// ReadAt reads len(p) bytes at off, as ReadAtContext with no deadline
// beyond Config.CommandTimeout. Reading past the end gives what there is
// and io.EOF.
func (n *Namespace) ReadAt(p []byte, off int64) (int, error) {
	return n.ReadAtContext(context.Background(), p, off)
}

// WriteAt writes p at off, as WriteAtContext.
func (n *Namespace) WriteAt(p []byte, off int64) (int, error) {
	return n.WriteAtContext(context.Background(), p, off)
}

// ReadAtContext reads len(p) bytes at off, in commands of at most the
// queue's data size. It returns the bytes read before the first failure.
func (n *Namespace) ReadAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	if err := n.check("read", off, len(p)); err != nil {
		return 0, err
	}
	var eof error
	if end := n.Size(); off+int64(len(p)) > end {
		if off >= end {
			return 0, io.EOF
		}
		p, eof = p[:end-off], io.EOF
	}
	done, err := n.transfer(ctx, opRead, p, off)
	if err != nil {
		return done, err
	}
	return done, eof
}

// WriteAtContext writes p at off, in commands of at most the queue's data
// size (in the capsule when the target takes that much there). It
// returns the bytes written before the first failure; writing past the
// end writes nothing and fails.
func (n *Namespace) WriteAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	if err := n.check("write", off, len(p)); err != nil {
		return 0, err
	}
	if off+int64(len(p)) > n.Size() {
		return 0, fmt.Errorf("nvmeof: write of %d bytes at %d: namespace %d ends at %d: %w", len(p), off, n.info.ID, n.Size(), unix.EINVAL)
	}
	return n.transfer(ctx, opWrite, p, off)
}

func (n *Namespace) check(op string, off int64, length int) error {
	bs := int64(n.info.BlockSize)
	if off < 0 || off%bs != 0 || int64(length)%bs != 0 {
		return fmt.Errorf("nvmeof: %s of %d bytes at %d: offset and length must be multiples of the namespace's %d-byte blocks: %w", op, length, off, bs, unix.EINVAL)
	}
	return nil
}

func (n *Namespace) transfer(ctx context.Context, op byte, p []byte, off int64) (int, error) {
	name := "read"
	if op == opWrite {
		name = "write"
	}
	done := 0
	for done < len(p) {
		q, err := n.c.ioQueue()
		if err != nil {
			return done, err
		}
		chunk := min(len(p)-done, q.dataSize, 65536*n.info.BlockSize)
		chunk -= chunk % n.info.BlockSize // whole blocks (Namespace checked one fits)
		slba := uint64(off+int64(done)) / uint64(n.info.BlockSize)
		cmd := rwCommand(op, n.info.ID, slba, chunk/n.info.BlockSize)
		if op == opWrite {
			_, err = q.exchange(ctx, name, &cmd, p[done:done+chunk], nil)
		} else {
			_, err = q.exchange(ctx, name, &cmd, nil, p[done:done+chunk])
		}
		if err != nil {
			return done, err
		}
		done += chunk
	}
	return done, nil
}

// Flush asks the controller to make what was written durable (Flush).
func (n *Namespace) Flush(ctx context.Context) error {
	q, err := n.c.ioQueue()
	if err != nil {
		return err
	}
	cmd := flushCommand(n.info.ID)
	_, err = q.exchange(ctx, "flush", &cmd, nil, nil)
	return err
}

// WriteZeroes sets length bytes at off to zero without sending them
// (Write Zeroes), where the controller offers it (ControllerInfo.ONCS);
// elsewhere it fails with an error matching ErrNotSupported.
func (n *Namespace) WriteZeroes(ctx context.Context, off, length int64) error {
	if !n.c.info.WriteZeroes() {
		return fmt.Errorf("nvmeof: write zeroes: the controller does not offer it (ONCS %#x): write a buffer of zeroes instead: %w", n.c.info.ONCS, ErrNotSupported)
	}
	if length < 0 || length > int64(^uint(0)>>1) {
		return fmt.Errorf("nvmeof: write zeroes of %d bytes: %w", length, unix.EINVAL)
	}
	if err := n.check("write zeroes", off, int(length)); err != nil {
		return err
	}
	if off+length > n.Size() {
		return fmt.Errorf("nvmeof: write zeroes of %d bytes at %d: namespace %d ends at %d: %w", length, off, n.info.ID, n.Size(), unix.EINVAL)
	}
	bs := int64(n.info.BlockSize)
	for length > 0 {
		q, err := n.c.ioQueue()
		if err != nil {
			return err
		}
		blocks := min(length/bs, 65536)
		cmd := rwCommand(opWriteZeroes, n.info.ID, uint64(off/bs), int(blocks))
		if _, err := q.exchange(ctx, "write zeroes", &cmd, nil, nil); err != nil {
			return err
		}
		off += blocks * bs
		length -= blocks * bs
	}
	return nil
}
