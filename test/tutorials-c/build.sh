#!/bin/sh
# Fetches the three classic RDMA tutorials at the commits our programs were
# written against (cmd/internal/tutorial/wire.go) and builds their C server
# and client programs, unmodified, with gcc against libibverbs and
# librdmacm, with the flags of each tutorial's own build (make tutorials-c;
# docs/testing.md §9).
#
# Usage: build.sh OUTDIR
#
# OUTDIR gets one directory per tutorial, each program named as its own
# build names it:
#
#	geek/server, geek/client                01_basic-client-server (Makefile: -Wall -g)
#	geek/rdma-server, geek/rdma-client      02_read-write (Makefile: -Wall -Werror -g)
#	rdma-example/rdma_server, rdma_client   src/ (CMakeLists.txt: a Release build, -O3 -DNDEBUG)
#	roce-lab/rdma_min_server, rdma_min_client   examples/c/minimal (Makefile target minimal)
#	roce-lab/rdma_server_imm, rdma_client_imm   src/server_imm.c, src/client_imm.c
#	                                        (roce-lab's Makefile: -O2 -std=c11 -Wall -D_GNU_SOURCE -DRDMA_VERBOSE)
#
# 02_read-write keeps its build's -O0: send_message spins on a plain int
# (`while (!conn->connected);`) that another thread sets, which an
# optimizing build may turn into a loop that never ends.
#
# The checkouts are cached in $GOVERBS_TUTORIALS_CACHE
# (~/.cache/goverbs-tutorials), one directory per repository and commit;
# a missing one is cloned from GitHub, or from $GOVERBS_TUTORIALS_GEEK_REPO,
# $GOVERBS_TUTORIALS_RDMA_EXAMPLE_REPO, $GOVERBS_TUTORIALS_ROCE_LAB_REPO
# when set (a mirror, a local clone or a bare git directory). Nothing of
# them enters this repository.
set -eu
out=${1:?usage: build.sh OUTDIR}
cache=${GOVERBS_TUTORIALS_CACHE:-${HOME:?set GOVERBS_TUTORIALS_CACHE or HOME}/.cache/goverbs-tutorials}

for tool in git gcc; do
	command -v $tool >/dev/null || { echo "build.sh: $tool is missing: install it (apt-get install -y $tool)" >&2; exit 1; }
done

# checkout NAME URL COMMIT: prints the directory of NAME at COMMIT, cloning
# it into the cache when it is not there.
checkout() {
	dir=$cache/$1-$3
	if [ ! -f "$dir/.goverbs-checked-out" ]; then
		echo "fetching $1 $3 from $2 into $dir" >&2
		mkdir -p "$cache"
		rm -rf "$dir.tmp"
		if ! git clone -q --no-checkout "$2" "$dir.tmp" >&2 ||
			! git -C "$dir.tmp" -c advice.detachedHead=false checkout -q "$3" >&2; then
			rm -rf "$dir.tmp"
			echo "build.sh: could not fetch $1 at $3 from $2: set the repository's GOVERBS_TUTORIALS_*_REPO to a reachable clone (a local path works), or put a checkout of $3 in $dir" >&2
			exit 1
		fi
		touch "$dir.tmp/.goverbs-checked-out"
		rm -rf "$dir"
		mv "$dir.tmp" "$dir"
	fi
	echo "$dir"
}

geek=$(checkout the-geek-in-the-corner "${GOVERBS_TUTORIALS_GEEK_REPO:-https://github.com/tarickb/the-geek-in-the-corner}" \
	fb2358c3a61223fa5bce5de6bee03cfeb0f09320)
example=$(checkout rdma-example "${GOVERBS_TUTORIALS_RDMA_EXAMPLE_REPO:-https://github.com/animeshtrivedi/rdma-example}" \
	615b85d27a69e65c51ab74809b638be0d8505a35)
rocelab=$(checkout rdma-roce-lab "${GOVERBS_TUTORIALS_ROCE_LAB_REPO:-https://github.com/montybeatnik/rdma-roce-lab}" \
	bb6c02521f96e778fff03d8ea9c39d8917039603)

mkdir -p "$out/geek" "$out/rdma-example" "$out/roce-lab"
# cc OUT ARGS...: gcc ARGS -o OUTDIR/OUT, said in one line.
cc() {
	o=$1
	shift
	echo "gcc -> $out/$o"
	gcc "$@" -o "$out/$o"
}
g=$geek/01_basic-client-server
cc geek/server -Wall -g "$g/server.c" -lrdmacm -libverbs -lpthread
cc geek/client -Wall -g "$g/client.c" -lrdmacm -libverbs -lpthread
g=$geek/02_read-write
cc geek/rdma-server -Wall -Werror -g "$g/rdma-common.c" "$g/rdma-server.c" -lrdmacm -libverbs -lpthread
cc geek/rdma-client -Wall -Werror -g "$g/rdma-common.c" "$g/rdma-client.c" -lrdmacm -libverbs -lpthread
s=$example/src
cc rdma-example/rdma_server -O3 -DNDEBUG -I"$s" "$s/rdma_common.c" "$s/rdma_server.c" -lpthread -libverbs -lrdmacm
cc rdma-example/rdma_client -O3 -DNDEBUG -I"$s" "$s/rdma_common.c" "$s/rdma_client.c" -lpthread -libverbs -lrdmacm
s=$rocelab/src
common="$s/common.c $s/rdma_cm_helpers.c $s/rdma_builders.c $s/rdma_mem.c $s/rdma_ops.c"
flags="-O2 -std=c11 -Wall -D_GNU_SOURCE -DRDMA_VERBOSE -I$s"
cc roce-lab/rdma_min_server $flags $common "$rocelab/examples/c/minimal/server_min.c" -lrdmacm -libverbs
cc roce-lab/rdma_min_client $flags $common "$rocelab/examples/c/minimal/client_min.c" -lrdmacm -libverbs
cc roce-lab/rdma_server_imm $flags $common "$s/server_imm.c" -lrdmacm -libverbs
cc roce-lab/rdma_client_imm $flags $common "$s/client_imm.c" -lrdmacm -libverbs
