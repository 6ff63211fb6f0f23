#!/bin/sh
# Prepares an rdma-core source tree for the mlx5 differential harness: an
# include tree laid out as rdma-core's CMake build lays it out (published
# headers, generated kernel-abi headers, a config.h), without CMake.
#
# usage: prepare.sh SRC_DIR OUT_DIR
#   SRC_DIR  an rdma-core checkout (any tag the harness supports)
#   OUT_DIR  where the include tree goes (OUT_DIR/include)
set -eu
src=$1
out=$2
if [ ! -f "$src/providers/mlx5/qp.c" ] || [ ! -f "$src/buildlib/make_abi_structs.py" ]; then
	echo "prepare.sh: $src is not an rdma-core checkout (providers/mlx5/qp.c or buildlib/make_abi_structs.py missing)" >&2
	exit 1
fi
inc=$out/include
rm -rf "$inc"
mkdir -p "$inc/infiniband" "$inc/util" "$inc/ccan" "$inc/rdma/hfi" "$inc/kernel-abi" "$inc/valgrind"

# publish_headers / publish_internal_headers of libibverbs, util, mlx5:
# every libibverbs header (the published set grows between versions).
cp "$src"/libibverbs/*.h "$inc/infiniband/"
cp "$src/providers/mlx5/mlx5dv.h" "$src/providers/mlx5/mlx5_api.h" "$inc/infiniband/"
cp "$src/kernel-headers/rdma/mlx5_user_ioctl_verbs.h" "$inc/infiniband/"
cp "$src/kernel-headers/rdma/ib_user_ioctl_verbs.h" "$inc/infiniband/"
cp "$src"/util/*.h "$inc/util/"
cp -r "$src"/ccan/*.h "$inc/ccan/"
cp "$src"/kernel-headers/rdma/*.h "$inc/rdma/"
cp "$src"/kernel-headers/rdma/hfi/*.h "$inc/rdma/hfi/"

# kernel-abi/*.h: the structs of the kernel headers as _STRUCT_ defines
# (buildlib/make_abi_structs.py, as rdma_kernel_provider_abi does).
for h in "$src"/kernel-headers/rdma/*.h; do
	python3 "$src/buildlib/make_abi_structs.py" "$h" "$inc/kernel-abi/$(basename "$h")"
done

# No valgrind: its annotations compile to nothing.
cat > "$inc/valgrind/memcheck.h" <<'H'
#define VALGRIND_MAKE_MEM_DEFINED(a, l) ((void)0)
#define VALGRIND_MAKE_MEM_UNDEFINED(a, l) ((void)0)
H

# config.h: buildlib/config.h.in with the values the harness needs.
sed -e 's/@PACKAGE_VERSION@/harness/' \
    -e 's/@IBVERBS_PABI_VERSION@/0/' \
    -e 's/@SIZEOF_LONG_CODE@/#define SIZEOF_LONG 8/' \
    -e 's/@IOCTL_MODE_NUM@/3/' \
    -e 's/@IBACM_[A-Z_]*_DEFAULT@/0/' \
    -e 's/@[A-Z_]*@/x/g' \
    -e 's/^#cmakedefine HAVE_FUNC_ATTRIBUTE_ALWAYS_INLINE 1/#define HAVE_FUNC_ATTRIBUTE_ALWAYS_INLINE 1/' \
    -e 's/^#cmakedefine HAVE_WORKING_IF_H 1/#define HAVE_WORKING_IF_H 1/' \
    -e 's/^#cmakedefine \(.*\)/\/* #undef \1 *\//' \
    -e 's/^#cmakedefine01 \([A-Z_]*\).*/#define \1 0/' \
    "$src/buildlib/config.h.in" > "$inc/config.h"
