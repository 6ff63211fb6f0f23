#!/bin/sh
# The tutorials' walkthrough, run by `make demo` in the lab: every protocol
# and mode of rdma-server and rdma-client with -v. The server listens on the
# first end of the lab's veth pair (rxe1 on veth0, 10.77.0.1); the client
# connects to it and the CM picks the devices.
#
# Usage: tutorials.sh BINDIR SERVER-ADDRESS
set -u
bin=$1 addr=$2
out=$(mktemp -d)
fail=0

demo() { # server args -- client args
	srv=""
	while [ "$1" != "--" ]; do srv="$srv $1"; shift; done
	shift
	echo
	echo "======== rdma-server -v -a $addr$srv"
	echo "======== rdma-client -v $*"
	"$bin/rdma-server" -v -a "$addr" $srv >"$out/server" 2>&1 &
	pid=$!
	i=0
	until grep -q "listening on" "$out/server"; do
		i=$((i + 1))
		if [ $i -gt 300 ] || ! kill -0 $pid 2>/dev/null; then
			cat "$out/server"
			echo "DEMO FAILED: the server did not start"
			fail=1
			return
		fi
		sleep 0.1
	done
	echo "-------- client (trace on stderr, result on stdout):"
	if ! "$bin/rdma-client" -v "$@"; then
		echo "DEMO FAILED: rdma-client $*"
		fail=1
	fi
	i=0
	until grep -q "connection closed\|connection failed" "$out/server" || [ $i -gt 100 ]; do
		i=$((i + 1))
		sleep 0.1
	done
	kill -INT $pid
	wait $pid || fail=1
	echo "-------- server (stopped with Ctrl-C):"
	cat "$out/server"
	if grep -q "connection failed" "$out/server"; then
		echo "DEMO FAILED: the server's side of rdma-client $*"
		fail=1
	fi
}

demo write -- write "$addr" 22222
demo read -- read "$addr"
demo -p 22223 send -- send "$addr" 22223
demo --proto rdma-example -- --proto rdma-example -a "$addr" -s "hello world 789"
demo --proto roce-lab -- --proto roce-lab -s "client-wrote-this" write "$addr" 7471
demo --proto roce-lab imm -- --proto roce-lab -s "imm payload 42" imm "$addr" 7472
rm -rf "$out"
echo
if [ $fail = 0 ]; then
	echo "== every protocol and mode succeeded"
else
	echo "== some protocol or mode FAILED"
fi
exit $fail
