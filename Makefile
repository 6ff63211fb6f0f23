# goverbs: RDMA for Go without cgo.
#
#   make test          unit tests on this machine (again with the race
#                      detector), then every package's tests in the rxe lab
#                      (QEMU + Debian 6.1 kernel with rdma_rxe)
#   make test-kernels  the same, in the lab on each of KERNELS (6.1, 6.12,
#                      6.18 and the newest series Debian serves), then once
#                      more on 6.12 with the race detector, then make
#                      test-arm64's lab part on each of ARM64_KERNELS (6.12,
#                      newest), then make lab-survey on 5.10
#   make lab-survey    every lab package on KERNEL (make lab-survey
#                      KERNEL=5.10, as make test-kernels runs it), each
#                      bounded in time, reported as a list of what passes and
#                      what fails; never fails itself (docs/testing.md §10)
#   make test-arm64    every package's tests built with GOARCH=arm64, in the
#                      arm64 lab (qemu-system-aarch64, Debian's arm64 6.12
#                      kernel and userland); ARM64_KERNEL=6.1 picks the other
#   make bench         Go benchmarks in the lab (BENCH=regexp picks them, e.g.
#                      BENCH=VersusRdmaCore), the library's own cost on this
#                      machine, then rdma-perf against C perftest in the lab;
#                      the ratios go into BENCHMARKS.md; then cmd/cmtime against
#                      rdma-core's cmtime (make bench-cmtime runs only that),
#                      then connections per second from 16 dialers, ours and
#                      librdmacm's (cm_rate.c, built with gcc and
#                      librdmacm-dev; make bench-connrate runs only that),
#                      then cmd/rstream against rdma-core's rstream, over
#                      rsocket and over TCP (make bench-rstream runs only that),
#                      then write_bw and send_bw with 1, 8 and 64 QPs against
#                      perftest's -q, and send_lat's round-robin ping-pong over
#                      as many QPs against lat_many, a C program of ours built
#                      with gcc and libibverbs-dev (installed when missing)
#                      (make bench-scale runs only that), then NVMe over RDMA:
#                      cmd/nvmeof perf (as it starts and with GOMAXPROCS=1)
#                      against fio on the kernel's host, and our target
#                      against the kernel's, served to fio (make
#                      bench-nvmeof runs only that)
#   make bench-native  the user-space cost of posting and polling, natively
#                      here: rdma-core's rxe provider (v44.0 and v64.0, built
#                      with gcc from a fetched checkout) against uverbs, the
#                      same work requests, WQE bytes checked identical, and
#                      the same rows on mlx5 against libmlx5 (v44.0, through
#                      test/mlx5diff); into BENCHMARKS.md (not part of make
#                      test; needs gcc and python3)
#   make tutorials-c   rdma-server and rdma-client against the tutorials' own
#                      C programs, in the lab on 6.1 and 6.12, over rxe and
#                      siw: fetches the three tutorials at pinned commits
#                      and builds them with gcc, libibverbs-dev and
#                      librdmacm-dev (installed when missing; not part of
#                      make test)
#   make demo          the programs, run in the lab
#   make fuzz          every fuzz target of the module, FUZZTIME (2m) each;
#                      their seed corpora also run as ordinary tests in make test
#   make apicheck      the exported API against the snapshot in api/ (part of
#                      make test); make apicheck-update rewrites it
#   make goos          the module, its programs and examples/grpc build for
#                      darwin, windows and freebsd, where every entry point
#                      fails with ErrNotSupported (tested here under the
#                      build tag goverbs_notlinux); another GOARCH than amd64
#                      and arm64 still stops the build (part of make test)
#   make dist          release archives: the programs, static, for linux/amd64
#                      and linux/arm64, in dist/ with SHA256SUMS
#
# Nothing needs installing by hand: Go modules come through the module proxy,
# and the lab installs QEMU, the Debian kernels and rdma-core's tools itself,
# and builds siw.ko for the kernels (installing make, gcc-12 and libelf1 if
# missing).

GO      ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
KERNEL  ?= 6.1
ARM64_KERNEL ?= 6.12
# The kernels make test-kernels runs every lab test on (rxelab -kernel
# takes any series Debian serves, or newest).
KERNELS       ?= 6.1 6.12 6.18 newest
ARM64_KERNELS ?= 6.12 newest
BENCH   ?= .
LAB     := $(CURDIR)/bin/rxelab
# Packages whose tests run inside the lab (the lab's own tests and
# test/static's run on the host).
LAB_PKGS = $(shell $(GO) list ./... | grep -v -e '/test/lab' -e '/test/rxelab' -e '/test/static')
# Tests named TestTwoGuest* need a second guest (test/lab/peer: host loss);
# they run in the two-guest lab, every other test in the one-guest lab.
TWO_GUEST = ^TestTwoGuest
TWO_GUEST_PKGS = $(shell grep -rl --include='*_test.go' 'func TestTwoGuest' . | xargs -r -n1 dirname | sort -u | grep -v '^./test/')

