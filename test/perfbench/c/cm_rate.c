// cm_rate is the C side of the connection-rate rows (BENCHMARKS.md,
// "Connection rate"), written against librdmacm alone.
//
// Server (-b ADDR): one event channel for the listener and all its
// connections, one thread taking its events, as rdma_server-style
// servers are written: on CONNECT_REQUEST a QP (rdma_create_qp with
// librdmacm's PD and CQs: one send and one receive work request of one
// SGE) and rdma_accept; on DISCONNECTED rdma_disconnect (the reply),
// rdma_destroy_qp and rdma_destroy_id. It runs until it is killed.
//
// Client (-s ADDR): -n threads, each setting up and tearing down one
// connection after another for -t seconds with librdmacm's synchronous
// calls (rdma_getaddrinfo once, then rdma_create_ep with the same QP,
// rdma_connect, rdma_disconnect, rdma_destroy_ep). It prints
// "connections N seconds S failures F".
//
//	cm_rate -b ADDR [-p PORT]
//	cm_rate -s ADDR [-p PORT] [-n THREADS] [-t SECONDS]
//
// Build: gcc -O2 -o cm_rate cm_rate.c -lrdmacm -libverbs -lpthread
// (Debian: librdmacm-dev).
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

static const char *port = "7471";
static int threads = 16;
static int seconds = 10;
static struct rdma_addrinfo *rai;
static atomic_long connections, failures;
static struct timespec deadline;

static void qp_attr(struct ibv_qp_init_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->cap.max_send_wr = 1;
	a->cap.max_recv_wr = 1;
	a->cap.max_send_sge = 1;
	a->cap.max_recv_sge = 1;
	a->qp_type = IBV_QPT_RC;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static int serve(const char *addr)
{
	struct rdma_addrinfo hints = {.ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP};
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen_id;
	struct rdma_cm_event *ev;
	struct ibv_qp_init_attr attr;

	if (rdma_getaddrinfo(addr, port, &hints, &rai)) {
		perror("rdma_getaddrinfo");
		return 1;
	}
	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &listen_id, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(listen_id, rai->ai_src_addr) || rdma_listen(listen_id, 0)) {
		perror("listen");
		return 1;
	}
	for (;;) {
		struct rdma_cm_id *id;

		if (rdma_get_cm_event(ch, &ev)) {
			perror("rdma_get_cm_event");
			return 1;
		}
		id = ev->id;
		switch (ev->event) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			qp_attr(&attr);
			if (rdma_create_qp(id, NULL, &attr) || rdma_accept(id, NULL)) {
				perror("accept");
				rdma_reject(id, NULL, 0);
				rdma_ack_cm_event(ev);
				if (id->qp)
					rdma_destroy_qp(id);
				rdma_destroy_id(id);
				continue;
			}
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
		case RDMA_CM_EVENT_CONNECT_ERROR:
		case RDMA_CM_EVENT_UNREACHABLE:
		case RDMA_CM_EVENT_REJECTED:
			// The event must be acknowledged before its ID is destroyed
			// (rdma_destroy_id waits for the acknowledgements).
			rdma_ack_cm_event(ev);
			rdma_disconnect(id);
			rdma_destroy_qp(id);
			rdma_destroy_id(id);
			continue;
		default:
			break;
		}
		rdma_ack_cm_event(ev);
	}
}

static void *dial(void *arg)
{
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *id;

	(void)arg;
	while (now() < deadline.tv_sec + deadline.tv_nsec / 1e9) {
		qp_attr(&attr);
		if (rdma_create_ep(&id, rai, NULL, &attr)) {
			atomic_fetch_add(&failures, 1);
			continue;
		}
		if (rdma_connect(id, NULL)) {
			atomic_fetch_add(&failures, 1);
		} else {
			atomic_fetch_add(&connections, 1);
			rdma_disconnect(id);
		}
		rdma_destroy_ep(id);
	}
	return NULL;
}

static int client(const char *addr)
{
	struct rdma_addrinfo hints = {.ai_port_space = RDMA_PS_TCP};
	pthread_t *t;
	double start;
	int i;

	if (rdma_getaddrinfo(addr, port, &hints, &rai)) {
		perror("rdma_getaddrinfo");
		return 1;
	}
	t = calloc(threads, sizeof(*t));
	start = now();
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += seconds;
	for (i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, dial, NULL);
	for (i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	printf("connections %ld seconds %.3f failures %ld\n", atomic_load(&connections), now() - start,
	       atomic_load(&failures));
	return 0;
}

int main(int argc, char **argv)
{
	const char *bind = NULL, *server = NULL;
	int c;

	while ((c = getopt(argc, argv, "b:s:p:n:t:")) != -1) {
		switch (c) {
		case 'b': bind = optarg; break;
		case 's': server = optarg; break;
		case 'p': port = optarg; break;
		case 'n': threads = atoi(optarg); break;
		case 't': seconds = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: cm_rate -b ADDR [-p PORT] | -s ADDR [-p PORT] [-n THREADS] [-t SECONDS]\n");
			return 2;
		}
	}
	if (server)
		return client(server);
	if (bind)
		return serve(bind);
	fprintf(stderr, "usage: cm_rate -b ADDR [-p PORT] | -s ADDR [-p PORT] [-n THREADS] [-t SECONDS]\n");
	return 2;
}
