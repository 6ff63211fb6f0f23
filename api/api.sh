#!/bin/sh
# api/api.sh check|update|selftest: the exported API of the public
# packages against the snapshot committed in api/PACKAGE.txt (rdma: the
# root package; make apicheck, make apicheck-update). A snapshot is `go doc
# -all` of the package with the documentation taken out: the declarations
# of constants, variables, functions, types, methods and struct fields, so
# that a doc comment can change freely and a change to the surface cannot
# pass unseen. selftest proves the check sees a changed field.
set -eu
cd "$(dirname "$0")/.."
GO=${GO:-go}
# rdma is the module's root package.
PKGS="rdma uverbs rdmacm rsocket netlinkrdma nvmeof"

surface() {
	dir=./$1
	[ "$1" = rdma ] && dir=.
	"$GO" doc -all "$dir" | awk '
		/^(CONSTANTS|VARIABLES|FUNCTIONS|TYPES)$/ { decl = 1; print; next }
		!decl || /^    / { next }
		{ sub(/[ \t]*\/\/.*$/, ""); if ($0 !~ /^[ \t]*$/) print }'
}

mode=${1:-check}
if [ "$mode" = selftest ]; then
	# The check must see a field of WC change: a scratch copy of the tracked
	# files passes it, and fails it with WC.VendorErr widened. (It needs a
	# git checkout and GNU cp, as CI has.)
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	git ls-files -z | xargs -0 cp --parents -t "$tmp"
	if ! (cd "$tmp" && GO="$GO" ./api/api.sh check >/dev/null 2>&1); then
		echo "api selftest: the committed tree does not pass the check (new files not added?)" >&2
		exit 1
	fi
	sed -i 's/^\tVendorErr uint32$/\tVendorErr uint64/' "$tmp/wc.go"
	grep -q '^	VendorErr uint64$' "$tmp/wc.go" || { echo "api selftest: WC.VendorErr not found in wc.go" >&2; exit 1; }
	if (cd "$tmp" && GO="$GO" ./api/api.sh check >/dev/null 2>&1); then
		echo "api selftest: a changed field of rdma.WC passed the check" >&2
		exit 1
	fi
	echo "api selftest: a changed field of rdma.WC fails the check"
	exit 0
fi
status=0
for p in $PKGS; do
	case $mode in
	update)
		surface "$p" >"api/$p.txt"
		;;
	check)
		surface "$p" >"api/$p.txt.new"
		if ! diff -u "api/$p.txt" "api/$p.txt.new"; then
			status=1
		fi
		rm -f "api/$p.txt.new"
		;;
	*)
		echo "usage: api/api.sh check|update|selftest" >&2
		exit 2
		;;
	esac
done
if [ $status -ne 0 ]; then
	cat >&2 <<MSG

The exported API differs from the snapshot in api/ (the diff above: - is the
snapshot, + the code). If the change is deliberate, run
	make apicheck-update
commit api/*.txt with it, and list the change in CHANGELOG.md.
MSG
fi
exit $status
