/*
 * The mlx5 differential harness: reads the cases that the Go test
 * TestDifferential (uverbs/internal/mlx5) writes, runs each through rdma-core's own libmlx5
 * code (providers/mlx5/qp.c, cq.c, srq.c compiled unmodified and linked in;
 * verbs.c included below for its static sizing functions) on fake rings,
 * doorbell records and UAR pages in plain memory, and prints what libmlx5
 * wrote in the format the Go side prints for the same cases
 * (docs/mlx5.md §7). No device is touched.
 *
 * usage: mlx5diff-harness < cases > results
 */
#include "verbs.c"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Symbols of the rest of libmlx5 and libibverbs the linked files name but
 * the cases never reach are generated into stubs.c; these few are data or
 * must behave. */
int mlx5_freeze_on_error_cqe;
bool verbs_allow_disassociate_destroy;

struct mlx5_mkey *mlx5_find_mkey(struct mlx5_context *ctx, uint32_t mkey)
{
	return NULL;
}

void mlx5_get_alloc_type(struct mlx5_context *context, struct ibv_pd *pd,
			 const char *component, enum mlx5_alloc_type *alloc_type,
			 enum mlx5_alloc_type default_type)
{
	*alloc_type = MLX5_ALLOC_TYPE_ANON;
}

int mlx5_alloc_prefered_buf(struct mlx5_context *mctx, struct mlx5_buf *buf,
			    size_t size, int page_size,
			    enum mlx5_alloc_type type, const char *component)
{
	buf->buf = aligned_alloc(4096, (size + 4095) & ~4095UL);
	buf->length = size;
	buf->type = type;
	return buf->buf ? 0 : -1;
}

int mlx5_free_actual_buf(struct mlx5_context *ctx, struct mlx5_buf *buf)
{
	free(buf->buf);
	return 0;
}

/* Address handles (ah cases): what the port, the GID and the kernel say. */
static uint32_t case_gid_type;
static uint8_t case_mac[6];
static unsigned case_random;

int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
		       unsigned int index, enum ibv_gid_type_sysfs *type)
{
	*type = case_gid_type;
	return 0;
}

int ibv_resolve_eth_l2_from_gid(struct ibv_context *context,
				struct ibv_ah_attr *attr, uint8_t eth_mac[6],
				uint16_t *vid)
{
	memcpy(eth_mac, case_mac, 6);
	return 0;
}

int ibv_cmd_create_ah(struct ibv_pd *pd, struct ibv_ah *ah,
		      struct ibv_ah_attr *attr,
		      struct ib_uverbs_create_ah_resp *resp, size_t resp_size)
{
	struct mlx5_create_ah_resp *r =
		container_of(resp, struct mlx5_create_ah_resp, ibv_resp);

	memcpy(r->dmac, case_mac, 6);
	return 0;
}

unsigned int get_random(void)
{
	return case_random;
}

static struct mlx5_context ctx;
static struct mlx5_device dev;

#define ARENA_SIZE 65536
static uint8_t arena[ARENA_SIZE] __attribute__((aligned(64)));
static uint8_t uar[4096] __attribute__((aligned(4096)));

static char line[1 << 16];

static int next_line(void)
{
	if (!fgets(line, sizeof(line), stdin))
		return 0;
	line[strcspn(line, "\n")] = 0;
	return 1;
}

static void die(const char *what)
{
	fprintf(stderr, "mlx5diff-harness: bad input (%s): %s\n", what, line);
	exit(2);
}

static void hex(const char *tag, const void *p, size_t n)
{
	const uint8_t *b = p;

	printf("%s ", tag);
	for (size_t i = 0; i < n; i++)
		printf("%02x", b[i]);
	printf("\n");
}

static void unhex(const char *s, uint8_t *out, size_t n)
{
	if (strlen(s) != 2 * n)
		die("hex length");
	for (size_t i = 0; i < n; i++) {
		unsigned v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			die("hex");
		out[i] = v;
	}
}

/* The fill patterns both sides use before a case, so that a byte libmlx5
 * leaves alone can be told from one it writes. */
static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 37 + seed * 11 + (i >> 8) * 5 + 1);
}

static void init_context(void)
{
	memset(&ctx, 0, sizeof(ctx));
	memset(&dev, 0, sizeof(dev));
	dev.page_size = 4096;
	ctx.ibv_ctx.context.device = &dev.verbs_dev.device;
	for (size_t i = 0; i < ARENA_SIZE; i++)
		arena[i] = (uint8_t)(i * 131 + (i >> 8) * 7 + 1);
}

/* ---- send queues ---- */

#define MAXWR 1024
#define MAXSGE 8192
static struct ibv_sge sges[MAXSGE];
static struct ibv_send_wr swrs[MAXWR];
static struct mlx5_ah ahs[MAXWR];
static struct ibv_recv_wr rwrs[MAXWR];

