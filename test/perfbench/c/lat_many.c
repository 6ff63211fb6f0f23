// lat_many is the C counterpart of `rdma-perf send_lat -q N` and, with -w,
// of `rdma-perf write_lat -q N`, which perftest has none of (its latency
// tests refuse -q): N RC QPs between a server and a client, and a
// ping-pong of SIZE-byte SENDs over them in turn, exchange k over QP k mod
// N, one message in flight. With -w the messages are RDMA WRITEs into the
// peer's receive half of the QP's buffer, no receives are posted, each
// side spins on the last byte of its own receive half (the exchange's
// number on that QP, mod 256) and the server writes first, as rdma-perf
// write_lat and perftest's run_iter_lat_write do. It uses the
// libibverbs API alone, with rdma-perf's send_lat settings: send queue
// depth 1 and every send signaled, no inline data, one CQ for every QP,
// each QP with as many receives posted as it has exchanges (at most 512,
// an even number), perftest's QP attributes (min RNR timer 12, timeout 14,
// 7 retries of each kind, hop limit 255). The destinations are swapped
// over TCP. The client prints perftest's latency table line, computed as
// rdma-perf does (the deltas between consecutive posts, the two worst
// dropped, RTT/2), which perfbench parses (test/perfbench/scale.go).
//
//	lat_many -d DEV -x GID_INDEX [-i PORT] [-p TCP_PORT] [-q QPS] [-n EXCHANGES] [-s SIZE] [-w] [-F] [HOST]
//
// The options are perftest's letters (-F is accepted and ignored); -n
// counts the exchanges in all, as rdma-perf's. Without HOST it is the
// server. Build: gcc -O2 -o lat_many lat_many.c -libverbs
// (Debian: libibverbs-dev).
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

// dest is what each side tells the other of one QP: with its receive half
// and the key that -w writes there with.
struct dest {
	uint32_t qpn, psn;
	uint16_t lid;
	union ibv_gid gid;
	uint64_t addr;
	uint32_t rkey;
};

static void fail(const char *what, int err)
{
	fprintf(stderr, "lat_many: %s: %s\n", what, strerror(err));
	exit(1);
}

static void usage(const char *msg)
{
	fprintf(stderr, "lat_many: %s\nusage: lat_many -d DEV -x GID_INDEX [-i PORT] [-p TCP_PORT] [-q QPS] [-n EXCHANGES] [-s SIZE] [-w] [HOST]\n", msg);
	exit(2);
}

static void full(int fd, void *p, size_t n, int writing)
{
	char *b = p;
	while (n > 0) {
		ssize_t k = writing ? write(fd, b, n) : read(fd, b, n);
		if (k == 0)
			fail("the peer closed the TCP connection", EPIPE);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			fail("TCP exchange", errno);
		}
		b += k;
		n -= (size_t)k;
	}
}

// meet swaps a byte with the peer: neither goes on before both are there.
static void meet(int fd)
{
	char c = 1;
	full(fd, &c, 1, 1);
	full(fd, &c, 1, 0);
}

static int tcp_server(int port)
{
	int one = 1, l = socket(AF_INET, SOCK_STREAM, 0), fd;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_ANY)};
	if (l < 0)
		fail("socket", errno);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 1) < 0)
		fail("listen", errno);
	if ((fd = accept(l, NULL, NULL)) < 0)
		fail("accept", errno);
	close(l);
	return fd;
}

static int tcp_client(const char *host, int port)
{
	char svc[16];
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai;
	snprintf(svc, sizeof svc, "%d", port);
	int rc = getaddrinfo(host, svc, &hints, &ai);
	if (rc != 0) {
		fprintf(stderr, "lat_many: %s: %s\n", host, gai_strerror(rc));
		exit(1);
	}
	// The server may not listen yet: try for about 5 s.
	for (int try = 0;; try++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0)
			fail("socket", errno);
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
			freeaddrinfo(ai);
			return fd;
		}
		int err = errno;
		close(fd);
		if (try == 100)
			fail("connect", err);
		usleep(50000);
	}
}

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

