# Sourced on a lent GPU machine from the repository root (a device call carrying `.gpu`, packed
# by tools/gpu-pack.sh): unpacks the binaries to /tmp/g (once per machine), the libraries to
# /tmp/g/lib and Fashion-MNIST to /tmp/g/data, and exports what they need. Then, e.g.:
#   DPTUNE_REQUIRE_GPU=1 /tmp/g/gpu_engine; /tmp/g/gpu_bench
#   /tmp/g/dptune sim run sims/gpu/FILE.toml --profile paper --out /tmp/res
#   tar czf $OUT/res.tgz -C /tmp/res .   # at most 8 files come back: send one archive
g=/tmp/g
if [ ! -x "$g/dptune" ]; then
    mkdir -p "$g/lib" "$g/data/fashion-mnist"
    for f in .gpu/lib/*.gz; do gunzip -c "$f" > "$g/lib/$(basename "$f" .gz)"; done
    for f in .gpu/fm/*.gz; do gunzip -c "$f" > "$g/data/fashion-mnist/$(basename "$f" .gz)"; done
    for b in dptune gpu_engine gpu_bench; do gunzip -c ".gpu/$b.gz" > "$g/$b"; chmod +x "$g/$b"; done
fi
export LD_LIBRARY_PATH="$g/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export DPTUNE_DATA="$g/data" OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=Haswell