static void read_send_wrs(int n, int qp_type)
{
	for (int i = 0; i < n; i++) {
		struct ibv_send_wr *wr = &swrs[i];
		unsigned long long id, raddr, cmp, swap;
		unsigned opcode, flags, imm, rkey, rqpn, rqkey, nsge;
		char av[200];

		if (!next_line() ||
		    sscanf(line, "wr %llx %u %u %x %llx %x %llx %llx %x %x %199s %u",
			   &id, &opcode, &flags, &imm, &raddr, &rkey, &cmp, &swap,
			   &rqpn, &rqkey, av, &nsge) != 12)
			die("wr");
		memset(wr, 0, sizeof(*wr));
		wr->wr_id = id;
		wr->opcode = opcode;
		wr->send_flags = flags;
		/* The case's imm is the union ex: the immediate in host
		 * order, or the rkey to invalidate (ibv_send_wr.invalidate_rkey,
		 * host order, which qp.c send_ieth swaps). */
		if (opcode == IBV_WR_SEND_WITH_INV || opcode == IBV_WR_LOCAL_INV)
			wr->invalidate_rkey = imm;
		else
			wr->imm_data = htobe32(imm);
		wr->next = i + 1 < n ? &swrs[i + 1] : NULL;
		if (opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		    opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			wr->wr.atomic.remote_addr = raddr;
			wr->wr.atomic.rkey = rkey;
			wr->wr.atomic.compare_add = cmp;
			wr->wr.atomic.swap = swap;
		} else if (qp_type == IBV_QPT_UD) {
			memset(&ahs[i], 0, sizeof(ahs[i]));
			if (strcmp(av, "-"))
				unhex(av, (uint8_t *)&ahs[i].av, sizeof(ahs[i].av));
			wr->wr.ud.ah = &ahs[i].ibv_ah;
			wr->wr.ud.remote_qpn = rqpn;
			wr->wr.ud.remote_qkey = rqkey;
		} else {
			wr->wr.rdma.remote_addr = raddr;
			wr->wr.rdma.rkey = rkey;
		}
		wr->sg_list = &sges[0];
		wr->num_sge = nsge;
		/* SGE lists of one post follow each other in sges[]. */
		static int used;
		if (i == 0)
			used = 0;
		wr->sg_list = &sges[used];
		for (unsigned j = 0; j < nsge; j++) {
			unsigned long long addr;
			unsigned len, lkey;

			if (used >= MAXSGE || !next_line() ||
			    sscanf(line, "sge %llx %x %x", &addr, &len, &lkey) != 3)
				die("sge");
			/* Inline data is read from the arena: there the address is
			 * an offset into it. */
			if (flags & IBV_SEND_INLINE) {
				if (addr + len > ARENA_SIZE)
					die("inline sge outside the arena");
				addr += (uintptr_t)arena;
			}
			sges[used].addr = addr;
			sges[used].length = len;
			sges[used].lkey = lkey;
			used++;
		}
	}
}

/* ---- timing (make bench-native's mlx5 rows) ----
 *
 * "bench N MS" in a sq or rq case reads N work requests as "post" does,
 * then posts them as one list over and over for about MS milliseconds,
 * retiring them after each post as a poll of their completions would
 * (tail = head), and prints "bench NS", nanoseconds per work request. The
 * queue takes libmlx5's default locks, as a context that is not
 * MLX5_SINGLE_THREADED does. */

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void take_locks(struct mlx5_spinlock *l)
{
	pthread_spin_init(&l->lock, PTHREAD_PROCESS_PRIVATE);
	l->need_lock = 1;
}

static void bench(struct mlx5_qp *qp, int send, int n, double ms)
{
	long iters = 1000, i;
	double t0, dt;

	for (;;) {
		t0 = now_ns();
		/* Send or receive chosen once, outside the loop, as the Go
		 * side's run chooses its row. */
		if (send) {
			for (i = 0; i < iters; i++) {
				struct ibv_send_wr *bad = NULL;

				if (mlx5_post_send(qp->ibv_qp, &swrs[0], &bad))
					die("bench post_send");
				qp->sq.tail = qp->sq.head;
			}
		} else {
			for (i = 0; i < iters; i++) {
				struct ibv_recv_wr *bad = NULL;

				if (mlx5_post_recv(qp->ibv_qp, &rwrs[0], &bad))
					die("bench post_recv");
				qp->rq.tail = qp->rq.head;
			}
		}
		dt = now_ns() - t0;
		if (dt >= ms * 1e6)
			break;
		iters = dt < 1e6 ? iters * 100 : (long)(iters * ms * 1.2e6 / dt);
	}
	printf("bench %.2f\n", dt / ((double)iters * n));
}

/* "bench N MS" in a cq case polls the CQ over and over for about MS
 * milliseconds, with room for 16 completions, after a fake device has
 * published N entries, and prints "bench NS", nanoseconds per completion
 * (per poll with N 0). The case's "cqe" lines wrote every entry once; the
 * device publishes one by writing only its op_own byte: MLX5_CQE_REQ and
 * the owner bit the entry needs at that consumer index (cq.c get_sw_cqe:
 * !!(n & ncqe)). Each poll must return N, the last a success with the
 * wr_id of its send queue slot (entry i has wqe_counter i, of qp). The CQ
 * takes libmlx5's default lock, as the queues above. */
static void cq_bench(struct mlx5_cq *cq, struct mlx5_qp *qp, uint8_t *ring,
		     unsigned entries, int version, unsigned n, double ms)
{
	static struct ibv_wc wc[16];
	uint32_t prod = cq->cons_index;
	long iters = 1000, i;
	double t0, dt;

	for (;;) {
		t0 = now_ns();
		for (i = 0; i < iters; i++) {
			for (unsigned k = 0; k < n; k++, prod++)
				ring[(prod & (entries - 1)) * 64 + 63] =
					MLX5_CQE_REQ << 4 | !!(prod & entries);
			if ((version ? mlx5_poll_cq_v1(&cq->verbs_cq.cq, 16, wc) :
				       mlx5_poll_cq(&cq->verbs_cq.cq, 16, wc)) != (int)n ||
			    (n && (wc[n - 1].status != IBV_WC_SUCCESS ||
				   wc[n - 1].wr_id != qp->sq.wrid[(prod - 1) & (qp->sq.wqe_cnt - 1)])))
				die("bench poll");
		}
		dt = now_ns() - t0;
		if (dt >= ms * 1e6)
			break;
		iters = dt < 1e6 ? iters * 100 : (long)(iters * ms * 1.2e6 / dt);
	}
	printf("bench %.2f\n", dt / ((double)iters * (n ? n : 1)));
}

static void print_sq(struct mlx5_qp *qp, uint8_t *ring, size_t ring_size,
		     uint8_t *dbrec, int bf_size)
{
	hex("db", dbrec, 8);
	/* The shared bfreg 0 has no halves (buf_size 0): its doorbell is
	 * the first 8 bytes, so at least 16 bytes are shown. */
	hex("bf", uar + 0x800, 2 * bf_size > 16 ? 2 * bf_size : 16);
	hex("ring", ring, ring_size);
	printf("idx %x %x %x\n", qp->sq.cur_post, qp->sq.head, qp->bf->offset);
	printf("wrid");
	for (int i = 0; i < qp->sq.wqe_cnt; i++)
		printf(" %" PRIx64 ":%x", qp->sq.wrid[i], qp->sq.wqe_head[i]);
	printf("\n");
}