export CGO_ENABLED := 0
# No VCS stamping: a checkout owned by another user, or one without git, must
# still build. The Go in use builds, rather than one go.mod would download.
GOFLAGS     ?= -buildvcs=false
GOTOOLCHAIN ?= local
export GOFLAGS GOTOOLCHAIN

.PHONY: lab-survey noelf all build vet staticcheck apicheck apicheck-update goos dist nocgo static race-cc inlining unit lab-bin lab lab-race lab-arm64 test test-kernels test-arm64 bench bench-cmtime bench-connrate cm-rate bench-rstream bench-scale lat-many bench-nvmeof bench-close bench-native tutorials-c demo fuzz clean mlx5diff hwcheck

all: build

build:
	$(GO) build ./...

vet:
	$(GO) vet ./...

# The exported API of rdma (the root), uverbs, rdmacm, rsocket and netlinkrdma against the
# snapshot in api/ (CONTRIBUTING.md, "The API snapshot"); apicheck-update
# rewrites the snapshot after a deliberate change.
apicheck:
	GO=$(GO) ./api/api.sh check
	GO=$(GO) ./api/api.sh selftest

apicheck-update:
	GO=$(GO) ./api/api.sh update

# Other systems: RDMA here is Linux's (uverbs, rdma_cm, NETLINK_RDMA), but the
# module builds on GOOS_TARGETS so that programs importing it type-check
# there, and every entry point fails with an error matching ErrNotSupported
# (internal/unix). test/notlinux asserts that; it is compiled for each target
# (nothing runs it there) and run here under the build tag goverbs_notlinux,
# which builds the non-Linux files on Linux. A GOARCH without device
# barriers must still stop the build with internal/mmio's message.
GOOS_TARGETS = darwin/arm64 windows/amd64 freebsd/amd64
goos:
	@set -e; for t in $(GOOS_TARGETS); do \
		echo "GOOS=$${t%/*} GOARCH=$${t#*/}: go build ./..., examples/grpc, go vet and go test -c ./test/notlinux"; \
		export GOOS=$${t%/*} GOARCH=$${t#*/}; \
		$(GO) build ./...; \
		(cd examples/grpc && $(GO) build -o /dev/null ./...); \
		$(GO) vet ./internal/unix ./test/notlinux; \
		$(GO) test -c -o /dev/null ./test/notlinux; \
	done
	$(GO) build -tags goverbs_notlinux ./...
	$(GO) test -count=1 -tags goverbs_notlinux ./internal/unix ./test/notlinux
	@if out=$$(GOARCH=riscv64 $(GO) build ./uverbs 2>&1); then \
		echo "GOARCH=riscv64: the build should have stopped in internal/mmio"; exit 1; \
	fi; \
	echo "$$out" | grep -q internal_mmio_supports_only_GOARCH_amd64_and_arm64 || \
		{ echo "$$out"; echo "GOARCH=riscv64: internal/mmio's message is missing"; exit 1; }

# staticcheck, pinned, run through the module proxy (nothing to install):
# the whole module with its tests, and examples/grpc.
STATICCHECK = honnef.co/go/tools/cmd/staticcheck@v0.8.2
staticcheck:
	$(GO) run $(STATICCHECK) ./...
	cd examples/grpc && $(GO) run $(STATICCHECK) ./...

# No Go file may use cgo, not even one left out of the build: the module must
# build and run without a C toolchain. (The cgo -godefs input of
# internal/abi is kept as internal/abi/internal/gen/godefs_input.go.in.)
nocgo:
	@cgo=$$(CGO_ENABLED=1 $(GO) list -f '{{if .CgoFiles}}{{.ImportPath}}{{end}}' ./...) || exit 1; \
	if [ -n "$$cgo" ]; then echo "cgo is not allowed; these packages use it:"; echo "$$cgo"; exit 1; fi
	@if grep -rlE --include='*.go' '^import "C"|^[[:space:]]+"C"$$' .; then \
		echo 'cgo is not allowed: the files above import "C"'; exit 1; fi

