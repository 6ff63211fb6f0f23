#!/bin/sh
# The hardware check: our programs against rdma-core's and perftest's on
# this host's ConnectX (mlx5) device, one line per case. Each case runs our
# program as the server and the C program as the client over the device,
# and judges our side only (its exit status).
#
# usage: test/hwcheck.sh BINDIR
#   BINDIR   where make hwcheck built rdma-devinfo, rdma-pingpong, rping and rdma-perf
# environment (all optional):
#   DEV      the RDMA device (default: the first one whose driver is mlx5);
#            any device works, which checks the script itself on rxe:
#            bin/rxelab -- sh -c 'DEV=rxe1 ADDR=10.77.0.1 test/hwcheck.sh bin'
#            (all cases pass there; rping needs a routable address, not lo)
#   ADDR     an IPv4 address of the device's netdev (default: its first one)
#   GID      the GID index for ADDR (default: the RoCE v2 GID of ::ffff:ADDR)
#   ITERS    iterations per case (default 200)
#
# Until the mlx5 data path is wired into uverbs (README, Devices), the data
# cases are expected to fail with "only the rxe (soft-RoCE) data path is
# implemented"; the script says so rather than hiding it.
set -u
bin=${1:?usage: hwcheck.sh BINDIR}
iters=${ITERS:-200}
logs=$(mktemp -d /tmp/goverbs-hwcheck.XXXXXX)

dev=${DEV:-}
if [ -z "$dev" ]; then
	for d in /sys/class/infiniband/*; do
		[ -e "$d" ] || continue
		drv=$(basename "$(readlink -f "$d/device/driver" 2>/dev/null)" 2>/dev/null)
		case $drv in mlx5*) dev=$(basename "$d"); break ;; esac
	done
fi
if [ -z "$dev" ]; then
	echo "SKIP all: no mlx5 RDMA device on this host (set DEV to choose one)"
	exit 0
fi
addr=${ADDR:-}
if [ -z "$addr" ]; then
	for n in /sys/class/infiniband/"$dev"/device/net/*; do
		[ -e "$n" ] || continue
		addr=$(ip -4 -o addr show dev "$(basename "$n")" 2>/dev/null | awk '{split($4, a, "/"); print a[1]; exit}')
		[ -n "$addr" ] && break
	done
fi
if [ -z "$addr" ]; then
	echo "SKIP all: $dev's netdev has no IPv4 address (set ADDR)"
	exit 0
fi
gid=${GID:-}
if [ -z "$gid" ]; then
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' $(echo "$addr" | tr . ' '))
	for g in /sys/class/infiniband/"$dev"/ports/1/gids/*; do
		i=$(basename "$g")
		if [ "$(cat "$g" 2>/dev/null)" = "$want" ] &&
			[ "$(cat /sys/class/infiniband/"$dev"/ports/1/gid_attrs/types/"$i" 2>/dev/null)" = "RoCE v2" ]; then
			gid=$i
			break
		fi
	done
fi
gid=${gid:-0}
echo "hwcheck: device $dev, address $addr, GID index $gid, logs in $logs"

fails=0
# run NAME TOOL -- SERVER... -- CLIENT...: our server in the background, the
# C client, then our server's exit status decides.
run() {
	name=$1 tool=$2
	shift 2
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "SKIP $name ($tool is not installed)"
		return
	fi
	shift # --
	server=""
	while [ "$1" != "--" ]; do server="$server $1"; shift; done
	shift
	# shellcheck disable=SC2086
	timeout 120 $server >"$logs/$name.server" 2>&1 &
	spid=$!
	sleep 2
	timeout 100 "$@" >"$logs/$name.client" 2>&1
	crc=$?
	if [ $crc -ne 0 ]; then
		# The C client gave up: give our server a moment, then stop it.
		i=0
		while kill -0 $spid 2>/dev/null && [ $i -lt 10 ]; do sleep 1; i=$((i + 1)); done
		kill $spid 2>/dev/null
	fi
	wait $spid
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "PASS $name"
	else
		fails=$((fails + 1))
		why=$(grep -m1 -o 'only the rxe[^:]*' "$logs/$name.server")
		if [ -z "$why" ] && [ $crc -ne 0 ]; then
			why="the C client exited $crc: $(tail -n 1 "$logs/$name.client")"
		fi
		echo "FAIL $name (our side exited $rc${why:+; $why}; logs $logs/$name.*)"
	fi
}

if "$bin/rdma-devinfo" -d "$dev" >"$logs/devinfo" 2>&1 && grep -q "$dev" "$logs/devinfo"; then
	echo "PASS rdma-devinfo"
else
	fails=$((fails + 1))
	echo "FAIL rdma-devinfo ($logs/devinfo)"
fi
run rc-pingpong ibv_rc_pingpong -- "$bin/rdma-pingpong" -d "$dev" -g "$gid" -n "$iters" -- ibv_rc_pingpong -d "$dev" -g "$gid" -n "$iters" "$addr"
run rc-pingpong-events ibv_rc_pingpong -- "$bin/rdma-pingpong" -d "$dev" -g "$gid" -n "$iters" -e -- ibv_rc_pingpong -d "$dev" -g "$gid" -n "$iters" -e "$addr"
run ud-pingpong ibv_ud_pingpong -- "$bin/rdma-pingpong" ud -d "$dev" -g "$gid" -n "$iters" -- ibv_ud_pingpong -d "$dev" -g "$gid" -n "$iters" "$addr"
run rping rping -- "$bin/rping" -s -a "$addr" -C "$iters" -V -- rping -c -a "$addr" -C "$iters" -V
for t in write_bw send_bw read_bw write_lat send_lat read_lat atomic_lat; do
	run "perf-$t" "ib_$t" -- "$bin/rdma-perf" "$t" -d "$dev" -x "$gid" -n "$iters" -- "ib_$t" -d "$dev" -x "$gid" -n "$iters" "$addr"
done
echo "hwcheck: $fails case(s) failed"
[ $fails -eq 0 ]