static void sq_case(void)
{
	unsigned type, qpn, wqecnt, maxpost, maxgs, maxinl, sigall, atomics,
		bfsize, dedicated, preferbf, shutup, start;
	static struct mlx5_qp qp;
	static struct mlx5_cq cq;
	static struct mlx5_bf bf;
	uint8_t *ring;
	uint8_t dbrec[8] __attribute__((aligned(8)));

	if (sscanf(line, "sq %u %x %u %u %u %u %u %u %u %u %u %u %x", &type, &qpn,
		   &wqecnt, &maxpost, &maxgs, &maxinl, &sigall, &atomics, &bfsize,
		   &dedicated, &preferbf, &shutup, &start) != 13)
		die("sq");
	memset(&qp, 0, sizeof(qp));
	memset(&cq, 0, sizeof(cq));
	memset(&bf, 0, sizeof(bf));
	ring = aligned_alloc(4096, wqecnt * 64 < 4096 ? 4096 : wqecnt * 64);
	fill(ring, wqecnt * 64, 1);
	fill(dbrec, 8, 2);
	fill(uar, sizeof(uar), 3);

	ctx.prefer_bf = preferbf;
	ctx.shut_up_bf = shutup;
	qp.ibv_qp = &qp.verbs_qp.qp;
	qp.verbs_qp.qp.context = &ctx.ibv_ctx.context;
	qp.verbs_qp.qp.qp_num = qpn;
	qp.verbs_qp.qp.qp_type = type;
	qp.verbs_qp.qp.send_cq = &cq.verbs_cq.cq;
	qp.verbs_qp.qp.state = IBV_QPS_RTS;
	qp.sq_start = ring;
	qp.sq.qend = ring + wqecnt * 64;
	qp.sq.wqe_cnt = wqecnt;
	qp.sq.max_post = maxpost;
	qp.sq.max_gs = maxgs;
	qp.sq.qp_state_max_gs = maxgs;
	qp.sq.wrid = calloc(wqecnt, sizeof(*qp.sq.wrid));
	qp.sq.wqe_head = calloc(wqecnt, sizeof(*qp.sq.wqe_head));
	qp.sq.wr_data = calloc(wqecnt, sizeof(*qp.sq.wr_data));
	qp.sq.cur_post = start;
	qp.sq.head = qp.sq.tail = start;
	qp.max_inline_data = maxinl;
	qp.sq_signal_bits = sigall ? MLX5_WQE_CTRL_CQ_UPDATE : 0;
	qp.atomics_enabled = atomics;
	qp.db = (__be32 *)dbrec;
	qp.bf = &bf;
	bf.reg = uar + 0x800;
	bf.buf_size = bfsize;
	bf.uuarn = dedicated ? 1 : 0;

	while (next_line() && strcmp(line, "end")) {
		int n;

		double ms;

		if (!strcmp(line, "complete")) {
			qp.sq.tail = qp.sq.head;
			continue;
		}
		if (sscanf(line, "bench %d %lf", &n, &ms) == 2) {
			if (n < 1 || n > MAXWR)
				die("bench");
			read_send_wrs(n, type);
			take_locks(&qp.sq.lock);
			bench(&qp, 1, n, ms);
			continue;
		}
		if (sscanf(line, "post %d", &n) != 1 || n < 1 || n > MAXWR)
			die("post");
		read_send_wrs(n, type);
		struct ibv_send_wr *bad = NULL;
		int ret = mlx5_post_send(qp.ibv_qp, &swrs[0], &bad);
		printf("post %d %d\n", ret, bad ? (int)(bad - swrs) : -1);
		print_sq(&qp, ring, wqecnt * 64, dbrec, bfsize);
	}
	free(qp.sq.wrid);
	free(qp.sq.wqe_head);
	free(qp.sq.wr_data);
	free(ring);
}

/* ---- receive queues ---- */

static void read_recv_wrs(int n)
{
	int used = 0;

	for (int i = 0; i < n; i++) {
		unsigned long long id;
		unsigned nsge;

		if (!next_line() || sscanf(line, "rwr %llx %u", &id, &nsge) != 2)
			die("rwr");
		memset(&rwrs[i], 0, sizeof(rwrs[i]));
		rwrs[i].wr_id = id;
		rwrs[i].num_sge = nsge;
		rwrs[i].sg_list = &sges[used];
		rwrs[i].next = i + 1 < n ? &rwrs[i + 1] : NULL;
		for (unsigned j = 0; j < nsge; j++) {
			unsigned long long addr;
			unsigned len, lkey;

			if (used >= MAXSGE || !next_line() ||
			    sscanf(line, "sge %llx %x %x", &addr, &len, &lkey) != 3)
				die("sge");
			sges[used].addr = addr;
			sges[used].length = len;
			sges[used].lkey = lkey;
			used++;
		}
	}
}

