// close_many is the C counterpart of rsocket's BenchmarkCloseScaling:
// with N rsocket connection pairs open in this process, it connects one
// more pair ITERS times and times rclose of its client, then of its
// server, and prints the medians. It uses librdmacm's rsocket API alone,
// with 16 KiB buffers (rsocket doubles SO_SNDBUF and SO_RCVBUF, as the
// kernel does: 8 KiB asked for) and rsocket's other defaults; accepted
// sockets take the listener's sizes (librdmacm/rsocket.c rs_alloc).
//
//	close_many ADDR N [ITERS]
//
// ADDR is the IPv4 address to listen on and connect to. The rsocket
// functions are declared here as in <rdma/rsocket.h>, so only the
// library (librdmacm1) is needed: gcc -O2 -o close_many close_many.c
// -l:librdmacm.so.1 -lpthread.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int rsocket(int domain, int type, int protocol);
int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen);
int rlisten(int socket, int backlog);
int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen);
int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen);
int rclose(int socket);
int rsetsockopt(int socket, int level, int optname, const void *optval, socklen_t optlen);
int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen);

static int lfd;
static int *accepted;
static int naccepted, total;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void die(const char *what) {
	perror(what);
	exit(1);
}

static void sizes(int fd) {
	int v = 8 << 10;
	if (rsetsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v) || rsetsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v))
		die("rsetsockopt");
}

static void *acceptor(void *arg) {
	(void)arg;
	for (int i = 0; i < total; i++) {
		int fd = raccept(lfd, NULL, NULL);
		if (fd < 0)
			die("raccept");
		pthread_mutex_lock(&mu);
		accepted[naccepted++] = fd;
		pthread_cond_signal(&cv);
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}

// connect_pair connects connection k and returns its client and server.
static void connect_pair(struct sockaddr_in *sa, int k, int *c, int *s) {
	*c = rsocket(AF_INET, SOCK_STREAM, 0);
	if (*c < 0)
		die("rsocket");
	sizes(*c);
	if (rconnect(*c, (struct sockaddr *)sa, sizeof *sa))
		die("rconnect");
	pthread_mutex_lock(&mu);
	while (naccepted <= k)
		pthread_cond_wait(&cv, &mu);
	*s = accepted[k];
	pthread_mutex_unlock(&mu);
}

static double now_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: close_many ADDR N [ITERS]\n");
		return 2;
	}
	int n = atoi(argv[2]), iters = argc > 3 ? atoi(argv[3]) : 30;
	struct sockaddr_in sa = {.sin_family = AF_INET};
	if (inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1) {
		fprintf(stderr, "close_many: %s is not an IPv4 address\n", argv[1]);
		return 2;
	}
	total = n + iters;
	accepted = calloc(total, sizeof *accepted);
	lfd = rsocket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0)
		die("rsocket");
	sizes(lfd);
	if (rbind(lfd, (struct sockaddr *)&sa, sizeof sa) || rlisten(lfd, 128))
		die("rbind/rlisten");
	socklen_t len = sizeof sa;
	if (rgetsockname(lfd, (struct sockaddr *)&sa, &len))
		die("rgetsockname");
	pthread_t t;
	pthread_create(&t, NULL, acceptor, NULL);
	int c, s;
	for (int k = 0; k < n; k++)
		connect_pair(&sa, k, &c, &s);
	double *client = calloc(iters, sizeof *client), *server = calloc(iters, sizeof *server);
	for (int i = 0; i < iters; i++) {
		connect_pair(&sa, n + i, &c, &s);
		double t0 = now_ms();
		if (rclose(c))
			die("rclose client");
		double t1 = now_ms();
		if (rclose(s))
			die("rclose server");
		double t2 = now_ms();
		client[i] = t1 - t0;
		server[i] = t2 - t1;
	}
	qsort(client, iters, sizeof *client, cmp);
	qsort(server, iters, sizeof *server, cmp);
	printf("close_many n=%d iters=%d client-ms %.3f server-ms %.3f\n", n, iters, client[iters / 2], server[iters / 2]);
	pthread_join(t, NULL);
	return 0;
}
