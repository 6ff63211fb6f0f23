package tutorial

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goverbs/rdma/internal/testutil"
	"github.com/goverbs/rdma/uverbs"
)

// The state machines of every protocol and mode, client against server, over
// the in-memory connection; and the faults the programs must report.

type sideResult struct {
	out []string
	err error
}

type fakeRun struct {
	client, server sideResult
	trace          string
}

// runFake runs the client and the server session of proto/mode over an
// in-memory pair. The client sends msg ("" for the geek default with pid 1;
// the server's geek message has pid 2). edit, if set, may change the
// endpoints after both sides have prepared (the server's private data is
// then in client.peerData).
func runFake(t *testing.T, proto, mode, msg string, edit func(c, s *fakeEP)) fakeRun {
	t.Helper()
	p, err := LookupProtocol(proto)
	if err != nil {
		t.Fatal(err)
	}
	m, err := p.Mode(mode)
	if err != nil {
		t.Fatal(err)
	}
	if msg == "" {
		msg = m.DefaultMessage
		if p == geekProtocol {
			msg = geekMessage(true, 1)
		}
	}
	var trace testutil.SyncBuffer
	tr := NewTrace(&trace, "test")
	var mu sync.Mutex
	var run fakeRun
	printer := func(r *sideResult) func(string, ...any) {
		return func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			r.out = append(r.out, fmt.Sprintf(format, args...))
		}
	}
	cEP, sEP := newFakePair()
	cs := m.newSession(env{client: true, mode: m.Name, message: msg, tr: tr.With("client"), out: printer(&run.client)})
	ss := m.newSession(env{mode: m.Name, message: geekMessage(false, 2), tr: tr.With("server"), out: printer(&run.server)})
	cpd, err := cs.prepare(traced{cEP, tr.With("client")})
	if err != nil {
		t.Fatalf("client prepare: %v", err)
	}
	sEP.peerData = pad(cpd, 56)
	spd, err := ss.prepare(traced{sEP, tr.With("server")})
	if err != nil {
		t.Fatalf("server prepare: %v", err)
	}
	cEP.peerData = pad(spd, 196)
	if edit != nil {
		edit(cEP, sEP)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		run.client.err = cs.run(ctx, traced{cEP, tr.With("client")})
		cEP.disconnect()
	}()
	go func() {
		defer wg.Done()
		run.server.err = ss.run(ctx, traced{sEP, tr.With("server")})
		select {
		case <-sEP.done:
		case <-time.After(2 * time.Second):
			sEP.disconnect()
		}
	}()
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("the exchange did not end\n%s", trace.String())
	}
	run.trace = trace.String()
	return run
}

func TestProtocols(t *testing.T) {
	cases := []struct {
		proto, mode, msg string
		client, server   []string
	}{
		{"geek", "write", "", []string{"remote buffer: message from passive/server side with pid 2"},
			[]string{"remote buffer: message from active/client side with pid 1"}},
		{"geek", "read", "", []string{"remote buffer: message from passive/server side with pid 2"},
			[]string{"remote buffer: message from active/client side with pid 1"}},
		{"geek", "send", "", []string{"received message: message from passive/server side with pid 2"},
			[]string{"received message: message from active/client side with pid 1"}},
		{"geek", "write", strings.Repeat("x", 1023), []string{"remote buffer: message from passive/server side with pid 2"},
			[]string{"remote buffer: " + strings.Repeat("x", 1023)}},
		{"rdma-example", "", "hello world 789", []string{"SUCCESS, source and destination buffers match"},
			[]string{"client buffer: addr=0x11000 len=15 stag=0x101", "buffer after the client's operations: hello world 789"}},
		{"roce-lab", "write", "", []string{"Client read back: 'client-wrote-this'"},
			[]string{"Server buffer after client ops: 'client-wrote-this'"}},
		{"roce-lab", "write", "hi", []string{"Client read back: 'hi'"},
			[]string{"Server buffer after client ops: 'hi'"}},
		{"roce-lab", "imm", "imm payload 42", []string{"RDMA_WRITE_WITH_IMM completed: 15 bytes, imm_data=15"},
			[]string{"imm_data=15, 15 bytes arrived: 'imm payload 42'"}},
	}
	for _, c := range cases {
		t.Run(c.proto+"_"+c.mode, func(t *testing.T) {
			r := runFake(t, c.proto, c.mode, c.msg, nil)
			for _, side := range []struct {
				name string
				got  sideResult
				want []string
			}{{"client", r.client, c.client}, {"server", r.server, c.server}} {
				if side.got.err != nil {
					t.Errorf("%s: %v\n%s", side.name, side.got.err, r.trace)
					continue
				}
				if strings.Join(side.got.out, "\n") != strings.Join(side.want, "\n") {
					t.Errorf("%s printed\n%s\nwant\n%s", side.name, strings.Join(side.got.out, "\n"), strings.Join(side.want, "\n"))
				}
			}
			for _, want := range []string{"] SLOW  MR ", "] FAST  post ", "] FAST  WC wr_id=", " status=IBV_WC_SUCCESS (success) ", "] DATA  "} {
				if !strings.Contains(r.trace, want) {
					t.Errorf("the trace has no %q:\n%s", want, r.trace)
				}
			}
		})
	}
}