static void rq_case(void)
{
	unsigned wqecnt, shift, maxpost, maxgs, start;
	static struct mlx5_qp qp;
	static struct mlx5_cq cq;
	uint8_t *ring;
	uint8_t dbrec[8] __attribute__((aligned(8)));
	size_t size;

	if (sscanf(line, "rq %u %u %u %u %x", &wqecnt, &shift, &maxpost, &maxgs,
		   &start) != 5)
		die("rq");
	size = (size_t)wqecnt << shift;
	memset(&qp, 0, sizeof(qp));
	memset(&cq, 0, sizeof(cq));
	ring = aligned_alloc(4096, size < 4096 ? 4096 : size);
	fill(ring, size, 4);
	fill(dbrec, 8, 5);
	qp.ibv_qp = &qp.verbs_qp.qp;
	qp.verbs_qp.qp.context = &ctx.ibv_ctx.context;
	qp.verbs_qp.qp.qp_type = IBV_QPT_RC;
	qp.verbs_qp.qp.state = IBV_QPS_RTS;
	qp.verbs_qp.qp.recv_cq = &cq.verbs_cq.cq;
	qp.buf.buf = ring;
	qp.rq.offset = 0;
	qp.rq.wqe_cnt = wqecnt;
	qp.rq.wqe_shift = shift;
	qp.rq.max_post = maxpost;
	qp.rq.max_gs = maxgs;
	qp.rq.qp_state_max_gs = maxgs;
	qp.rq.head = qp.rq.tail = start;
	qp.rq.wrid = calloc(wqecnt, sizeof(*qp.rq.wrid));
	qp.db = (__be32 *)dbrec;

	while (next_line() && strcmp(line, "end")) {
		int n;

		double ms;

		if (!strcmp(line, "complete")) {
			qp.rq.tail = qp.rq.head;
			continue;
		}
		if (sscanf(line, "bench %d %lf", &n, &ms) == 2) {
			if (n < 1 || n > MAXWR)
				die("bench");
			read_recv_wrs(n);
			take_locks(&qp.rq.lock);
			bench(&qp, 0, n, ms);
			continue;
		}
		if (sscanf(line, "post %d", &n) != 1 || n < 1 || n > MAXWR)
			die("post");
		read_recv_wrs(n);
		struct ibv_recv_wr *bad = NULL;
		int ret = mlx5_post_recv(qp.ibv_qp, &rwrs[0], &bad);
		printf("post %d %d\n", ret, bad ? (int)(bad - rwrs) : -1);
		hex("db", dbrec, 8);
		hex("ring", ring, size);
		printf("idx %x\n", qp.rq.head);
		printf("wrid");
		for (unsigned i = 0; i < wqecnt; i++)
			printf(" %" PRIx64, qp.rq.wrid[i]);
		printf("\n");
	}
	free(qp.rq.wrid);
	free(ring);
}

/* ---- shared receive queues ---- */

static int make_srq(struct mlx5_srq *srq, unsigned maxwr, unsigned maxgs)
{
	memset(srq, 0, sizeof(*srq));
	srq->max_gs = maxgs;
	return mlx5_alloc_srq_buf(&ctx.ibv_ctx.context, srq, maxwr, NULL);
}

static void print_srq(struct mlx5_srq *srq, uint8_t *dbrec)
{
	hex("db", dbrec, 4);
	hex("ring", srq->buf.buf, (size_t)srq->max << srq->wqe_shift);
	printf("idx %x %x %x\n", srq->head, srq->tail, srq->counter);
}

static void srq_case(void)
{
	unsigned maxwr, maxgs, devsrqwr, devrecvwr;
	static struct mlx5_srq srq;
	uint8_t dbrec[8] __attribute__((aligned(8)));

	if (sscanf(line, "srq %u %u %u %u", &maxwr, &maxgs, &devsrqwr,
		   &devrecvwr) != 4)
		die("srq");
	ctx.max_srq_recv_wr = devsrqwr;
	ctx.max_recv_wr = devrecvwr;
	fill(dbrec, 8, 6);
	if (make_srq(&srq, maxwr, maxgs)) {
		printf("srq -1\n");
		while (next_line() && strcmp(line, "end"))
			;
		return;
	}
	srq.db = (__be32 *)dbrec;
	memset(srq.wrid, 0, srq.max * sizeof(*srq.wrid)); /* malloc'ed by libmlx5 */
	printf("srq %d %d %d %d %d\n", srq.max, srq.max_gs, srq.wqe_shift,
	       srq.head, srq.tail);
	while (next_line() && strcmp(line, "end")) {
		int n;
		unsigned ind;

		if (sscanf(line, "free %x", &ind) == 1) {
			mlx5_free_srq_wqe(&srq, ind);
			print_srq(&srq, dbrec);
			continue;
		}
		if (sscanf(line, "post %d", &n) != 1 || n < 1 || n > MAXWR)
			die("post");
		read_recv_wrs(n);
		struct ibv_recv_wr *bad = NULL;
		int ret = mlx5_post_srq_recv(&srq.vsrq.srq, &rwrs[0], &bad);
		printf("post %d %d\n", ret, bad ? (int)(bad - rwrs) : -1);
		print_srq(&srq, dbrec);
		printf("wrid");
		for (int i = 0; i < srq.max; i++)
			printf(" %" PRIx64, srq.wrid[i]);
		printf("\n");
	}
	free(srq.wrid);
	free(srq.buf.buf);
}

/* ---- sizing ---- */

static void size_case(void)
{
	unsigned type, swr, ssge, sinl, rwr, rsge, sqdesc, rqdesc, wqebb, devrwr;
	struct ibv_qp_init_attr_ex attr;
	static struct mlx5_qp qp;
	int ret;

	if (sscanf(line, "qpsize %u %u %u %u %u %u %u %u %u %u", &type, &swr, &ssge,
		   &sinl, &rwr, &rsge, &sqdesc, &rqdesc, &wqebb, &devrwr) != 10)
		die("qpsize");
	memset(&attr, 0, sizeof(attr));
	memset(&qp, 0, sizeof(qp));
	attr.qp_type = type;
	attr.cap.max_send_wr = swr;
	attr.cap.max_send_sge = ssge;
	attr.cap.max_inline_data = sinl;
	attr.cap.max_recv_wr = rwr;
	attr.cap.max_recv_sge = rsge;
	ctx.max_sq_desc_sz = sqdesc;
	ctx.max_rq_desc_sz = rqdesc;
	ctx.max_send_wqebb = wqebb;
	ctx.max_recv_wr = devrwr;
	ret = mlx5_calc_wq_size(&ctx, &attr, NULL, &qp);
	if (ret < 0) {
		printf("qpsize %d\n", ret);
	} else {
		printf("qpsize %d %d %d %d %d %d %d %d %d %d\n", ret,
		       qp.sq.wqe_cnt, qp.sq.max_post, qp.sq.max_gs,
		       swr ? qp.max_inline_data : 0, qp.rq.wqe_cnt,
		       qp.rq.wqe_shift, qp.rq.max_post, qp.rq.max_gs, qp.sq.offset);
	}
	while (next_line() && strcmp(line, "end"))
		;
}