# No tracked file may be a compiled program (an ELF file): programs are
# built (bin/, dist/), never committed. Outside a git checkout nothing is
# tracked, and there is nothing to check.
noelf:
	@if git rev-parse --git-dir >/dev/null 2>&1; then \
		elf=$$(git ls-files -z | xargs -0 -r sh -c 'for f; do [ -f "$$f" ] && [ "$$(head -c4 "$$f" | od -An -c | tr -d " ")" = "177ELF" ] && echo "$$f"; done; true' sh); \
		if [ -n "$$elf" ]; then echo "compiled programs are tracked; build them instead (git rm --cached FILE):"; echo "$$elf"; exit 1; fi; \
	fi

# The programs are static binaries without cgo (CGO_ENABLED=0 above): every
# main package of the module and examples/grpc's, built as make builds them,
# must record CGO_ENABLED=0 and have no ELF interpreter or dynamic section
# (test/static reads them with debug/buildinfo and debug/elf).
PROGRAMS = $(shell $(GO) list -f '{{if eq .Name "main"}}{{.ImportPath}}{{end}}' ./...)
static:
	@mkdir -p bin
	$(GO) build -o bin/ $(PROGRAMS)
	cd examples/grpc && $(GO) build -o $(CURDIR)/bin/ ./...
	$(GO) run ./test/static $(addprefix bin/,$(notdir $(PROGRAMS))) bin/grpc

# The race detector's runtime is linked through cgo ("-race requires cgo"),
# so race-built test binaries, and only they, are built with CGO_ENABLED=1
# and need gcc and the C library's headers; installed with apt-get when
# gcc cannot link a C program, as the lab installs what it needs.
race-cc:
	@if ! echo 'int main(void) { return 0; }' | gcc -x c -o /dev/null - 2>/dev/null; then \
		if [ "$$(id -u)" != 0 ]; then \
			echo "go test -race needs gcc; install it with: sudo apt-get install -y gcc libc6-dev"; exit 1; \
		fi; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get -o DPkg::Lock::Timeout=600 update && \
		apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends gcc libc6-dev || \
			{ echo "installing gcc failed"; exit 1; }; \
	fi

# The hot path's small functions must stay within the compiler's inlining
# budget on amd64 and arm64 (test/inlining.sh names them).
inlining:
	GO=$(GO) test/inlining.sh

# GOVERBS_LAB_SELFTEST=1: the lab's own tests (test/rxelab) must run, never
# skip, so a run without root fails instead of passing without them.
unit: nocgo noelf vet staticcheck apicheck goos build static inlining race-cc
	GOVERBS_LAB_SELFTEST=1 $(GO) test -count=1 ./...
	# Once more with the race detector (docs/testing.md §8); the lab's
	# self-tests, which boot VMs, run only above.
	CGO_ENABLED=1 $(GO) test -race -count=1 ./...
	cd examples/grpc && $(GO) vet ./...

lab-bin:
	$(GO) build -o $(LAB) ./test/rxelab

# Tests named for siw (SIW_TESTS, below) need its devices; the lab builds
# siw.ko where the host can install the compiler of the kernel's headers
# (rxelab -prepare says whether it could, and why not), and they are left
# out on a kernel where it cannot (docs/testing.md §2 lists which).
# On SIW_KERNELS (Debian 12's, built with the host's own gcc-12) siw is
# required: a lab that could not build it there fails instead.
SIW_KERNELS = 6.1 6.12
SIW_SKIP = $$($(LAB) -kernel $(KERNEL) -prepare | grep -q '^siw: built' || echo '|$(SIW_TESTS)')
define lab-prepare
	@out=$$($(LAB) -kernel $(KERNEL) -prepare) || exit 1; printf '%s\n' "$$out"; \
	printf '%s\n' "$$out" | grep -q '^siw: built' || \
		case " $(SIW_KERNELS) " in *" $(KERNEL) "*) echo "siw is required on $(KERNEL), and the lab could not build it"; exit 1;; esac
endef
lab: lab-bin
	$(lab-prepare)
	$(GO) test -count=1 -p 1 -skip "$(TWO_GUEST)$(SIW_SKIP)" -exec "$(LAB) -kernel $(KERNEL)" $(LAB_PKGS)
	$(GO) test -count=1 -p 1 -run '$(TWO_GUEST)' -exec "$(LAB) -kernel $(KERNEL) -guests 2" $(TWO_GUEST_PKGS)
	cd examples/grpc && $(GO) test -count=1 -p 1 -exec "$(LAB) -kernel $(KERNEL)" ./...

