package proto

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	require.NoError(t, w.Send(Frame{Type: Stdout, Body: []byte("hello")}))
	require.NoError(t, w.SendJSON(Exit, 7, Status{Code: 7}))
	require.NoError(t, w.Send(Frame{Type: Ack}))
	f, err := Read(&buf)
	require.NoError(t, err)
	require.Equal(t, Frame{Type: Stdout, Body: []byte("hello")}, f)
	f, err = Read(&buf)
	require.NoError(t, err)
	require.Equal(t, Exit, f.Type)
	require.Equal(t, uint32(7), f.Chan)
	require.JSONEq(t, `{"Code":7}`, string(f.Body))
	f, err = Read(&buf)
	require.NoError(t, err)
	require.Equal(t, Frame{Type: Ack, Body: []byte{}}, f)
	_, err = Read(&buf)
	require.ErrorIs(t, err, io.EOF)
	require.Error(t, w.Send(Frame{Type: Stdout, Body: make([]byte, MaxBody+1)}))
}

// TestStream: output longer than a frame is split, in order, on its channel.
func TestStream(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	data := bytes.Repeat([]byte("0123456789"), MaxBody/5) // two frames' worth
	n, err := w.Stream(Stderr, 3).Write(data)
	require.NoError(t, err)
	require.Equal(t, len(data), n)
	var got []byte
	for buf.Len() > 0 {
		f, err := Read(&buf)
		require.NoError(t, err)
		require.Equal(t, Stderr, f.Type)
		require.Equal(t, uint32(3), f.Chan)
		require.LessOrEqual(t, len(f.Body), MaxBody)
		got = append(got, f.Body...)
	}
	require.Equal(t, data, got)
}

func TestReadRejectsHugeFrame(t *testing.T) {
	hdr := []byte{byte(Stdout), 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}
	_, err := Read(bytes.NewReader(hdr))
	require.ErrorContains(t, err, "limit")
}
