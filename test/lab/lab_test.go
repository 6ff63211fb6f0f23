package lab

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

type cpioEntry struct {
	name         string
	mode         uint32
	rmaj, rmin   uint32
	data         []byte
	headerOffset int
}

// parseCPIO reads a newc archive the way the kernel's initramfs unpacker
// does, checking magic and 4-byte alignment.
func parseCPIO(t *testing.T, b []byte) []cpioEntry {
	var out []cpioEntry
	off := 0
	field := func(i int) uint32 {
		v, err := strconv.ParseUint(string(b[off+6+8*i:off+14+8*i]), 16, 32)
		require.NoError(t, err)
		return uint32(v)
	}
	for {
		require.Zero(t, off%4, "header at unaligned offset %d", off)
		require.Equal(t, "070701", string(b[off:off+6]))
		e := cpioEntry{mode: field(1), rmaj: field(9), rmin: field(10), headerOffset: off}
		size, namesize := int(field(6)), int(field(11))
		nameStart := off + 110
		e.name = string(b[nameStart : nameStart+namesize-1])
		require.Zero(t, b[nameStart+namesize-1], "name not NUL-terminated")
		dataStart := (nameStart + namesize + 3) &^ 3
		e.data = b[dataStart : dataStart+size]
		off = (dataStart + size + 3) &^ 3
		if e.name == "TRAILER!!!" {
			require.Equal(t, len(b), off, "bytes after the trailer")
			return out
		}
		out = append(out, e)
	}
}

func TestCPIO(t *testing.T) {
	var buf bytes.Buffer
	w := &cpioWriter{w: &buf}
	w.Dir("dev", 0o755)
	w.CharDev("dev/console", 0o600, 5, 1)
	w.File("init", 0o755, []byte("12345"))
	w.File("modules/a.ko", 0o644, []byte("abcdefgh"))
	w.File("empty", 0o644, nil)
	require.NoError(t, w.Close())

	got := parseCPIO(t, buf.Bytes())
	require.Len(t, got, 5)
	require.Equal(t, "dev", got[0].name)
	require.Equal(t, uint32(0o040755), got[0].mode)
	require.Equal(t, "dev/console", got[1].name)
	require.Equal(t, uint32(0o020600), got[1].mode)
	require.Equal(t, [2]uint32{5, 1}, [2]uint32{got[1].rmaj, got[1].rmin})
	require.Equal(t, "init", got[2].name)
	require.Equal(t, uint32(0o100755), got[2].mode)
	require.Equal(t, "12345", string(got[2].data))
	require.Equal(t, "abcdefgh", string(got[3].data))
	require.Empty(t, got[4].data)
}

func TestModName(t *testing.T) {
	require.Equal(t, "rdma_rxe", modName("kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko.xz"))
	require.Equal(t, "crc32_generic", modName("crc32-generic.ko"))
	require.Equal(t, "9p", modName("/x/9p.ko"))
}

func TestModinfo(t *testing.T) {
	_, err := modinfo([]byte("not an ELF file"))
	require.Error(t, err)
}

func TestExtractVmlinuxRejects(t *testing.T) {
	_, err := extractVmlinux(make([]byte, 4096))
	require.ErrorContains(t, err, "not a bzImage")
	require.False(t, hasPVHNote([]byte("\x7fELF garbage")))
}

func TestQemuEscape(t *testing.T) {
	require.Equal(t, "/tmp/a,,b", qemuEscape("/tmp/a,b"))
}

func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	s := &frameSender{w: &buf}
	require.NoError(t, s.send(frameStdout, []byte("hello")))
	require.NoError(t, s.sendJSON(frameExit, exitStatus{Code: 7}))
	require.NoError(t, s.send(frameAck, nil))
	f, err := readFrame(&buf)
	require.NoError(t, err)
	require.Equal(t, frame{frameStdout, []byte("hello")}, f)
	f, err = readFrame(&buf)
	require.NoError(t, err)
	require.Equal(t, byte(frameExit), f.typ)
	require.JSONEq(t, `{"Code":7}`, string(f.body))
	f, err = readFrame(&buf)
	require.NoError(t, err)
	require.Equal(t, byte(frameAck), f.typ)
	require.Empty(t, f.body)
	require.Error(t, s.send(frameStdout, make([]byte, maxFrame+1)))
}