# The same tests built with the race detector (cgo for the test binaries
# only, above; the guest runs them with the host's C library). Under TCG a
# race build runs several times slower: the lab gets 30 minutes a package.
lab-race: lab-bin race-cc
	$(lab-prepare)
	CGO_ENABLED=1 $(GO) test -race -count=1 -p 1 -timeout 40m -skip "$(TWO_GUEST)$(SIW_SKIP)" -exec "$(LAB) -kernel $(KERNEL) -timeout 30m" $(LAB_PKGS)

# The same tests built for arm64 (go test cross-compiles; the lab runs them
# in an arm64 guest under TCG, docs/testing.md §2). arm64 guests have no siw
# (the lab builds siw.ko for the amd64 kernels only), so the tests that need
# its devices, named for it, are left out there; the tests that run on
# every lab device pair run on rxe's.
SIW_TESTS = Siw|IWARP
lab-arm64: lab-bin
	GOARCH=arm64 $(GO) test -count=1 -p 1 -skip '$(TWO_GUEST)|$(SIW_TESTS)' -exec "$(LAB) -arch arm64 -kernel $(KERNEL)" $(LAB_PKGS)
	GOARCH=arm64 $(GO) test -count=1 -p 1 -run '$(TWO_GUEST)' -exec "$(LAB) -arch arm64 -kernel $(KERNEL) -guests 2" $(TWO_GUEST_PKGS)
	cd examples/grpc && GOARCH=arm64 $(GO) test -count=1 -p 1 -exec "$(LAB) -arch arm64 -kernel $(KERNEL)" ./...

test: unit
	$(MAKE) lab KERNEL=6.1

test-kernels: unit
	@for k in $(KERNELS); do $(MAKE) lab KERNEL=$$k || exit 1; done
	$(MAKE) lab-race KERNEL=6.12
	@for k in $(ARM64_KERNELS); do $(MAKE) lab-arm64 KERNEL=$$k || exit 1; done
	$(MAKE) lab-survey KERNEL=5.10

# Every lab package on a kernel the library does not promise to support
# (5.10): each package bounded (SURVEY_TIMEOUT, in minutes, in the guest; 3
# more for go test), so that a hang ends that package and not the run; the
# result is a list, printed and written to SURVEY_OUT, not a failure.
SURVEY_TIMEOUT ?= 8m
SURVEY_OUT     ?= /tmp/goverbs-survey-$(KERNEL)-$(shell id -u).txt
lab-survey: lab-bin
	$(LAB) -kernel $(KERNEL) -prepare
	GO=$(GO) LAB=$(LAB) test/lab-survey.sh $(KERNEL) $(SURVEY_TIMEOUT) $(SURVEY_OUT) $(LAB_PKGS)

test-arm64: nocgo
	GOARCH=arm64 $(GO) vet ./...
	$(MAKE) lab-arm64 KERNEL=$(ARM64_KERNEL)

# The lab writes only to /tmp, which it shares with this machine.
BENCH_OUT ?= /tmp/goverbs-perfbench-$(shell id -u).md
BENCH_CM_OUT ?= /tmp/goverbs-cmtime-$(shell id -u).md
BENCH_RS_OUT ?= /tmp/goverbs-rstream-$(shell id -u).md
BENCH_SC_OUT ?= /tmp/goverbs-scale-$(shell id -u).md
BENCH_CR_OUT ?= /tmp/goverbs-connrate-$(shell id -u).md
BENCH_NV_OUT ?= /tmp/goverbs-nvmeof-$(shell id -u).md
# The machine running the lab and its load, named beside the NVMe figures.
HOST_CPU = $(shell sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), $(shell nproc) CPUs, load average $(shell cut -d' ' -f1-3 /proc/loadavg) at the start

