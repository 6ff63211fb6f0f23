/*
 * The C side of make bench-native: rdma-core's rxe provider, its
 * providers/rxe/rxe.c compiled whole into this file from a checkout given at
 * build time (-DRXE_C="path"), posting and polling through ibv_post_send,
 * ibv_post_recv and ibv_poll_cq on rings laid out as rxe's kernel lays them
 * out (struct rxe_queue_buf of rdma_user_rxe.h: the header, then slots of
 * 1 << log2_elem_size bytes). A fake kernel only moves the ring indices, and
 * the doorbell write() of post_send_db returns at once. uverbs's
 * native_bench_test.go does the same work through our code; test/nativebench
 * runs both and compares.
 *
 * Usage: harness [-dump DIR] [-ms MILLISECONDS]
 *   prints "row NAME NS_PER_WR" per row; with -dump it writes each post
 *   row's WQE bytes, first post on fresh rings, to DIR/NAME.bin instead and
 *   prints the offsets of the send WQE's ssn and iova ("ssn_offset N"),
 *   which the comparison leaves out (docs/testing.md §7).
 */
#include <config.h>
#include <unistd.h>

/* The doorbell (providers/rxe/rxe.c post_send_db) is the provider's only
 * write(); here it does nothing, as on our side of the comparison. */
static long doorbells;
static ssize_t stub_doorbell(int fd, const void *buf, size_t n)
{
	(void)fd;
	(void)buf;
	doorbells++;
	return n;
}
#define write stub_doorbell
#include RXE_C
#undef write

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>

#define SLOTS 1024
#define LIST 32

/* The row names, shared with uverbs's BenchmarkNative. */
enum row { WRITE, WRITE_LIST, SEND_INLINE, UD_SEND, RECV, RECV_LIST, POLL_ONE, POLL_16, POLL_EMPTY, NROWS };
static const char *row_names[NROWS] = {
	"write", "write_list32", "send_inline", "ud_send", "recv", "recv_list32", "poll_one", "poll_16", "poll_empty",
};
/* Work requests per call, for ns per work request. */
static const int row_wrs[NROWS] = { 1, LIST, 1, 1, 1, LIST, 1, 16, 1 };

static unsigned ring_log2(size_t elem)
{
	unsigned l = 0;

	while ((1ul << l) < elem)
		l++;
	return l;
}

