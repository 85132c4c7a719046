#!/usr/bin/env bash
# Packs what a lent GPU machine needs into .gpu/ (git-ignored through .git/info/exclude), for a
# device call that carries `.gpu` (see ../shared/gpu.md and docs/gpu.md). That
# machine has no cargo and no OpenBLAS, so this builds here and carries, gzipped: dptune with
# the `cuda` feature, the GPU engine's test binary, gpu_bench, libopenblas / libgfortran /
# libquadmath, and Fashion-MNIST (`just data` first). On the device, `source tools/gpu-prep.sh`
# unpacks them to /tmp/g and sets LD_LIBRARY_PATH, DPTUNE_DATA and the OpenBLAS variables.
# The tree that travels is capped at 64 MiB and .gpu/ is about 56 MB: move results/ (26 MB,
# committed) out of the checkout for the call and back after it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
data="${DPTUNE_DATA:-$root/data/cache}/fashion-mnist"
[ -f "$data/train-images-idx3-ubyte" ] || { echo "gpu-pack: no Fashion-MNIST in $data: run 'just data'" >&2; exit 1; }
grep -qx '.gpu/' .git/info/exclude 2>/dev/null || echo '.gpu/' >> .git/info/exclude
cargo build --release --features cuda
cargo build --release --features cuda --example gpu_bench
test_bin=$(cargo test --release --features cuda --test gpu_engine --no-run 2>&1 \
    | grep -o 'target/release/deps/gpu_engine-[0-9a-f]*' | tail -1)
rm -rf .gpu && mkdir -p .gpu/lib .gpu/fm
for pair in "dptune:target/release/dptune" "gpu_bench:target/release/examples/gpu_bench" "gpu_engine:$test_bin"; do
    strip -o ".gpu/${pair%%:*}" "${pair#*:}" && gzip -9 ".gpu/${pair%%:*}"
done
for l in libopenblas.so.0 libgfortran.so.5 libquadmath.so.0; do
    gzip -9 -c "$(readlink -f "$(ldconfig -p | grep -m1 "$l " | sed 's/.*=> //')")" > ".gpu/lib/$l.gz"
done
for f in "$data"/*-ubyte; do gzip -9 -c "$f" > ".gpu/fm/$(basename "$f").gz"; done
du -sh .gpu