bench: lab-bin lat-many cm-rate
	$(GO) test -count=1 -p 1 -run '^$$' -bench '$(BENCH)' -benchmem -exec "$(LAB) -kernel $(KERNEL)" $(LAB_PKGS)
	@# The library's own cost, natively here (no device needed; under the
	@# lab's TCG these would be emulated instructions).
	$(GO) test -count=1 -run '^$$' -bench 'UserSpace|PollOne|PollEmpty' -benchmem ./uverbs > bin/bench-host.txt
	@cat bin/bench-host.txt
	$(GO) build -o bin/ ./cmd/rdma-perf ./cmd/cmtime ./cmd/rstream ./cmd/nvmeof ./test/perfbench
	$(LAB) -kernel $(KERNEL) -timeout 30m -- $(CURDIR)/bin/perfbench run -rdma-perf $(CURDIR)/bin/rdma-perf -out $(BENCH_OUT)
	$(LAB) -kernel $(KERNEL) -timeout 20m -- $(CURDIR)/bin/perfbench cmtime -cmtime $(CURDIR)/bin/cmtime -out $(BENCH_CM_OUT)
	$(LAB) -kernel $(KERNEL) -timeout 20m -- $(CURDIR)/bin/perfbench connrate -cm-rate $(CM_RATE) -out $(BENCH_CR_OUT)
	$(LAB) -kernel $(KERNEL) -timeout 20m -- $(CURDIR)/bin/perfbench rstream -rstream $(CURDIR)/bin/rstream -out $(BENCH_RS_OUT)
	$(LAB) -kernel $(KERNEL) -timeout 20m -- $(CURDIR)/bin/perfbench scale -rdma-perf $(CURDIR)/bin/rdma-perf -lat-many $(LAT_MANY) -out $(BENCH_SC_OUT)
	$(LAB) -kernel $(KERNEL) -timeout 20m -- $(CURDIR)/bin/perfbench nvmeof -nvmeof $(CURDIR)/bin/nvmeof -host-cpu "$(HOST_CPU)" -out $(BENCH_NV_OUT)
	$(CURDIR)/bin/perfbench write -in $(BENCH_OUT) -host bin/bench-host.txt -cmtime $(BENCH_CM_OUT) -rstream $(BENCH_RS_OUT) -scale $(BENCH_SC_OUT) -connrate $(BENCH_CR_OUT) -nvmeof $(BENCH_NV_OUT) BENCHMARKS.md

# NVMe over RDMA only: in one guest the kernel's target and ours (cmd/nvmeof
# serve) on rxe1, the kernel's host connected to both; 4 KiB random reads
# at depth 1 and 32 and 128 KiB sequential reads at depth 8, fio on the
# kernel's host against our host (nvmeof perf, as it starts and with
# GOMAXPROCS=1) on the kernel's target, and the kernel's target against
# ours under fio; then system calls per I/O
# (strace -f -c) and our host's allocations; into BENCHMARKS.md (also part
# of make bench). perfbench starts no round that would end after 9 minutes.
bench-nvmeof: lab-bin
	$(GO) build -o bin/ ./cmd/nvmeof ./test/perfbench
	$(LAB) -kernel $(KERNEL) -timeout 20m -- $(CURDIR)/bin/perfbench nvmeof -nvmeof $(CURDIR)/bin/nvmeof -host-cpu "$(HOST_CPU)" -out $(BENCH_NV_OUT)
	$(CURDIR)/bin/perfbench write -nvmeof $(BENCH_NV_OUT) BENCHMARKS.md

# Scaling only: write_bw and send_bw with 1, 8 and 64 QPs, rdma-perf against
# perftest's -q, and send_lat's round-robin ping-pong over 1, 8 and 64 QPs
# against lat_many, into BENCHMARKS.md (also part of make bench).
bench-scale: lab-bin lat-many
	$(GO) build -o bin/ ./cmd/rdma-perf ./test/perfbench
	$(LAB) -kernel $(KERNEL) -timeout 20m -- $(CURDIR)/bin/perfbench scale -rdma-perf $(CURDIR)/bin/rdma-perf -lat-many $(LAT_MANY) -out $(BENCH_SC_OUT)
	$(CURDIR)/bin/perfbench write -scale $(BENCH_SC_OUT) BENCHMARKS.md

# lat_many (test/perfbench/c/lat_many.c), the C side of the scaling
# section's latency table: perftest has no latency test with several QPs.
# Built here with gcc against libibverbs (the lab guest runs this machine's
# binaries); libibverbs-dev is installed with apt-get when missing.
LAT_MANY := $(CURDIR)/bin/lat_many
lat-many:
	@mkdir -p bin
	@command -v gcc >/dev/null || { echo "lat_many needs gcc; install it with: sudo apt-get install -y gcc"; exit 1; }
	@if [ ! -f /usr/include/infiniband/verbs.h ]; then \
		if [ "$$(id -u)" != 0 ]; then \
			echo "lat_many needs libibverbs' headers; install them with: sudo apt-get install -y libibverbs-dev"; exit 1; \
		fi; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libibverbs-dev || \
			{ echo "installing libibverbs-dev failed (try apt-get update first)"; exit 1; }; \
	fi
	gcc -O2 -Wall -Wextra -o $(LAT_MANY) test/perfbench/c/lat_many.c -libverbs -lm

