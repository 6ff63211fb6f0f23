package uverbs_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/netip"
	"time"

	"github.com/goverbs/rdma/uverbs"
)

// Open a device by name and read its attributes and those of its port 1,
// as ibv_devinfo does.
func ExampleOpen() {
	dev, err := uverbs.Open("rxe0")
	if err != nil {
		log.Fatal(err) // errors.Is(err, uverbs.ErrNoDevice): create one with rdma-link
	}
	defer dev.Close()

	attr, err := dev.Query()
	if err != nil {
		log.Fatal(err)
	}
	port, err := dev.QueryPort(1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(dev.Name(), "node GUID", attr.NodeGUID == dev.Info().NodeGUID)
	fmt.Println("port 1", port.State, port.LinkLayer)
}

// A Close in the wrong order is refused with ErrBusy and changes nothing:
// the PD stays open and usable until what was made from it is closed.
func ExamplePD_Close() {
	dev, err := uverbs.Open("rxe0")
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	buf, err := uverbs.AllocBuffer(4096)
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Close() // deferred first, so it runs after the MR is closed
	mr, err := pd.RegMR(buf.Bytes(), uverbs.AccessLocalWrite)
	if err != nil {
		log.Fatal(err)
	}

	err = pd.Close()
	fmt.Println("PD.Close with an MR open: busy", errors.Is(err, uverbs.ErrBusy))
	mr2, err := pd.RegMR(buf.Bytes(), uverbs.AccessLocalWrite) // the PD still works
	fmt.Println("PD still usable:", err == nil)

	// Close the dependants first, then the PD.
	if err := errors.Join(mr.Close(), mr2.Close()); err != nil {
		log.Fatal(err)
	}
	fmt.Println("PD.Close after its MRs:", pd.Close())
}

// Two RC QPs of one device connected to each other (the peer's QPN and GID
// would normally come from the other host), one RDMA WRITE, and its
// completion.
func Example_rdmaWrite() {
	dev, err := uverbs.Open("rxe0")
	if err != nil {
		log.Fatal(err) // errors.Is(err, uverbs.ErrNoDevice): create one with rdma-link
	}
	defer dev.Close() // also closes, in order, whatever is still open

	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	defer pd.Close()

	buf, err := uverbs.AllocBuffer(1 << 20) // off-heap, page-aligned
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Close()
	mr, err := pd.RegMR(buf.Bytes(), uverbs.AccessLocalWrite|uverbs.AccessRemoteWrite|uverbs.AccessRemoteRead)
	if err != nil {
		log.Fatal(err) // a *uverbs.MemlockError says how to raise RLIMIT_MEMLOCK
	}
	defer mr.Close()

	cq, err := dev.CreateCQ(uverbs.CQInit{Depth: 256})
	if err != nil {
		log.Fatal(err)
	}
	defer cq.Close()

	qpCap := uverbs.QPCap{MaxSendWR: 64, MaxRecvWR: 64, MaxSendSGE: 1, MaxRecvSGE: 1}
	a, err := pd.CreateQP(uverbs.QPInit{Type: uverbs.RC, SendCQ: cq, RecvCQ: cq, Cap: qpCap})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close() // drains: everything posted comes back through the CQ
	b, err := pd.CreateQP(uverbs.QPInit{Type: uverbs.RC, SendCQ: cq, RecvCQ: cq, Cap: qpCap})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	ip := netip.MustParseAddr("127.0.0.1")
	gidIndex, err := dev.GIDIndexForIP(1, ip)
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range [][2]*uverbs.QP{{a, b}, {b, a}} {
		qp, peer := p[0], p[1]
		if err := qp.ToInit(uverbs.InitAttr{Port: 1, Access: uverbs.AccessRemoteWrite | uverbs.AccessRemoteRead}); err != nil {
			log.Fatal(err)
		}
		if err := qp.ToRTR(uverbs.RTRAttr{DestQPN: peer.QPN(), MinRNRTimer: 12,
			AH: uverbs.AHAttr{DGID: uverbs.GIDFromIP(ip), SGIDIndex: gidIndex}}); err != nil {
			log.Fatal(err)
		}
		if err := qp.ToRTS(uverbs.RTSAttr{Timeout: 14, RetryCount: 7, RNRRetry: 7}); err != nil {
			log.Fatal(err)
		}
	}

	copy(buf.Bytes(), "hello")
	err = a.PostSend([]uverbs.SendWR{{
		ID: 1, Op: uverbs.OpWrite, Flags: uverbs.SendSignaled,
		SGEs:       []uverbs.SGE{mr.SGE(0, 5)},
		RemoteAddr: mr.Addr() + 4096, RKey: mr.RKey(), // b's memory, by its rkey
	}})
	if err != nil {
		log.Fatal(err)
	}
	wcs := make([]uverbs.WC, 16) // reuse it: Poll allocates nothing
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		n, err := cq.Poll(wcs)
		if err != nil {
			log.Fatal(err)
		}
		if n > 0 {
			if err := wcs[0].Status.Err(); err != nil {
				log.Fatal(err) // e.g. "work completion failed: remote access error (IBV_WC_REM_ACCESS_ERR)"
			}
			fmt.Printf("%s\n", buf.Bytes()[4096:4101])
			return
		}
	}
}

// Waiting for completions without spinning: arm the CQ, poll, and wait on
// its completion channel only when it was empty.
func ExampleCompChannel_Wait() {
	dev, err := uverbs.Open("rxe0")
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()
	ch, err := dev.NewCompChannel()
	if err != nil {
		log.Fatal(err)
	}
	defer ch.Close()
	cq, err := dev.CreateCQ(uverbs.CQInit{Depth: 256, Channel: ch})
	if err != nil {
		log.Fatal(err)
	}
	defer cq.Close()

	wcs := make([]uverbs.WC, 32)
	for {
		if err := cq.ReqNotify(false); err != nil {
			log.Fatal(err)
		}
		n, err := cq.Poll(wcs)
		if err != nil {
			log.Fatal(err)
		}
		for _, wc := range wcs[:n] {
			fmt.Println(wc.ID, wc.Status)
		}
		if n > 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err = ch.Wait(ctx) // blocks until an event; ends with ctx
		cancel()
		if err != nil {
			return
		}
	}
}
