#!/bin/sh
# api/api.sh check|update: the exported API of the public packages against
# the snapshot committed in api/PACKAGE.txt (make apicheck, make
# apicheck-update). A snapshot is `go doc -all` of the package with the
# documentation taken out: the declarations of constants, variables,
# functions, types, methods and struct fields, so that a doc comment can
# change freely and a change to the surface cannot pass unseen.
set -eu
cd "$(dirname "$0")/.."
GO=${GO:-go}
PKGS="uverbs rdmacm rsocket netlinkrdma"

surface() {
	"$GO" doc -all "./$1" | awk '
		/^(CONSTANTS|VARIABLES|FUNCTIONS|TYPES)$/ { decl = 1; print; next }
		!decl || /^    / { next }
		{ sub(/[ \t]*\/\/.*$/, ""); if ($0 !~ /^[ \t]*$/) print }'
}

mode=${1:-check}
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
		echo "usage: api/api.sh check|update" >&2
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
