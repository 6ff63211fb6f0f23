#!/bin/sh
# Builds the mlx5 differential harness against rdma-core's libmlx5 sources.
#
# usage: build.sh OUT_BINARY
#
# The rdma-core source comes from, in this order:
#   RDMA_CORE_SRC   a checkout to use as it is
#   RDMA_CORE_GIT   a git repository (bare or not) to export RDMA_CORE_TAG from
#   a shallow clone of https://github.com/linux-rdma/rdma-core at
#   RDMA_CORE_TAG into the cache directory (MLX5DIFF_CACHE, default
#   ~/.cache/goverbs-mlx5diff)
# RDMA_CORE_TAG defaults to v44.0, the version Debian 12 ships and the one the
# committed golden vectors were made with. MLX5DIFF_OPT is the optimisation
# level (-O1; make bench-native builds its timing harness with -O2, as
# rdma-core's own build). Needs cc (gcc or clang) and python3.
set -eu
out=$1
here=$(cd "$(dirname "$0")" && pwd)
tag=${RDMA_CORE_TAG:-v44.0}
cache=${MLX5DIFF_CACHE:-$HOME/.cache/goverbs-mlx5diff}
CC=${CC:-cc}
OPT=${MLX5DIFF_OPT:--O1}

# CC may carry flags (CC="gcc -fsanitize=address" checks the harness itself).
for tool in "${CC%% *}" python3; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "mlx5diff: $tool is missing; the harness compiles rdma-core's C sources (install gcc and python3), or run the Go tests alone: they use the committed golden vectors" >&2
		exit 1
	fi
done

if [ -n "${RDMA_CORE_SRC:-}" ]; then
	src=$RDMA_CORE_SRC
else
	src=$cache/rdma-core-$tag
	if [ ! -f "$src/providers/mlx5/qp.c" ]; then
		mkdir -p "$cache"
		rm -rf "$src.tmp"
		if [ -n "${RDMA_CORE_GIT:-}" ]; then
			mkdir -p "$src.tmp"
			git -C "$RDMA_CORE_GIT" archive "$tag" | tar -x -C "$src.tmp"
		elif ! git clone -q --depth 1 -b "$tag" https://github.com/linux-rdma/rdma-core "$src.tmp"; then
			echo "mlx5diff: cannot fetch rdma-core $tag; set RDMA_CORE_SRC to a checkout or RDMA_CORE_GIT to a repository with that tag" >&2
			exit 1
		fi
		mv "$src.tmp" "$src"
	fi
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$here/prepare.sh" "$src" "$work"
inc="-I$work/include -I$src/providers/mlx5 -I$src"
for f in qp cq srq; do
	$CC -c $OPT -w $inc "$src/providers/mlx5/$f.c" -o "$work/$f.o"
done
$CC -c $OPT -w $inc "$here/harness.c" -o "$work/harness.o"

# Everything else the linked files name (the rest of libmlx5 and
# libibverbs) is never reached by the cases: a stub that aborts.
objs="$work/harness.o $work/qp.o $work/cq.o $work/srq.o"
: > "$work/stubs.c"
$CC $objs -o "$work/probe" -lpthread 2>"$work/link.err" || true
sed -n "s/.*undefined reference to \`\([A-Za-z0-9_]*\)'.*/\1/p" "$work/link.err" | sort -u |
while read -r sym; do
	printf '#include <stdio.h>\n#include <stdlib.h>\nvoid %s(void) { fputs("mlx5diff-harness: %s reached\\n", stderr); abort(); }\n' "$sym" "$sym"
done > "$work/stubs.c"
$CC -c -O1 -w "$work/stubs.c" -o "$work/stubs.o" 2>/dev/null || {
	# One definition per file: the includes repeat.
	awk 'NR<=2 || !/^#include/' "$work/stubs.c" > "$work/stubs2.c"
	$CC -c -O1 -w "$work/stubs2.c" -o "$work/stubs.o"
}
$CC $objs "$work/stubs.o" -o "$out" -lpthread
echo "mlx5diff: built $out from rdma-core $tag ($src)" >&2