// expectErr checks that side failed with an error containing want.
func expectErr(t *testing.T, side string, r sideResult, want, trace string) {
	t.Helper()
	if r.err == nil || !strings.Contains(r.err.Error(), want) {
		t.Errorf("%s: error %v, want one with %q\n%s", side, r.err, want, trace)
	}
}

func TestFaults(t *testing.T) {
	t.Run("roce-lab_bad_rkey", func(t *testing.T) {
		r := runFake(t, "roce-lab", "write", "", func(c, s *fakeEP) { c.peerData[11]++ })
		expectErr(t, "client", r.client, "RDMA WRITE failed: work completion status IBV_WC_REM_ACCESS_ERR (remote access error)", r.trace)
	})
	t.Run("roce-lab_no_private_data", func(t *testing.T) {
		r := runFake(t, "roce-lab", "imm", "", func(c, s *fakeEP) { clear(c.peerData) })
		expectErr(t, "client", r.client, "no buffer address and rkey: is the server speaking --proto roce-lab?", r.trace)
	})
	t.Run("geek_peer_gone_before_mr", func(t *testing.T) {
		// The client connects and leaves without a word.
		r := runFake(t, "geek", "write", "", func(c, s *fakeEP) { c.disconnect() })
		expectErr(t, "server", r.server, "the peer disconnected before sending its MSG_MR", r.trace)
	})
	t.Run("geek_send_flush_at_disconnect_is_normal", func(t *testing.T) {
		// The client has the server's message and disconnects before the
		// server's SEND completion is reported: that is a normal end.
		r := runFake(t, "geek", "send", "", func(c, s *fakeEP) { s.hold = map[uint64]bool{geekSendID: true} })
		if r.server.err != nil || r.client.err != nil {
			t.Fatalf("server %v, client %v\n%s", r.server.err, r.client.err, r.trace)
		}
		if len(r.server.out) != 1 || !strings.HasPrefix(r.server.out[0], "received message: message from active/client") {
			t.Errorf("the server printed %q", r.server.out)
		}
		if !strings.Contains(r.trace, "status=IBV_WC_WR_FLUSH_ERR") {
			t.Errorf("no flushed SEND in the trace:\n%s", r.trace)
		}
	})
	t.Run("geek_write_flush_of_done_is_normal", func(t *testing.T) {
		// The client has the server's MSG_DONE and disconnects before the
		// server's SEND completion is reported.
		r := runFake(t, "geek", "write", "", func(c, s *fakeEP) { s.hold = map[uint64]bool{geekDone: true} })
		if r.server.err != nil || r.client.err != nil {
			t.Fatalf("server %v, client %v\n%s", r.server.err, r.client.err, r.trace)
		}
		if len(r.server.out) != 1 || r.server.out[0] != "remote buffer: message from active/client side with pid 1" {
			t.Errorf("the server printed %q", r.server.out)
		}
		if !strings.Contains(r.trace, "WC wr_id=5 status=IBV_WC_WR_FLUSH_ERR") {
			t.Errorf("no flushed MSG_DONE in the trace:\n%s", r.trace)
		}
	})
}

