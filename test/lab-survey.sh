#!/usr/bin/env bash
# Every lab package on one kernel, each bounded in time, as a list rather
# than a pass or a failure (make lab-survey; docs/testing.md §10):
#
#   test/lab-survey.sh KERNEL TIMEOUT OUT PKG...    (TIMEOUT in minutes: 8m)
#
# GO and LAB name the go command and rxelab. Each package runs as make lab
# runs it (one guest, the siw tests only where the lab has siw), with
# rxelab -timeout TIMEOUT, so that a hung guest ends its package. OUT gets
# one line per package: ok, FAIL with the tests that failed, or TIMEOUT
# with the test that was running; the full output of each package is kept
# beside it in OUT.d/. The script exits 0 whatever the tests did, and
# non-zero only when the lab itself cannot run.
set -uo pipefail
kernel=$1 timeout=$2 out=$3
shift 3
[[ $timeout =~ ^[0-9]+m$ ]] || { echo "lab-survey: TIMEOUT is minutes, such as 8m (got $timeout)" >&2; exit 2; }
: "${GO:=go}" "${LAB:?LAB names rxelab}"
logs=$out.d
rm -rf "$logs" && mkdir -p "$logs" || exit 1
prep=$("$LAB" -kernel "$kernel" -prepare) || exit 1
skip='^TestTwoGuest'
grep -q '^siw: built' <<<"$prep" || skip="$skip|Siw|IWARP"
{
	echo "# lab survey: kernel series $kernel, $(date -u +%Y-%m-%dT%H:%MZ), rxelab -timeout $timeout per package"
	sed 's/^/# /' <<<"$prep"
} >"$out"
# go test's own limit lies past the guest's, so that the lab reports the
# hang (and the kernel's last lines) before go test kills it.
gotimeout=$(( $(sed -E 's/m$//' <<<"$timeout") + 3 ))m
for pkg in "$@"; do
	log=$logs/$(tr / _ <<<"${pkg#github.com/goverbs/rdma/}").log
	"$GO" test -count=1 -p 1 -v -timeout "$gotimeout" -skip "$skip" \
		-exec "$LAB -kernel $kernel -timeout $timeout" "$pkg" >"$log" 2>&1
	status=$?
	failed=$(sed -n 's/^ *--- FAIL: \([^ ]*\).*/\1/p' "$log" | tr '\n' ' ')
	if grep -q 'did not finish within' "$log" || grep -q '^panic: test timed out' "$log"; then
		# go test -v prints a subtest's result when its parent ends, so
		# the test that hung is the last one started (-p 1, no t.Parallel
		# in the lab tests that hang).
		running=$(sed -n 's/^=== \(RUN\|CONT\) *\([^ ]*\).*/\2/p' "$log" | tail -n 1)
		line="TIMEOUT (last started: ${running:-?}; failed before: ${failed:-none})"
	elif [ $status -eq 0 ]; then
		line="ok ($(grep -c '^--- PASS' "$log") tests)"
	else
		line="FAIL (${failed:-the package, before any test: see the log})"
	fi
	echo "${pkg#github.com/goverbs/rdma/}: $line" | tee -a "$out"
done
echo "survey of $kernel written to $out (logs in $logs)"