# Closing one connection among many (BENCHMARKS.md, "Closing one
# connection among many"): rsocket's BenchmarkCloseScaling with 8 to 1024
# pairs open.
bench-close: lab-bin
	$(GO) test -count=1 -p 1 -run '^$$' -bench CloseScaling -benchtime 30x -exec "$(LAB) -kernel $(KERNEL) -timeout 30m" ./rsocket

# Connection set-up only: our cmtime against rdma-core's, per step, into
# BENCHMARKS.md (also part of make bench).
bench-cmtime: lab-bin
	$(GO) build -o bin/ ./cmd/cmtime ./test/perfbench
	$(LAB) -kernel $(KERNEL) -timeout 20m -- $(CURDIR)/bin/perfbench cmtime -cmtime $(CURDIR)/bin/cmtime -out $(BENCH_CM_OUT)
	$(CURDIR)/bin/perfbench write -cmtime $(BENCH_CM_OUT) BENCHMARKS.md

# Connection rate only: 16 dialers against a server, ours and cm_rate
# (test/perfbench/c/cm_rate.c, librdmacm), every pairing, into
# BENCHMARKS.md (also part of make bench); then gRPC's new connection per
# call over rsocket and TCP (examples/grpc BenchmarkNewConnPerCall).
bench-connrate: lab-bin cm-rate
	$(GO) build -o bin/ ./test/perfbench
	$(LAB) -kernel $(KERNEL) -timeout 20m -- $(CURDIR)/bin/perfbench connrate -cm-rate $(CM_RATE) -out $(BENCH_CR_OUT)
	$(CURDIR)/bin/perfbench write -connrate $(BENCH_CR_OUT) BENCHMARKS.md
	@# gRPC with a new connection per call, over rsocket and over TCP
	@# (printed; BENCHMARKS.md quotes it by hand).
	cd examples/grpc && $(GO) test -count=1 -p 1 -run '^$$' -bench NewConnPerCall -benchtime 40x -exec "$(LAB) -kernel $(KERNEL)" .

# cm_rate (test/perfbench/c/cm_rate.c), the C side of the connection-rate
# rows, built with gcc against librdmacm; librdmacm-dev is installed with
# apt-get when missing.
CM_RATE := $(CURDIR)/bin/cm_rate
cm-rate:
	@mkdir -p bin
	@command -v gcc >/dev/null || { echo "cm_rate needs gcc; install it with: sudo apt-get install -y gcc"; exit 1; }
	@if [ ! -f /usr/include/rdma/rdma_cma.h ]; then \
		if [ "$$(id -u)" != 0 ]; then \
			echo "cm_rate needs librdmacm's headers; install them with: sudo apt-get install -y librdmacm-dev"; exit 1; \
		fi; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends librdmacm-dev || \
			{ echo "installing librdmacm-dev failed (try apt-get update first)"; exit 1; }; \
	fi
	gcc -O2 -Wall -Wextra -o $(CM_RATE) test/perfbench/c/cm_rate.c -lrdmacm -libverbs -lpthread

# Streams: our rstream (package rsocket) against rdma-core's, and both over
# kernel TCP, bandwidth and round trips at 64 B to 1 MiB, into BENCHMARKS.md
# (also part of make bench). perfbench starts no round that would end after
# 16 of the lab's 20 minutes.
bench-rstream: lab-bin
	$(GO) build -o bin/ ./cmd/rstream ./test/perfbench
	$(LAB) -kernel $(KERNEL) -timeout 20m -- $(CURDIR)/bin/perfbench rstream -rstream $(CURDIR)/bin/rstream -out $(BENCH_RS_OUT)
	$(CURDIR)/bin/perfbench write -rstream $(BENCH_RS_OUT) BENCHMARKS.md

# rdma-core's rxe provider against uverbs, natively on this machine (no lab):
# test/nativebench builds providers/rxe/rxe.c of each tag in NATIVE_TAGS
# into a C harness with gcc, checks that every post writes the same WQE
# bytes as ours, then runs C and Go in turn, NATIVE_ROUNDS rounds, and
# writes the medians into BENCHMARKS.md. The checkouts are cached in
# $GOVERBS_RDMA_CORE_CACHE (~/.cache/goverbs-rdma-core), fetched from
# $GOVERBS_RDMA_CORE_REPO (GitHub unless set) when missing.
# NATIVE_PROFILE=DIR also writes a CPU profile of each Go row there.
NATIVE_TAGS    ?= v44.0,v64.0
NATIVE_ROUNDS  ?= 5
NATIVE_PROFILE ?=
bench-native:
	$(GO) run ./test/nativebench -go $(GO) -tags $(NATIVE_TAGS) -rounds $(NATIVE_ROUNDS) -profile "$(NATIVE_PROFILE)" -out BENCHMARKS.md

