#!/bin/bash
# Build NCCL from a source tarball for Hopper only (sm_90), on the GPU machine,
# and pack libnccl.so.2 for later calls: the device machine cannot fetch, so the
# source travels (made here by `git -C <nccl mirror> archive HEAD | xz`).
#   tests/gpu/nccl_build.sh TARBALL OUT
# OUT gets nccl-<version>.so.xz.<nn> pieces (16 MiB each: the device tool's
# limit on a returned file), build.log and a line of timings. Join them with
# `cat OUT/nccl-*.so.xz.* | xz -d > libnccl.so.2`.
set -euo pipefail
tarball=$1 out=$2
work=${TMPDIR:-/tmp}/nccl-build
rm -rf "$work" && mkdir -p "$work"
tar -C "$work" -xJf "$tarball"
cd "$work"
ver=$(awk '/NCCL_MAJOR/{a=$3}/NCCL_MINOR/{b=$3}/NCCL_PATCH/{c=$3}END{print a"."b"."c}' makefiles/version.mk)
start=$(date +%s)
# NVLS stays off at run time (NCCL_NVLS_ENABLE=0); the build needs no change for it.
make -j"$(nproc)" src.build NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" \
    > "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
end=$(date +%s)
lib=$(ls build/lib/libnccl.so.2.* | head -1)
strip --strip-unneeded "$lib"
ls -la "$lib"
xz -T0 -6 -c "$lib" | split -b 15M -d - "$out/nccl-$ver.so.xz."
echo "nccl $ver built in $((end - start)) s with $(nproc) cores; $(stat -c %s "$lib") bytes stripped" | tee "$out/timing.txt"
ls -la "$out"