static void srqsize_case(void)
{
	unsigned maxwr, maxgs, devsrqwr, devrecvwr;
	static struct mlx5_srq srq;

	if (sscanf(line, "srqsize %u %u %u %u", &maxwr, &maxgs, &devsrqwr,
		   &devrecvwr) != 4)
		die("srqsize");
	ctx.max_srq_recv_wr = devsrqwr;
	ctx.max_recv_wr = devrecvwr;
	if (make_srq(&srq, maxwr, maxgs))
		printf("srqsize -1\n");
	else {
		printf("srqsize %d %d %d %d %d\n", srq.max, srq.max_gs,
		       srq.wqe_shift, srq.head, srq.tail);
		free(srq.wrid);
		free(srq.buf.buf);
	}
	while (next_line() && strcmp(line, "end"))
		;
}

/* ---- a new CQ's ring ---- */

static void cqinit_case(void)
{
	unsigned depth;
	static struct mlx5_cq cq;
	struct mlx5_buf buf;
	int ncqe;

	if (sscanf(line, "cqinit %u", &depth) != 1)
		die("cqinit");
	memset(&cq, 0, sizeof(cq));
	memset(&buf, 0, sizeof(buf));
	ncqe = align_queue_size(depth + 1); /* verbs.c create_cq */
	if (mlx5_alloc_cq_buf(&ctx, &cq, &buf, ncqe, 64))
		die("mlx5_alloc_cq_buf");
	printf("cqinit %d\n", ncqe);
	hex("ring", buf.buf, (size_t)ncqe * 64);
	free(buf.buf);
	while (next_line() && strcmp(line, "end"))
		;
}

/* ---- address handles ---- */

static void ah_case(void)
{
	unsigned eth, grhreq, v2, uhw, rnd, dlid, sl, spb, rate, global, fl,
		sgid, hop, tclass;
	char gid[64], mac[32];
	struct ibv_ah_attr attr;
	struct ibv_pd pd;
	struct ibv_ah *ah;

	if (sscanf(line, "ah %u %u %u %u %x %x %u %u %u %u %x %u %u %u %63s %31s",
		   &eth, &grhreq, &v2, &uhw, &rnd, &dlid, &sl, &spb, &rate, &global,
		   &fl, &sgid, &hop, &tclass, gid, mac) != 16)
		die("ah");
	memset(&attr, 0, sizeof(attr));
	memset(&pd, 0, sizeof(pd));
	pd.context = &ctx.ibv_ctx.context;
	ctx.num_ports = 1;
	ctx.cached_link_layer[0] = eth ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
	ctx.cached_port_flags[0] = grhreq ? IBV_QPF_GRH_REQUIRED : 0;
	ctx.cmds_supp_uhw = uhw ? MLX5_USER_CMDS_SUPP_UHW_CREATE_AH : 0;
	case_gid_type = v2 ? IBV_GID_TYPE_SYSFS_ROCE_V2 : IBV_GID_TYPE_SYSFS_IB_ROCE_V1;
	case_random = rnd;
	unhex(mac, case_mac, 6);
	attr.port_num = 1;
	attr.dlid = dlid;
	attr.sl = sl;
	attr.src_path_bits = spb;
	attr.static_rate = rate;
	attr.is_global = global;
	attr.grh.flow_label = fl;
	attr.grh.sgid_index = sgid;
	attr.grh.hop_limit = hop;
	attr.grh.traffic_class = tclass;
	unhex(gid, attr.grh.dgid.raw, 16);
	ah = mlx5_create_ah(&pd, &attr);
	if (!ah) {
		printf("ah -%d\n", errno);
	} else {
		printf("ah 0\n");
		hex("av", &to_mah(ah)->av, sizeof(to_mah(ah)->av));
		free(to_mah(ah));
	}
	while (next_line() && strcmp(line, "end"))
		;
}

/* ---- completion queues ---- */

#define MAXQ 4

static void store_uidx(uint32_t uidx, void *rsc)
{
	int tind = uidx >> MLX5_UIDX_TABLE_SHIFT;

	if (!ctx.uidx_table[tind].refcnt)
		ctx.uidx_table[tind].table =
			calloc(MLX5_UIDX_TABLE_MASK + 1, sizeof(void *));
	ctx.uidx_table[tind].refcnt++;
	ctx.uidx_table[tind].table[uidx & MLX5_UIDX_TABLE_MASK] = rsc;
}

static void store_srq(uint32_t srqn, struct mlx5_srq *srq)
{
	int tind = srqn >> MLX5_SRQ_TABLE_SHIFT;

	if (!ctx.srq_table[tind].refcnt)
		ctx.srq_table[tind].table =
			calloc(MLX5_SRQ_TABLE_MASK + 1, sizeof(void *));
	ctx.srq_table[tind].refcnt++;
	ctx.srq_table[tind].table[srqn & MLX5_SRQ_TABLE_MASK] = srq;
}

static void clear_tables(void)
{
	for (int i = 0; i < MLX5_QP_TABLE_SIZE; i++) {
		free(ctx.qp_table[i].table);
		ctx.qp_table[i].table = NULL;
		ctx.qp_table[i].refcnt = 0;
	}
	for (int i = 0; i < MLX5_UIDX_TABLE_SIZE; i++) {
		free(ctx.uidx_table[i].table);
		ctx.uidx_table[i].table = NULL;
		ctx.uidx_table[i].refcnt = 0;
	}
	for (int i = 0; i < MLX5_SRQ_TABLE_SIZE; i++) {
		free(ctx.srq_table[i].table);
		ctx.srq_table[i].table = NULL;
		ctx.srq_table[i].refcnt = 0;
	}
}