# rdma-server and rdma-client against the tutorials' own C programs
# (docs/testing.md §9): test/tutorials-c/build.sh fetches the three
# tutorials at the commits cmd/internal/tutorial/wire.go names (cached in
# $GOVERBS_TUTORIALS_CACHE, ~/.cache/goverbs-tutorials; the repositories'
# URLs can be overridden, see the script) and builds their C programs,
# unmodified, into bin/tutorials-c; then TestAgainstC (build tag tutorialsc,
# so that make test has no such test) runs every protocol
# and mode, C server with our client and our server with C client, in the
# lab on each of TUTORIALS_KERNELS, over rxe and siw.
TUTORIALS_KERNELS ?= 6.1 6.12
tutorials-c: lab-bin
	@command -v gcc >/dev/null || { echo "tutorials-c needs gcc; install it with: sudo apt-get install -y gcc"; exit 1; }
	@if [ ! -f /usr/include/rdma/rdma_cma.h ] || [ ! -f /usr/include/infiniband/verbs.h ]; then \
		if [ "$$(id -u)" != 0 ]; then \
			echo "tutorials-c needs libibverbs' and librdmacm's headers; install them with: sudo apt-get install -y libibverbs-dev librdmacm-dev"; exit 1; \
		fi; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libibverbs-dev librdmacm-dev || \
			{ echo "installing libibverbs-dev and librdmacm-dev failed (try apt-get update first)"; exit 1; }; \
	fi
	test/tutorials-c/build.sh $(CURDIR)/bin/tutorials-c
	@for k in $(TUTORIALS_KERNELS); do \
		echo "== the tutorials against their C programs, kernel $$k"; \
		GOVERBS_TUTORIALS_C=$(CURDIR)/bin/tutorials-c $(GO) test -tags tutorialsc -count=1 -p 1 -timeout 40m -v -run '^TestAgainstC$$' \
			-exec "$(LAB) -kernel $$k -timeout 30m" ./cmd/internal/tutorial || exit 1; \
	done

# The programs in the lab: list the links (rxe0 on lo, rxe1 and rxe2 on the
# veth pair veth0/veth1 that the lab makes), describe rxe0 as `ibv_devinfo -v`
# does, a ping-pong between our rdma-pingpong (server) and rdma-core's
# ibv_rc_pingpong (client) over rxe0, then the tutorials: every protocol and
# mode of rdma-server (on rxe1, 10.77.0.1) and rdma-client with the -v trace.
demo: lab-bin
	$(GO) build -o bin/ ./cmd/...
	$(LAB) -kernel $(KERNEL) -- sh -c 'set -e; cd $(CURDIR)/bin; \
		echo "== rdma-link show"; ./rdma-link show; \
		echo "== rdma-devinfo -v -d rxe0"; ./rdma-devinfo -v -d rxe0; \
		echo "== rdma-pingpong (server) <-> ibv_rc_pingpong (client)"; \
		./rdma-pingpong -d rxe0 -g 1 -n 200 & sleep 2; \
		ibv_rc_pingpong -d rxe0 -g 1 -n 200 127.0.0.1; wait $$!; \
		echo "== the tutorials: rdma-server and rdma-client"; \
		$(CURDIR)/test/demo/tutorials.sh $(CURDIR)/bin 10.77.0.1'

# Every fuzz target, one after another, on one core each (-parallel 1): the
# decoders of what comes from outside the process (CM events and addresses,
# netlink replies) and the verbs encoders.
FUZZTIME ?= 2m
fuzz:
	@for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "== $$pkg $$f ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) -parallel 1 $$pkg || exit 1; \
		done; \
	done

clean:
	rm -rf bin dist