/* ring maps a zeroed ring of SLOTS slots of at least elem bytes. */
static struct rxe_queue_buf *ring(size_t elem)
{
	unsigned l = ring_log2(elem);
	size_t len = sizeof(struct rxe_queue_buf) + ((size_t)SLOTS << l);
	struct rxe_queue_buf *q = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (q == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	q->log2_elem_size = l;
	q->index_mask = SLOTS - 1;
	return q;
}

/* The kernel's consumer: it takes every WQE posted so far. */
static void kernel_consume(struct rxe_queue_buf *q)
{
	atomic_store_explicit(consumer(q), atomic_load_explicit(producer(q), memory_order_relaxed), memory_order_release);
}

/* The kernel's producer: n more completions. */
static void kernel_produce(struct rxe_queue_buf *q, unsigned n)
{
	unsigned p = atomic_load_explicit(producer(q), memory_order_relaxed);

	atomic_store_explicit(producer(q), (p + n) & q->index_mask, memory_order_release);
}

struct rig {
	struct verbs_context vctx;
	struct rxe_qp qp;   /* RC, max_send_sge 1, max_inline 64, max_recv_sge 1 */
	struct rxe_qp udqp; /* UD, the same limits */
	struct rxe_cq cq;
	struct rxe_ah ah;
	uint8_t *payload;   /* 64 bytes of inline data */
	struct ibv_sge sge, sges[LIST];
	struct ibv_send_wr wr_write, wr_list[LIST], wr_inline, wr_ud;
	struct ibv_recv_wr rwr, rwr_list[LIST];
	struct ibv_wc wc[16];
};

static void init_qp(struct rig *r, struct rxe_qp *qp, enum ibv_qp_type type)
{
	qp->vqp.qp.context = &r->vctx.context;
	qp->vqp.qp.qp_type = type;
	qp->vqp.qp.state = IBV_QPS_RTS;
	qp->vqp.qp.qp_num = 0x11;
	/* Slot sizes as rxe_qp.c sizes them: the WQE header and the larger of
	 * the SGE list and the inline data. */
	qp->sq.max_sge = 1;
	qp->sq.max_inline = 64;
	qp->sq.queue = ring(sizeof(struct rxe_send_wqe) + 64);
	pthread_spin_init(&qp->sq.lock, PTHREAD_PROCESS_PRIVATE);
	qp->rq.max_sge = 1;
	qp->rq.queue = ring(sizeof(struct rxe_recv_wqe) + sizeof(struct rxe_sge));
	pthread_spin_init(&qp->rq.lock, PTHREAD_PROCESS_PRIVATE);
}

static void init_rig(struct rig *r)
{
	int i;

	memset(r, 0, sizeof(*r));
	r->vctx.context.ops.post_send = rxe_post_send;
	r->vctx.context.ops.post_recv = rxe_post_recv;
	r->vctx.context.ops.poll_cq = rxe_poll_cq;
	r->vctx.context.cmd_fd = -1;
	init_qp(r, &r->qp, IBV_QPT_RC);
	init_qp(r, &r->udqp, IBV_QPT_UD);

	/* A CQ whose every slot holds a successful RDMA WRITE completion. */
	r->cq.vcq.cq.context = &r->vctx.context;
	r->cq.queue = ring(sizeof(struct ib_uverbs_wc));
	pthread_spin_init(&r->cq.lock, PTHREAD_PROCESS_PRIVATE);
	for (i = 0; i < SLOTS; i++) {
		struct ib_uverbs_wc *w = addr_from_index(r->cq.queue, i);

		w->wr_id = i + 1;
		w->opcode = IBV_WC_RDMA_WRITE;
		w->byte_len = 64;
		w->qp_num = 0x11;
	}

	r->payload = malloc(64);
	for (i = 0; i < 64; i++)
		r->payload[i] = i;
	r->ah.ah_num = 1;

	r->sge = (struct ibv_sge){ .addr = 0x10000, .length = 64, .lkey = 7 };
	r->wr_write = (struct ibv_send_wr){
		.wr_id = 1, .sg_list = &r->sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED, .wr.rdma = { .remote_addr = 0x20000, .rkey = 9 },
	};
	for (i = 0; i < LIST; i++) {
		r->sges[i] = (struct ibv_sge){ .addr = 0x10000 + 64 * i, .length = 64, .lkey = 7 };
		r->wr_list[i] = (struct ibv_send_wr){
			.wr_id = i + 1, .next = i + 1 < LIST ? &r->wr_list[i + 1] : NULL,
			.sg_list = &r->sges[i], .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
			.send_flags = i + 1 == LIST ? IBV_SEND_SIGNALED : 0,
			.wr.rdma = { .remote_addr = 0x20000 + 64 * i, .rkey = 9 },
		};
		r->rwr_list[i] = (struct ibv_recv_wr){
			.wr_id = i + 1, .next = i + 1 < LIST ? &r->rwr_list[i + 1] : NULL,
			.sg_list = &r->sges[i], .num_sge = 1,
		};
	}
	r->wr_inline = (struct ibv_send_wr){
		.wr_id = 2, .opcode = IBV_WR_SEND, .num_sge = 1,
		.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE,
	};
	r->rwr = (struct ibv_recv_wr){ .wr_id = 4, .sg_list = &r->sge, .num_sge = 1 };
	r->wr_ud = (struct ibv_send_wr){
		.wr_id = 3, .sg_list = &r->sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.ud = { .ah = &r->ah.ibv_ah, .remote_qpn = 0x22, .remote_qkey = 0x11111111 },
	};
}

/* The inline SGE points at payload, which init_rig allocates. */
static struct ibv_sge inline_sge;

static void fail(const char *what, int err)
{
	fprintf(stderr, "harness: %s failed: %s\n", what, strerror(err));
	exit(1);
}

/* once does one call of a row: the post or the poll, and what the fake
 * kernel does around it. Inlined with a constant row (measure's loops),
 * its switch folds away. */
static inline __attribute__((always_inline)) void once(struct rig *r, enum row row)
{
	struct ibv_send_wr *bad;
	struct ibv_recv_wr *rbad;
	int err = 0, n;

	switch (row) {
	case WRITE:
		err = ibv_post_send(&r->qp.vqp.qp, &r->wr_write, &bad);
		kernel_consume(r->qp.sq.queue);
		break;
	case WRITE_LIST:
		err = ibv_post_send(&r->qp.vqp.qp, &r->wr_list[0], &bad);
		kernel_consume(r->qp.sq.queue);
		break;
	case SEND_INLINE:
		err = ibv_post_send(&r->qp.vqp.qp, &r->wr_inline, &bad);
		kernel_consume(r->qp.sq.queue);
		break;
	case UD_SEND:
		err = ibv_post_send(&r->udqp.vqp.qp, &r->wr_ud, &bad);
		kernel_consume(r->udqp.sq.queue);
		break;
	case RECV:
		err = ibv_post_recv(&r->qp.vqp.qp, &r->rwr, &rbad);
		kernel_consume(r->qp.rq.queue);
		break;
	case RECV_LIST:
		err = ibv_post_recv(&r->qp.vqp.qp, &r->rwr_list[0], &rbad);
		kernel_consume(r->qp.rq.queue);
		break;
	case POLL_ONE:
		kernel_produce(r->cq.queue, 1);
		if ((n = ibv_poll_cq(&r->cq.vcq.cq, 16, r->wc)) != 1 || r->wc[0].status != IBV_WC_SUCCESS) {
			fprintf(stderr, "harness: poll_one polled %d\n", n);
			exit(1);
		}
		break;
	case POLL_16:
		kernel_produce(r->cq.queue, 16);
		if ((n = ibv_poll_cq(&r->cq.vcq.cq, 16, r->wc)) != 16) {
			fprintf(stderr, "harness: poll_16 polled %d\n", n);
			exit(1);
		}
		break;
	case POLL_EMPTY:
		if ((n = ibv_poll_cq(&r->cq.vcq.cq, 16, r->wc)) != 0) {
			fprintf(stderr, "harness: poll_empty polled %d\n", n);
			exit(1);
		}
		break;
	default:
		break;
	}
	if (err)
		fail(row_names[row], err);
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* measure runs a row for about ms milliseconds and returns ns per work
 * request. */
static double measure(struct rig *r, enum row row, double ms)
{
	long n = 1000, i;
	double t0, dt;

	for (;;) {
		t0 = now_ns();
		/* The row chosen once, outside the loop, as the Go side's run. */
		switch (row) {
#define LOOP(ROW) case ROW: for (i = 0; i < n; i++) once(r, ROW); break
		LOOP(WRITE);
		LOOP(WRITE_LIST);
		LOOP(SEND_INLINE);
		LOOP(UD_SEND);
		LOOP(RECV);
		LOOP(RECV_LIST);
		LOOP(POLL_ONE);
		LOOP(POLL_16);
		LOOP(POLL_EMPTY);
#undef LOOP
		default:
			break;
		}
		dt = now_ns() - t0;
		if (dt >= ms * 1e6)
			return dt / ((double)n * row_wrs[row]);
		n = dt < 1e6 ? n * 100 : (long)(n * ms * 1.2e6 / dt);
	}
}

/* dump writes the slots a row's first post writes, on fresh rings. */
static void dump(const char *dir, enum row row)
{
	struct rig r;
	struct rxe_queue_buf *q;
	char path[4096];
	FILE *f;
	int slots = row_wrs[row];

	init_rig(&r);
	switch (row) {
	case UD_SEND:
		q = r.udqp.sq.queue;
		break;
	case RECV:
	case RECV_LIST:
		q = r.qp.rq.queue;
		break;
	default:
		q = r.qp.sq.queue;
		break;
	}
	inline_sge = (struct ibv_sge){ .addr = (uintptr_t)r.payload, .length = 64 };
	r.wr_inline.sg_list = &inline_sge;
	once(&r, row);
	snprintf(path, sizeof(path), "%s/%s.bin", dir, row_names[row]);
	f = fopen(path, "w");
	if (!f || fwrite(q->data, (size_t)slots << q->log2_elem_size, 1, f) != 1 || fclose(f)) {
		perror(path);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	const char *dumpdir = NULL;
	double ms = 200;
	struct rig *r;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-dump") && i + 1 < argc)
			dumpdir = argv[++i];
		else if (!strcmp(argv[i], "-ms") && i + 1 < argc)
			ms = atof(argv[++i]);
		else {
			fprintf(stderr, "usage: %s [-dump DIR] [-ms MILLISECONDS]\n", argv[0]);
			return 2;
		}
	}
	if (dumpdir) {
		for (i = WRITE; i <= RECV_LIST; i++)
			dump(dumpdir, i);
		printf("ssn_offset %zu\n", offsetof(struct rxe_send_wqe, ssn));
		printf("iova_offset %zu\n", offsetof(struct rxe_send_wqe, iova));
		return 0;
	}
	r = malloc(sizeof(*r));
	init_rig(r);
	inline_sge = (struct ibv_sge){ .addr = (uintptr_t)r->payload, .length = 64 };
	r->wr_inline.sg_list = &inline_sge;
	for (i = 0; i < NROWS; i++) {
		measure(r, i, ms / 10); /* warm up */
		printf("row %s %.2f\n", row_names[i], measure(r, i, ms));
	}
	if (doorbells == 0) {
		fprintf(stderr, "harness: the provider rang no doorbell\n");
		return 1;
	}
	return 0;
}