// A scripted peer: what a C program, or a broken one, may send.
func TestScriptedPeers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := func(t *testing.T, proto, mode string) (peer *fakeEP, result chan error, out *[]string) {
		p, _ := LookupProtocol(proto)
		m, _ := p.Mode(mode)
		c, s := newFakePair()
		out = new([]string)
		ss := m.newSession(env{mode: m.Name, message: "srv", tr: NewTrace(nil, ""), out: func(f string, a ...any) { *out = append(*out, fmt.Sprintf(f, a...)) }})
		if _, err := ss.prepare(s); err != nil {
			t.Fatal(err)
		}
		result = make(chan error, 1)
		go func() { result <- ss.run(ctx, s) }()
		return c, result, out
	}
	send := func(t *testing.T, ep *fakeEP, b []byte) {
		r, _ := ep.Register("msg", len(b), 0)
		copy(r.Buf, b)
		if err := ep.PostSend(uverbs.SendWR{ID: 9, Op: uverbs.OpSend, Flags: uverbs.SendSignaled, SGEs: []uverbs.SGE{r.SGE(0, len(b))}}); err != nil {
			t.Fatal(err)
		}
	}
	// waitFor returns the peer's successful completion with ID id,
	// skipping others.
	waitFor := func(t *testing.T, ep *fakeEP, id uint64) uverbs.WC {
		t.Helper()
		for {
			wc, err := ep.Next(ctx)
			if err != nil || wc.Status != uverbs.WCSuccess {
				t.Fatalf("waiting for %d: %v %+v", id, err, wc)
			}
			if wc.ID == id {
				return wc
			}
		}
	}
	t.Run("geek_short_peer_buffer", func(t *testing.T) {
		peer, result, _ := start(t, "geek", "write")
		b := make([]byte, geekMsgLen)
		geekMsg{Type: geekMsgMR, MR: geekMR{Addr: 0x1000, Length: 512, RKey: 1}}.encode(b)
		send(t, peer, b)
		if err := <-result; err == nil || !strings.Contains(err.Error(), "the peer's buffer is 512 bytes, the geek exchange moves 1024") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("geek_mr_twice", func(t *testing.T) {
		// The geek C client sends its MSG_MR twice when the server's
		// arrives before its own SEND's completion (geek.go): the server
		// takes the second for the same region and still waits for
		// MSG_DONE before it reads its buffer.
		peer, result, out := start(t, "geek", "write")
		msgs, _ := peer.Register("recv", 2*geekMsgLen, uverbs.AccessLocalWrite)
		for i := range 2 {
			if err := peer.PostRecv(uverbs.RecvWR{ID: uint64(20 + i), SGEs: []uverbs.SGE{msgs.SGE(i*geekMsgLen, geekMsgLen)}}); err != nil {
				t.Fatal(err)
			}
		}
		remote, _ := peer.Register("remote", geekBufferSize, uverbs.AccessLocalWrite|uverbs.AccessRemoteWrite)
		local, _ := peer.Register("local", geekBufferSize, 0)
		copy(local.Buf, "written after the second MSG_MR")
		b := make([]byte, geekMsgLen)
		geekMsg{Type: geekMsgMR, MR: geekMR{Addr: remote.Addr, Length: geekBufferSize, RKey: remote.RKey}}.encode(b)
		send(t, peer, b)
		send(t, peer, b)
		// wait returns the next completion of id, passing over the SENDs'.
		wait := func(id uint64) uverbs.WC { t.Helper(); return waitFor(t, peer, id) }
		wait(20)
		srvMR, err := decodeGeekMsg(msgs.Buf[:geekMsgLen])
		if err != nil || srvMR.Type != geekMsgMR {
			t.Fatalf("the server's first message: %+v %v", srvMR, err)
		}
		if err := peer.PostSend(uverbs.SendWR{ID: 30, Op: uverbs.OpWrite, Flags: uverbs.SendSignaled,
			SGEs: []uverbs.SGE{local.SGE(0, geekBufferSize)}, RemoteAddr: srvMR.MR.Addr, RKey: srvMR.MR.RKey}); err != nil {
			t.Fatal(err)
		}
		wait(30)
		geekMsg{Type: geekMsgDone}.encode(b)
		send(t, peer, b)
		if err := <-result; err != nil {
			t.Fatalf("the server: %v", err)
		}
		if len(*out) != 1 || (*out)[0] != "remote buffer: written after the second MSG_MR" {
			t.Errorf("the server printed %q", *out)
		}
	})
	t.Run("geek_done_after_the_clients", func(t *testing.T) {
		// The geek C client has one receive posted when the server's
		// MSG_MR comes and posts the next when it handles it; on iWARP a
		// MSG_DONE sent sooner ends the connection. The server sends its
		// MSG_DONE only after the client's.
		peer, result, out := start(t, "geek", "write")
		msgs, _ := peer.Register("recv", 2*geekMsgLen, uverbs.AccessLocalWrite)
		recv := func(i int) {
			t.Helper()
			if err := peer.PostRecv(uverbs.RecvWR{ID: uint64(20 + i), SGEs: []uverbs.SGE{msgs.SGE(i*geekMsgLen, geekMsgLen)}}); err != nil {
				t.Fatal(err)
			}
		}
		recv(0)
		remote, _ := peer.Register("remote", geekBufferSize, uverbs.AccessLocalWrite|uverbs.AccessRemoteWrite)
		local, _ := peer.Register("local", geekBufferSize, 0)
		copy(local.Buf, "the client's")
		b := make([]byte, geekMsgLen)
		geekMsg{Type: geekMsgMR, MR: geekMR{Addr: remote.Addr, Length: geekBufferSize, RKey: remote.RKey}}.encode(b)
		send(t, peer, b)
		wait := func(id uint64) { t.Helper(); waitFor(t, peer, id) }
		wait(20)
		srvMR, _ := decodeGeekMsg(msgs.Buf[:geekMsgLen])
		if err := peer.PostSend(uverbs.SendWR{ID: 30, Op: uverbs.OpWrite, Flags: uverbs.SendSignaled,
			SGEs: []uverbs.SGE{local.SGE(0, geekBufferSize)}, RemoteAddr: srvMR.MR.Addr, RKey: srvMR.MR.RKey}); err != nil {
			t.Fatal(err)
		}
		wait(30)
		// The server has written by now; a MSG_DONE of its would wait for
		// a receive here.
		time.Sleep(200 * time.Millisecond)
		peer.f.mu.Lock()
		early := len(peer.waiting)
		peer.f.mu.Unlock()
		if early != 0 {
			t.Errorf("the server sent %d message(s) before the client's MSG_DONE", early)
		}
		recv(1)
		geekMsg{Type: geekMsgDone}.encode(b)
		send(t, peer, b)
		wait(21)
		if m, err := decodeGeekMsg(msgs.Buf[geekMsgLen:]); err != nil || m.Type != geekMsgDone {
			t.Errorf("the server's second message: %+v %v", m, err)
		}
		if err := <-result; err != nil {
			t.Fatalf("the server: %v", err)
		}
		if len(*out) != 1 || (*out)[0] != "remote buffer: the client's" {
			t.Errorf("the server printed %q", *out)
		}
	})
	t.Run("geek_wrong_size", func(t *testing.T) {
		peer, result, _ := start(t, "geek", "read")
		send(t, peer, make([]byte, 16))
		if err := <-result; err == nil || !strings.Contains(err.Error(), "received 16 bytes, a geek message is 56") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("rdma-example_huge_request", func(t *testing.T) {
		peer, result, _ := start(t, "rdma-example", "")
		b := make([]byte, rdmaExampleAttrLen)
		rdmaExampleAttr{Addr: 0x1000, Length: maxRDMAExampleLen + 1, STag: 1}.encode(b)
		send(t, peer, b)
		if err := <-result; err == nil || !strings.Contains(err.Error(), "asks for a 1048577-byte buffer; this server gives 1 to 1048576") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("roce-lab_imm_without_imm", func(t *testing.T) {
		peer, result, _ := start(t, "roce-lab", "imm")
		send(t, peer, []byte("plain send"))
		if err := <-result; err == nil || !strings.Contains(err.Error(), "the RECV completed as RECV without immediate data") {
			t.Errorf("got %v", err)
		}
	})
}