static void cq_case(void)
{
	unsigned entries, cqn, version, start;
	static struct mlx5_cq cq;
	static struct mlx5_buf cqbuf;
	static struct mlx5_qp qps[MAXQ];
	static struct mlx5_srq srqs[MAXQ];
	int nqp = 0, nsrq = 0;
	uint8_t *ring;
	uint8_t dbrec[8] __attribute__((aligned(8)));
	static struct ibv_wc wc[64];

	if (sscanf(line, "cq %u %x %u %x", &entries, &cqn, &version, &start) != 4)
		die("cq");
	memset(&cq, 0, sizeof(cq));
	ring = aligned_alloc(4096, entries * 64 < 4096 ? 4096 : entries * 64);
	fill(ring, entries * 64, 7);
	/* Entries the device never wrote are invalid (libmlx5 initialises
	 * the ring that way, cq.c mlx5_alloc_cq_buf). */
	for (unsigned i = 0; i < entries; i++)
		ring[i * 64 + 63] = MLX5_CQE_INVALID << 4;
	fill(dbrec, 8, 8);
	fill(uar, sizeof(uar), 9);
	cqbuf.buf = ring;
	cq.active_buf = &cqbuf;
	cq.verbs_cq.cq.context = &ctx.ibv_ctx.context;
	cq.verbs_cq.cq.cqe = entries - 1;
	cq.cqe_sz = 64;
	cq.cqn = cqn;
	cq.cons_index = start;
	cq.dbrec = (__be32 *)dbrec;
	ctx.cq_uar_reg = uar;

	while (next_line() && strcmp(line, "end")) {
		unsigned qpn, uidx, sqcnt, rqcnt, rqtail, srqidx, slot, n, sol;
		unsigned srqn, maxwr, maxgs;
		double ms;
		char cqehex[200];

		if (sscanf(line, "qp %x %x %u %u %x %d", &qpn, &uidx, &sqcnt, &rqcnt,
			   &rqtail, (int *)&srqidx) == 6) {
			struct mlx5_qp *qp = &qps[nqp++];

			memset(qp, 0, sizeof(*qp));
			qp->ibv_qp = &qp->verbs_qp.qp;
			qp->verbs_qp.qp.context = &ctx.ibv_ctx.context;
			qp->verbs_qp.qp.qp_num = qpn;
			qp->verbs_qp.qp.qp_type = IBV_QPT_RC;
			qp->rsc.type = MLX5_RSC_TYPE_QP;
			qp->rsc.rsn = version ? uidx : qpn;
			qp->sq.wqe_cnt = sqcnt;
			qp->sq.wrid = calloc(sqcnt, sizeof(uint64_t));
			qp->sq.wqe_head = calloc(sqcnt, sizeof(unsigned));
			qp->sq.wr_data = calloc(sqcnt, sizeof(uint32_t));
			for (unsigned i = 0; i < sqcnt; i++) {
				qp->sq.wrid[i] = 0x51000000ULL * (nqp) + i;
				qp->sq.wqe_head[i] = i * 3 + 7;
			}
			qp->rq.wqe_cnt = rqcnt;
			qp->rq.wrid = calloc(rqcnt ? rqcnt : 1, sizeof(uint64_t));
			for (unsigned i = 0; i < rqcnt; i++)
				qp->rq.wrid[i] = 0x52000000ULL * (nqp) + i;
			qp->rq.tail = rqtail;
			if ((int)srqidx >= 0)
				qp->verbs_qp.qp.srq = &srqs[srqidx].vsrq.srq;
			if (version)
				store_uidx(uidx, qp);
			else
				mlx5_store_qp(&ctx, qpn, qp);
			continue;
		}
		if (sscanf(line, "srq %x %u %u", &srqn, &maxwr, &maxgs) == 3) {
			struct mlx5_srq *srq = &srqs[nsrq++];

			ctx.max_srq_recv_wr = 1 << 20;
			ctx.max_recv_wr = 1 << 20;
			if (make_srq(srq, maxwr, maxgs))
				die("srq");
			srq->srqn = srqn;
			for (int i = 0; i < srq->max; i++)
				srq->wrid[i] = 0x53000000ULL * nsrq + i;
			if (!version)
				store_srq(srqn, srq);
			continue;
		}
		if (sscanf(line, "cqe %x %199s", &slot, cqehex) == 2) {
			if (slot >= entries)
				die("cqe slot");
			unhex(cqehex, ring + slot * 64, 64);
			continue;
		}
		if (sscanf(line, "poll %u", &n) == 1) {
			int ret;

			if (n > 64)
				die("poll");
			memset(wc, 0xff, sizeof(wc));
			ret = version ? mlx5_poll_cq_v1(&cq.verbs_cq.cq, n, wc) :
					mlx5_poll_cq(&cq.verbs_cq.cq, n, wc);
			printf("poll %d\n", ret);
			for (int i = 0; i < ret; i++)
				printf("wc %" PRIx64 " %x %x %x %x %x %x %x %x %x %x %x %x\n",
				       wc[i].wr_id, wc[i].status, wc[i].opcode,
				       wc[i].vendor_err, wc[i].byte_len,
				       wc[i].imm_data, wc[i].qp_num, wc[i].src_qp,
				       wc[i].wc_flags, wc[i].pkey_index, wc[i].slid,
				       wc[i].sl, wc[i].dlid_path_bits);
			printf("ci %x\n", cq.cons_index);
			hex("db", dbrec, 8);
			for (int i = 0; i < nqp; i++)
				printf("tails %x %x\n", qps[i].sq.tail, qps[i].rq.tail);
			for (int i = 0; i < nsrq; i++)
				print_srq(&srqs[i], dbrec);
			continue;
		}
		if (sscanf(line, "bench %u %lf", &n, &ms) == 2) {
			if (n > 16 || nqp < 1)
				die("bench");
			take_locks(&cq.lock);
			cq_bench(&cq, &qps[0], ring, entries, version, n, ms);
			continue;
		}
		if (sscanf(line, "arm %u", &sol) == 1) {
			mlx5_arm_cq(&cq.verbs_cq.cq, sol);
			hex("db", dbrec, 8);
			hex("uar", uar + MLX5_CQ_DOORBELL, 8);
			continue;
		}
		if (!strcmp(line, "event")) {
			mlx5_cq_event(&cq.verbs_cq.cq);
			continue;
		}
		die("cq op");
	}
	for (int i = 0; i < nqp; i++) {
		free(qps[i].sq.wrid);
		free(qps[i].sq.wqe_head);
		free(qps[i].sq.wr_data);
		free(qps[i].rq.wrid);
	}
	for (int i = 0; i < nsrq; i++) {
		free(srqs[i].wrid);
		free(srqs[i].buf.buf);
	}
	clear_tables();
	free(ring);
}