// report prints perftest's latency line (REPORT_FMT_LAT) from the post
// times, computed as rdma-perf's latStats: deltas sorted, the two worst
// dropped, median as perftest's get_median, halved (RTT/2).
static void report(int size, int iters, const uint64_t *posts)
{
	int nd = iters - 1, n = nd - 2;
	uint64_t *d = malloc(sizeof *d * nd);
	for (int i = 0; i < nd; i++)
		d[i] = posts[i + 1] - posts[i];
	qsort(d, nd, sizeof *d, cmp_u64);
#define US(x) ((double)(x) / 1000.0 / 2.0)
	uint64_t median = (n - 1) % 2 != 0 ? (d[n / 2] + d[n / 2 - 1]) / 2 : d[n / 2];
	double sum = 0, var = 0;
	for (int i = 0; i < n; i++)
		sum += US(d[i]);
	double avg = sum / n;
	for (int i = 0; i < n; i++)
		var += (avg - US(d[i])) * (avg - US(d[i]));
	printf(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99%% percentile[usec]   99.9%% percentile[usec] \n");
	printf(" %-7d %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n",
	       size, iters, US(d[0]), US(d[n]), US(median), avg, sqrt(var / n),
	       US(d[(int)ceil(n * 0.99)]), US(d[(int)ceil(n * 0.999)]));
#undef US
	free(d);
}

// The run's state, which reap advances. A receive's ID is its QP's index;
// a send's is the QP's index above bit 32 and its number on that QP.
static struct ibv_cq *cq;
static struct ibv_qp **qp;
static struct ibv_recv_wr *rwr;
static int *posted; // receives posted on each QP
static int *quota;  // exchanges of each QP: exchange k goes over QP k mod N
static int *done;   // sends completed on each QP
static int rdone;   // receives completed

// reap polls the CQ once and accounts what it found; a receive is
// replaced while its QP has exchanges left.
static void reap(void)
{
	struct ibv_wc wc[16];
	struct ibv_recv_wr *bad;
	int got = ibv_poll_cq(cq, 16, wc), rc;
	if (got < 0)
		fail("ibv_poll_cq", EIO);
	for (int j = 0; j < got; j++) {
		if (wc[j].status != IBV_WC_SUCCESS) {
			fprintf(stderr, "lat_many: completion with error: %s (wr_id %llu)\n",
				ibv_wc_status_str(wc[j].status), (unsigned long long)wc[j].wr_id);
			exit(1);
		}
		if (!(wc[j].opcode & IBV_WC_RECV)) {
			done[wc[j].wr_id >> 32] = (int)(wc[j].wr_id & 0xffffffff) + 1;
			continue;
		}
		int q = (int)wc[j].wr_id;
		rdone++;
		if (posted[q] < quota[q]) {
			if ((rc = ibv_post_recv(qp[q], &rwr[q], &bad)) != 0)
				fail("ibv_post_recv", rc);
			posted[q]++;
		}
	}
}

int main(int argc, char **argv)
{
	const char *devname = NULL, *host = NULL;
	int ibport = 1, gidx = -1, tcpport = 18515, nqp = 1, iters = 1000, size = 64, writes = 0, c;
	while ((c = getopt(argc, argv, "d:i:x:p:q:n:s:wF")) != -1) {
		switch (c) {
		case 'd': devname = optarg; break;
		case 'i': ibport = atoi(optarg); break;
		case 'x': gidx = atoi(optarg); break;
		case 'p': tcpport = atoi(optarg); break;
		case 'q': nqp = atoi(optarg); break;
		case 'n': iters = atoi(optarg); break;
		case 's': size = atoi(optarg); break;
		case 'w': writes = 1; break;
		case 'F': break; // perftest's -F, which perfbench passes to every tool
		default: usage("unknown option");
		}
	}
	if (optind < argc)
		host = argv[optind++];
	if (optind < argc)
		usage("one host at most");
	if (gidx < 0)
		usage("-x: give the GID index of the address the peers talk over (rxe on lo: 1)");
	if (nqp < 1 || nqp > 16384 || iters < 5 || size < 1 || size > 1 << 20 || tcpport < 1 || tcpport > 65535)
		usage("-q is 1..16384, -n at least 5, -s 1..1048576, -p a TCP port");

	int ndev;
	struct ibv_device **devs = ibv_get_device_list(&ndev), *dev = NULL;
	if (devs == NULL)
		fail("ibv_get_device_list", errno);
	for (int i = 0; i < ndev && dev == NULL; i++)
		if (devname == NULL || strcmp(ibv_get_device_name(devs[i]), devname) == 0)
			dev = devs[i];
	if (dev == NULL)
		usage("no such RDMA device (-d)");
	struct ibv_context *ctx = ibv_open_device(dev);
	if (ctx == NULL)
		fail("ibv_open_device", errno);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	if (pd == NULL)
		fail("ibv_alloc_pd", errno);
	struct ibv_port_attr pa;
	union ibv_gid gid;
	int rc;
	if ((rc = ibv_query_port(ctx, ibport, &pa)) != 0)
		fail("ibv_query_port", rc);
	if ((rc = ibv_query_gid(ctx, ibport, gidx, &gid)) != 0)
		fail("ibv_query_gid", rc);

	// Receives per QP: its share of the exchanges, at most 512 (perftest's
	// RX depth), then even (perftest's fix for an odd RX depth in SEND).
	int share = (iters + nqp - 1) / nqp, rx = 512;
	if (rx > iters)
		rx = iters;
	if (rx > share)
		rx = share;
	if (rx % 2)
		rx++;
	if (writes)
		rx = 0; // write_lat posts no receives
	// Each QP's part of the buffer: a send half and a receive half.
	size_t half = (size_t)((size > 4096 ? size : 4096) + 4095) / 4096 * 4096 + 4096;
	char *buf = aligned_alloc(4096, 2 * half * nqp);
	if (buf == NULL)
		fail("aligned_alloc", ENOMEM);
	memset(buf, 0, 2 * half * nqp);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, 2 * half * nqp,
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	if (mr == NULL)
		fail("ibv_reg_mr", errno);
	cq = ibv_create_cq(ctx, (1 + rx) * nqp + 1, NULL, NULL, 0);
	if (cq == NULL)
		fail("ibv_create_cq", errno);

	qp = calloc(nqp, sizeof *qp);
	struct dest *me = calloc(nqp, sizeof *me), *peer = calloc(nqp, sizeof *peer);
	int *sent = calloc(nqp, sizeof(int));
	done = calloc(nqp, sizeof(int));
	posted = calloc(nqp, sizeof(int));
	quota = calloc(nqp, sizeof(int));
	srand48(getpid() * time(NULL));
	for (int i = 0; i < nqp; i++) {
		struct ibv_qp_init_attr ia = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = {.max_send_wr = 1, .max_recv_wr = rx > 0 ? rx : 1, .max_send_sge = 1, .max_recv_sge = 1, .max_inline_data = 0},
		};
		if ((qp[i] = ibv_create_qp(pd, &ia)) == NULL)
			fail("ibv_create_qp", errno);
		struct ibv_qp_attr a = {
			.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = ibport,
			.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
		};
		if ((rc = ibv_modify_qp(qp[i], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) != 0)
			fail("INIT", rc);
		me[i] = (struct dest){.qpn = qp[i]->qp_num, .psn = lrand48() & 0xffffff, .lid = pa.lid, .gid = gid,
				      .addr = (uintptr_t)(buf + 2 * half * i + half), .rkey = mr->rkey};
		quota[i] = (iters - i + nqp - 1) / nqp;
	}

	int fd = host ? tcp_client(host, tcpport) : tcp_server(tcpport);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	full(fd, me, sizeof *me * nqp, 1);
	full(fd, peer, sizeof *peer * nqp, 0);

	for (int i = 0; i < nqp; i++) {
		struct ibv_qp_attr a = {
			.qp_state = IBV_QPS_RTR, .path_mtu = pa.active_mtu, .dest_qp_num = peer[i].qpn,
			.rq_psn = peer[i].psn, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
			.ah_attr = {.is_global = 1, .dlid = peer[i].lid, .port_num = ibport,
				    .grh = {.dgid = peer[i].gid, .sgid_index = gidx, .hop_limit = 0xff}},
		};
		if ((rc = ibv_modify_qp(qp[i], &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
							 IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) != 0)
			fail("RTR", rc);
		a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
					 .sq_psn = me[i].psn, .max_rd_atomic = 1};
		if ((rc = ibv_modify_qp(qp[i], &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
							 IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)) != 0)
			fail("RTS", rc);
	}

	struct ibv_sge *rsge = calloc(nqp, sizeof *rsge);
	struct ibv_recv_wr *badr;
	rwr = calloc(nqp, sizeof *rwr);
	for (int i = 0; i < nqp; i++) {
		rsge[i] = (struct ibv_sge){.addr = (uintptr_t)(buf + 2 * half * i + half), .length = size, .lkey = mr->lkey};
		rwr[i] = (struct ibv_recv_wr){.wr_id = i, .sg_list = &rsge[i], .num_sge = 1};
		for (; posted[i] < rx && posted[i] < quota[i]; posted[i]++)
			if ((rc = ibv_post_recv(qp[i], &rwr[i], &badr)) != 0)
				fail("ibv_post_recv", rc);
	}
	struct ibv_sge ssge = {.length = size, .lkey = mr->lkey};
	struct ibv_send_wr swr = {.sg_list = &ssge, .num_sge = 1, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED}, *bads;
	uint64_t *posts = calloc(iters, sizeof *posts);
	int client = host != NULL, scnt = 0, rcnt = 0;
	meet(fd); // both sides' receives are posted

	// The client sends first, the server with -w; each side sends once it
	// received, and waits for its send's completion (rdma-perf's runLatSend
	// and runLatWrite, perftest's run_iter_lat_send and run_iter_lat_write
	// with one QP). A write has landed when the last byte of the QP's
	// receive half holds the exchange's number on that QP.
	int first = writes ? !client : client;
	if (writes)
		swr.opcode = IBV_WR_RDMA_WRITE;
	while (scnt < iters || rcnt < iters) {
		if (rcnt < iters && !(scnt < 1 && first)) {
			if (writes) {
				int i = rcnt % nqp;
				uint8_t want = (uint8_t)(rcnt / nqp + 1);
				volatile uint8_t *at = (volatile uint8_t *)(buf + 2 * half * i + half + size - 1);
				while (*at != want)
					;
			} else {
				while (rdone < rcnt + 1)
					reap();
			}
			rcnt++;
		}
		if (scnt < iters) {
			int i = scnt % nqp;
			posts[scnt] = now_ns();
			if (writes) {
				buf[2 * half * i + size - 1] = (char)(uint8_t)(scnt / nqp + 1);
				swr.wr.rdma.remote_addr = peer[i].addr;
				swr.wr.rdma.rkey = peer[i].rkey;
			}
			scnt++;
			swr.wr_id = (uint64_t)i << 32 | (uint32_t)sent[i];
			ssge.addr = (uintptr_t)(buf + 2 * half * i);
			sent[i]++;
			if ((rc = ibv_post_send(qp[i], &swr, &bads)) != 0)
				fail("ibv_post_send", rc);
			while (done[i] < sent[i])
				reap();
		}
	}
	meet(fd); // the peer's last message is acknowledged: nothing is in flight
	if (client)
		report(size, iters, posts);

	for (int i = 0; i < nqp; i++)
		ibv_destroy_qp(qp[i]);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(devs);
	close(fd);
	return 0;
}