# Release archives: every program of cmd/ and test/rxelab (for users' CI),
# static (CGO_ENABLED=0 above), built with -trimpath and without the symbol
# table and DWARF (-s -w: a panic still prints its stack), for each of
# DIST_ARCHS, with README.md, LICENSE and CHANGELOG.md, as
# $(DIST)/goverbs-VERSION-linux-ARCH.tar.gz, and their $(DIST)/SHA256SUMS.
# VERSION is the release tag (v*) when HEAD has one, else the first version
# CHANGELOG.md names with -dev; the programs print it, with REVISION and
# MODIFIED, for -version (internal/version). make builds with -buildvcs=false,
# so these come from git here, and stay empty where git cannot answer. The
# archives' file times are the commit's (SOURCE_DATE_EPOCH), so that the
# same commit gives the same bytes. rxelab carries the guest's /init for
# amd64 and arm64, built first into test/lab/initbin (build tag labinit), so
# that it runs where no Go is installed. test/static's TestDist checks the
# result.
DIST       ?= dist
DIST_ARCHS ?= amd64 arm64
VERSION    ?= $(or $(shell git describe --tags --exact-match --match 'v[0-9]*' 2>/dev/null),$(shell sed -n 's/^## \(v[0-9][^ ]*\).*/\1/p' CHANGELOG.md | head -n 1)-dev)
REVISION   ?= $(shell git rev-parse HEAD 2>/dev/null)
MODIFIED   ?= $(if $(REVISION),$(if $(shell git status --porcelain 2>/dev/null),true,false))
SOURCE_DATE_EPOCH ?= $(or $(shell git log -1 --format=%ct 2>/dev/null),0)
DIST_PROGRAMS = $(shell $(GO) list -f '{{if eq .Name "main"}}{{.ImportPath}}{{end}}' ./cmd/... ./test/rxelab)
VERSION_PKG   = github.com/goverbs/rdma/internal/version
dist:
	@set -e; v='$(VERSION)'; \
	ldflags="-s -w -X $(VERSION_PKG).version=$$v -X $(VERSION_PKG).revision=$(REVISION) -X $(VERSION_PKG).modified=$(MODIFIED)"; \
	mkdir -p $(DIST); rm -f $(DIST)/goverbs-*-linux-*.tar.gz $(DIST)/SHA256SUMS; \
	for arch in amd64 arm64; do \
		GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags "-s -w" -o test/lab/initbin/init-$$arch ./test/lab/guestinit; \
	done; \
	for arch in $(DIST_ARCHS); do \
		name=goverbs-$$v-linux-$$arch; rm -rf $(DIST)/$$name; mkdir $(DIST)/$$name; \
		echo "$(DIST)/$$name.tar.gz"; \
		GOOS=linux GOARCH=$$arch $(GO) build -trimpath -tags labinit -ldflags "$$ldflags" -o $(DIST)/$$name/ $(DIST_PROGRAMS); \
		cp README.md LICENSE CHANGELOG.md $(DIST)/$$name/; \
		tar -C $(DIST) --sort=name --owner=0 --group=0 --numeric-owner --mode=go-w \
			--mtime=@$(SOURCE_DATE_EPOCH) -cf $(DIST)/$$name.tar $$name; \
		gzip -9nf $(DIST)/$$name.tar; \
		rm -rf $(DIST)/$$name; \
	done; \
	cd $(DIST) && sha256sum goverbs-$$v-linux-*.tar.gz > SHA256SUMS && cat SHA256SUMS

# The mlx5 data path against rdma-core's own libmlx5 code (docs/mlx5.md §7):
# builds test/mlx5diff's harness from rdma-core's sources (RDMA_CORE_TAG,
# default v44.0, cloned into ~/.cache/goverbs-mlx5diff; RDMA_CORE_SRC or
# RDMA_CORE_GIT use a local copy), runs the fixed corpus and the random cases
# through libmlx5 and through uverbs/internal/mlx5 and compares every byte.
# MLX5DIFF_UPDATE=1 rewrites the golden vectors that make test replays
# without a C toolchain. Needs cc and python3.
MLX5DIFF_RANDOM ?= 10000
MLX5DIFF_SEED   ?= 1
RDMA_CORE_TAG   ?= v44.0
mlx5diff:
	@mkdir -p bin
	RDMA_CORE_TAG=$(RDMA_CORE_TAG) test/mlx5diff/build.sh $(CURDIR)/bin/mlx5diff-harness
	$(GO) test -count=1 -v -run '^TestDifferential$$' ./uverbs/internal/mlx5 -args \
		-mlx5diff.harness=$(CURDIR)/bin/mlx5diff-harness -mlx5diff.tag=$(RDMA_CORE_TAG) \
		-mlx5diff.random=$(MLX5DIFF_RANDOM) -mlx5diff.seed=$(MLX5DIFF_SEED) \
		$(if $(MLX5DIFF_UPDATE),-mlx5diff.update)

# On a host with a ConnectX (mlx5) device: our programs against rdma-core's
# and perftest's on it, one line per case (test/hwcheck.sh; DEV, ADDR, GID
# and ITERS choose the device, its address, GID index and iterations).
hwcheck:
	$(GO) build -o bin/ ./cmd/rdma-devinfo ./cmd/rdma-pingpong ./cmd/rping ./cmd/rdma-perf
	test/hwcheck.sh $(CURDIR)/bin