/* ---- the create commands' driver data ---- */

/* The kernel side of CREATE_QP / CREATE_CQ / CREATE_SRQ as libmlx5 meets
 * it: the ibv_cmd_* calls print the command libmlx5 built (the core
 * fields it passes and the driver data, with the ring's and the doorbell
 * record's addresses checked against the buffers libmlx5 allocated and
 * then zeroed) and answer with the case's numbers. */
static int32_t case_uidx;
static uint32_t case_num, case_bfreg;
static __be32 case_dbrec[16] __attribute__((aligned(64)));
static struct mlx5_bf case_bfs[32];

__be32 *mlx5_alloc_dbrec(struct mlx5_context *context, struct ibv_pd *pd,
			 bool *custom_alloc)
{
	fill((uint8_t *)case_dbrec, sizeof(case_dbrec), 7);
	*custom_alloc = false;
	return case_dbrec;
}

void mlx5_free_db(struct mlx5_context *context, __be32 *db, struct ibv_pd *pd,
		  bool custom)
{
}

int32_t mlx5_store_uidx(struct mlx5_context *c, void *rsc)
{
	store_uidx(case_uidx, rsc);
	return case_uidx;
}

static void print_drv(const void *cmd, size_t core, size_t size,
		      const void *buf, const void *db)
{
	uint8_t d[256];
	uint64_t a, b;
	size_t n = size - core;

	if (n > sizeof(d))
		die("driver data");
	memcpy(d, (const uint8_t *)cmd + core, n);
	memcpy(&a, d, 8);
	memcpy(&b, d + 8, 8);
	printf("drvlen %zu buf %s db %s\n", n,
	       a == (uintptr_t)buf ? "ring" : "other",
	       b == (uintptr_t)db ? "dbrec" : "other");
	memset(d, 0, 16);
	hex("drv", d, n);
}

int ibv_cmd_create_qp_ex(struct ibv_context *context, struct verbs_qp *qp,
			 struct ibv_qp_init_attr_ex *attr_ex,
			 struct ibv_create_qp *cmd, size_t cmd_size,
			 struct ib_uverbs_create_qp_resp *resp, size_t resp_size)
{
	struct mlx5_qp *mqp = container_of(qp, struct mlx5_qp, verbs_qp);
	struct mlx5_create_qp_resp *r =
		container_of(resp, struct mlx5_create_qp_resp, ibv_resp);

	printf("core %u %u %u %u %u %d %d %d\n", attr_ex->cap.max_send_wr,
	       attr_ex->cap.max_recv_wr, attr_ex->cap.max_send_sge,
	       attr_ex->cap.max_recv_sge, attr_ex->cap.max_inline_data,
	       attr_ex->sq_sig_all, attr_ex->qp_type, attr_ex->srq != NULL);
	print_drv(cmd, sizeof(*cmd), cmd_size, mqp->buf.buf, mqp->db);
	hex("dbrec", case_dbrec, 8);
	qp->qp.qp_num = case_num;
	r->bfreg_index = case_bfreg;
	return 0;
}

int ibv_cmd_create_cq_ex(struct ibv_context *context,
			 const struct ibv_cq_init_attr_ex *cq_attr,
			 struct verbs_cq *cq, struct ibv_create_cq_ex *cmd,
			 size_t cmd_size, struct ib_uverbs_ex_create_cq_resp *resp,
			 size_t resp_size, uint32_t cmd_flags)
{
	struct mlx5_cq *mcq = container_of(cq, struct mlx5_cq, verbs_cq);
	struct mlx5_create_cq_ex_resp *r =
		container_of(resp, struct mlx5_create_cq_ex_resp, ibv_resp);

	printf("core %u\n", cq_attr->cqe);
	print_drv(cmd, sizeof(*cmd), cmd_size, mcq->buf_a.buf, mcq->dbrec);
	hex("dbrec", case_dbrec, 8);
	r->cqn = case_num;
	return 0;
}

int ibv_cmd_create_srq(struct ibv_pd *pd, struct ibv_srq *srq,
		       struct ibv_srq_init_attr *attr, struct ibv_create_srq *cmd,
		       size_t cmd_size, struct ib_uverbs_create_srq_resp *resp,
		       size_t resp_size)
{
	struct mlx5_srq *msrq = container_of(srq, struct mlx5_srq, vsrq.srq);
	struct mlx5_create_srq_resp *r =
		container_of(resp, struct mlx5_create_srq_resp, ibv_resp);

	printf("core %u %u %u\n", attr->attr.max_wr, attr->attr.max_sge,
	       attr->attr.srq_limit);
	print_drv(cmd, sizeof(*cmd), cmd_size, msrq->buf.buf, msrq->db);
	hex("dbrec", case_dbrec, 4);
	r->srqn = case_num;
	return 0;
}

static void init_cmd_context(unsigned cqev)
{
	ctx.cqe_version = cqev;
	ctx.flags = MLX5_CTX_FLAGS_NO_KERN_DYN_UAR;
	ctx.bfs = case_bfs;
	for (int i = 0; i < 32; i++) {
		case_bfs[i].reg = uar + 0x800 + (i % 4) * 256;
		case_bfs[i].buf_size = i ? 128 : 0;
		case_bfs[i].uuarn = i;
	}
}

