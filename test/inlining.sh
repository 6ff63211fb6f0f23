#!/bin/sh
# The hot path's small functions must stay within the compiler's inlining
# budget on both GOARCHes: each was made to fit (BENCHMARKS.md, the native
# rows), and one that stops fitting costs every post or poll a call, which
# no test would notice. This builds the packages with -gcflags=-m and fails,
# naming the function, if the compiler no longer says it can inline one.
set -eu
GO=${GO:-go}
want='
github.com/goverbs/rdma/uverbs (*ringLock).Lock
github.com/goverbs/rdma/uverbs (*ringLock).Unlock
github.com/goverbs/rdma/uverbs (*SendWR).ahNum
github.com/goverbs/rdma/uverbs sendWR
github.com/goverbs/rdma/uverbs sendWRs
github.com/goverbs/rdma/uverbs/internal/provider PlainSend
github.com/goverbs/rdma/uverbs/internal/provider PlainInline
github.com/goverbs/rdma/uverbs/internal/rxe WCs
github.com/goverbs/rdma/uverbs/internal/mlx5 SendWRs
github.com/goverbs/rdma/uverbs/internal/mlx5 WCs
github.com/goverbs/rdma/uverbs/internal/rxe EncodeRecv
github.com/goverbs/rdma/uverbs/internal/rxe EncodeRecvOne
github.com/goverbs/rdma/uverbs/internal/rxe (*Producer).Full
github.com/goverbs/rdma/uverbs/internal/rxe (*Producer).Publish
github.com/goverbs/rdma/uverbs/internal/rxe (*Consumer).Empty
github.com/goverbs/rdma/uverbs/internal/rxe (*Consumer).Refresh
github.com/goverbs/rdma/internal/mmio StoreRelease32
github.com/goverbs/rdma/internal/mmio StoreRelease64
github.com/goverbs/rdma/internal/mmio LoadAcquire32
github.com/goverbs/rdma/internal/mmio LoadFromDevice32
github.com/goverbs/rdma/internal/mmio StoreForDevice32
github.com/goverbs/rdma/internal/mmio StoreForDevice32WC
github.com/goverbs/rdma/uverbs/internal/mlx5 (*SQ).plain
github.com/goverbs/rdma/uverbs/internal/mlx5 (*SQ).Outstanding
github.com/goverbs/rdma/uverbs/internal/mlx5 opcodeAllowed
github.com/goverbs/rdma/uverbs/internal/mlx5 (*SQ).Post
github.com/goverbs/rdma/uverbs/internal/mlx5 (*SQ).PostPlain
'
fail=0
for arch in amd64 arm64; do
	out=$(GOARCH=$arch $GO build -gcflags='-m' ./uverbs ./uverbs/internal/provider ./uverbs/internal/rxe ./uverbs/internal/mlx5 ./internal/mmio 2>&1) || {
		echo "$out"
		exit 1
	}
	echo "$want" | while read -r pkg fn; do
		[ -n "$pkg" ] || continue
		dir=${pkg#github.com/goverbs/rdma/}
		if ! echo "$out" | grep -F "$dir/" | sed 's/$/ /' | grep -qF "can inline $fn "; then
			echo "inlining: $fn ($pkg) is no longer inlined on $arch: see go build -gcflags=-m=2 ./$dir | grep '$fn'"
			exit 1
		fi
	done || fail=1
done
exit $fail