static void qpcmd_case(void)
{
	unsigned type, swr, ssge, sinl, rwr, rsge, sigall, cqev, uidx, qpn,
		bfreg, sqdesc, rqdesc, wqebb, devrwr;
	struct ibv_qp_init_attr_ex attr;
	static struct mlx5_pd pd;
	struct ibv_qp *qp;

	if (sscanf(line, "qpcmd %u %u %u %u %u %u %u %u %x %x %u %u %u %u %u",
		   &type, &swr, &ssge, &sinl, &rwr, &rsge, &sigall, &cqev, &uidx,
		   &qpn, &bfreg, &sqdesc, &rqdesc, &wqebb, &devrwr) != 15)
		die("qpcmd");
	init_cmd_context(cqev);
	ctx.max_sq_desc_sz = sqdesc;
	ctx.max_rq_desc_sz = rqdesc;
	ctx.max_send_wqebb = wqebb;
	ctx.max_recv_wr = devrwr;
	case_uidx = uidx;
	case_num = qpn;
	case_bfreg = bfreg;
	memset(&pd, 0, sizeof(pd));
	pd.ibv_pd.context = &ctx.ibv_ctx.context;
	memset(&attr, 0, sizeof(attr));
	attr.qp_type = type;
	attr.sq_sig_all = sigall;
	attr.cap.max_send_wr = swr;
	attr.cap.max_send_sge = ssge;
	attr.cap.max_inline_data = sinl;
	attr.cap.max_recv_wr = rwr;
	attr.cap.max_recv_sge = rsge;
	attr.pd = &pd.ibv_pd;
	attr.comp_mask = IBV_QP_INIT_ATTR_PD;
	/* Without scatter-to-CQE, which the provider never asks for
	 * (docs/mlx5.md §10). */
	setenv("MLX5_SCATTER_TO_CQE", "0", 1);
	qp = create_qp(&ctx.ibv_ctx.context, &attr, NULL);
	if (!qp) {
		printf("qpcmd -1\n");
	} else {
		struct mlx5_qp *mqp = to_mqp(qp);

		printf("caps %u %u %u %d bf %d\n", attr.cap.max_send_wr,
		       attr.cap.max_recv_wr, attr.cap.max_recv_sge,
		       (int)attr.cap.max_inline_data, (int)(mqp->bf - case_bfs));
		free(mqp->sq.wrid);
		free(mqp->sq.wr_data);
		free(mqp->sq.wqe_head);
		free(mqp->rq.wrid);
		free(mqp->buf.buf);
		free(mqp);
	}
	clear_tables();
	while (next_line() && strcmp(line, "end"))
		;
}

static void cqcmd_case(void)
{
	unsigned depth, cqn;
	struct ibv_cq *cq;

	if (sscanf(line, "cqcmd %u %x", &depth, &cqn) != 2)
		die("cqcmd");
	init_cmd_context(1);
	case_num = cqn;
	cq = mlx5_create_cq(&ctx.ibv_ctx.context, depth, NULL, 0);
	if (!cq) {
		printf("cqcmd -1\n");
	} else {
		struct mlx5_cq *mcq = to_mcq(cq);

		printf("cqn %x\n", mcq->cqn);
		free(mcq->buf_a.buf);
		free(mcq);
	}
	while (next_line() && strcmp(line, "end"))
		;
}

static void srqcmd_case(void)
{
	unsigned maxwr, maxsge, devsrqwr, devrecvwr, rqdesc, srqn;
	struct ibv_srq_init_attr attr;
	static struct mlx5_pd pd;
	struct ibv_srq *srq;

	if (sscanf(line, "srqcmd %u %u %u %u %u %x", &maxwr, &maxsge, &devsrqwr,
		   &devrecvwr, &rqdesc, &srqn) != 6)
		die("srqcmd");
	init_cmd_context(1);
	ctx.max_srq_recv_wr = devsrqwr;
	ctx.max_recv_wr = devrecvwr;
	ctx.max_rq_desc_sz = rqdesc;
	case_num = srqn;
	memset(&pd, 0, sizeof(pd));
	pd.ibv_pd.context = &ctx.ibv_ctx.context;
	memset(&attr, 0, sizeof(attr));
	attr.attr.max_wr = maxwr;
	attr.attr.max_sge = maxsge;
	srq = mlx5_create_srq(&pd.ibv_pd, &attr);
	if (!srq) {
		printf("srqcmd -1\n");
	} else {
		struct mlx5_srq *msrq = to_msrq(srq);

		printf("reported %u %u\n", attr.attr.max_wr, attr.attr.max_sge);
		free(msrq->wrid);
		free(msrq->buf.buf);
		free(msrq);
	}
	clear_tables();
	while (next_line() && strcmp(line, "end"))
		;
}


int main(void)
{
	init_context();
	ctx.dbg_fp = fopen("/dev/null", "w");
	while (next_line()) {
		if (!strncmp(line, "case ", 5)) {
			printf("%s\n", line);
			if (!next_line())
				die("case body");
			if (!strncmp(line, "sq ", 3))
				sq_case();
			else if (!strncmp(line, "rq ", 3))
				rq_case();
			else if (!strncmp(line, "srq ", 4))
				srq_case();
			else if (!strncmp(line, "qpsize ", 7))
				size_case();
			else if (!strncmp(line, "srqsize ", 8))
				srqsize_case();
			else if (!strncmp(line, "cq ", 3))
				cq_case();
			else if (!strncmp(line, "ah ", 3))
				ah_case();
			else if (!strncmp(line, "cqinit ", 7))
				cqinit_case();
			else if (!strncmp(line, "qpcmd ", 6))
				qpcmd_case();
			else if (!strncmp(line, "cqcmd ", 6))
				cqcmd_case();
			else if (!strncmp(line, "srqcmd ", 7))
				srqcmd_case();
			else
				die("case kind");
			printf("end\n");
		} else if (line[0]) {
			die("expected a case");
		}
	}
	return 0;
}
