"""Writes the small deterministic subsets of the real data that CI tests read
(tests/fixtures/real_data/), from the cache `just data` fills (developer-only; standard
library only; run from the repository root after `just data`):

    python3 tools/make_real_data_samples.py

The cache is $DPTUNE_DATA when set, else data/cache/. Every source file is first checked
against its pinned SHA-256 in data/real-data.sha256. The subsets keep the original bytes and
the original row order, so the Rust loaders read them with the same parsing code as the full
files:

- adult-sample.data: 500 rows of adult.data, drawn uniformly without replacement;
- adult-sample.test: adult.test's first (comment) line, then 200 of its rows, drawn the same way;
- fashion-mnist-sample-train-{images-idx3,labels-idx1}-ubyte: 400 training images, 40 per class;
- fashion-mnist-sample-t10k-{images-idx3,labels-idx1}-ubyte: 100 test images, 10 per class.

Draws use Python's random.Random(SEED).sample (the same on every CPython 3), one generator per
subset (per class for Fashion-MNIST, in class order). MANIFEST.json records the seed, the
source hashes, and for each subset its source, its 0-based row (or image) indices in the source
and its SHA-256. Re-running gives byte-identical files; the script reloads them and checks the
counts afterwards.
"""

import hashlib
import json
import os
import random
import struct
import sys

SEED = 20261123
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "real_data")
CACHE = os.environ.get("DPTUNE_DATA") or os.path.join(ROOT, "data", "cache")


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def pinned():
    sums = {}
    with open(os.path.join(ROOT, "data", "real-data.sha256")) as f:
        for line in f:
            digest, name = line.split()
            sums[name] = digest
    return sums


def read_source(name, sums):
    path = os.path.join(CACHE, name)
    if not os.path.isfile(path):
        sys.exit(f"{path} is missing: run `just data` first")
    with open(path, "rb") as f:
        data = f.read()
    if sha256(data) != sums[name]:
        sys.exit(f"{path}: SHA-256 {sha256(data)}, pinned {sums[name]}: run `just data`")
    return data


def write(name, data, manifest, **entry):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
    manifest["files"][name] = dict(entry, sha256=sha256(data))


def adult_sample(name, source, n, keep_first_line, sums, manifest):
    lines = read_source(source, sums).decode("ascii").split("\n")
    head = lines[:1] if keep_first_line else []
    rows = [l for l in lines[len(head):] if l.strip()]
    picked = sorted(random.Random(SEED).sample(range(len(rows)), n))
    text = "\n".join(head + [rows[i] for i in picked]) + "\n"
    write(name, text.encode("ascii"), manifest, source=source, rows=n, indices=picked)
    return text


def fashion_sample(prefix, per_class, sums, manifest):
    src = f"fashion-mnist/{prefix}"
    labels = read_source(f"{src}-labels-idx1-ubyte", sums)
    images = read_source(f"{src}-images-idx3-ubyte", sums)
    magic, count = struct.unpack(">II", labels[:8])
    magic_i, count_i, rows, cols = struct.unpack(">IIII", images[:16])
    assert (magic, magic_i, count, rows, cols) == (0x801, 0x803, count_i, 28, 28)
    lab = labels[8:]
    picked = []
    for c in range(10):
        of_class = [i for i in range(count) if lab[i] == c]
        picked += random.Random(SEED + c).sample(of_class, per_class)
    picked.sort()
    n = len(picked)
    size = rows * cols
    out_labels = struct.pack(">II", 0x801, n) + bytes(lab[i] for i in picked)
    out_images = struct.pack(">IIII", 0x803, n, rows, cols) + b"".join(
        images[16 + i * size : 16 + (i + 1) * size] for i in picked
    )
    name = f"fashion-mnist-sample-{prefix}"
    write(f"{name}-labels-idx1-ubyte", out_labels, manifest, source=f"{src}-labels-idx1-ubyte",
          rows=n, indices=picked)
    write(f"{name}-images-idx3-ubyte", out_images, manifest, source=f"{src}-images-idx3-ubyte",
          rows=n, indices=picked)
    return out_labels, out_images


def manifest_json(manifest):
    """Pretty JSON with each file's entry (and its index list) on one line."""
    files = manifest["files"]
    head = json.dumps({k: v for k, v in manifest.items() if k != "files"}, indent=1,
                      sort_keys=True)
    entries = ",\n".join(f"  {json.dumps(name)}: {json.dumps(files[name], sort_keys=True)}"
                          for name in sorted(files))
    return head[:-2] + ',\n "files": {\n' + entries + "\n }\n}\n"


def main():
    sums = pinned()
    os.makedirs(OUT, exist_ok=True)
    manifest = {
        "about": "Deterministic subsets of the real data for CI (tools/make_real_data_samples.py)",
        "seed": SEED,
        "sources": {k: v for k, v in sorted(sums.items()) if not k.endswith(".names")},
        "files": {},
    }
    data = adult_sample("adult-sample.data", "adult/adult.data", 500, False, sums, manifest)
    test = adult_sample("adult-sample.test", "adult/adult.test", 200, True, sums, manifest)
    train_fm = fashion_sample("train", 40, sums, manifest)
    test_fm = fashion_sample("t10k", 10, sums, manifest)
    with open(os.path.join(OUT, "MANIFEST.json"), "w") as f:
        f.write(manifest_json(manifest))

    # Checks: counts, class balance, missing values present, sizes.
    data_rows = [l for l in data.split("\n") if l.strip()]
    test_rows = [l for l in test.split("\n") if l.strip()]
    assert len(data_rows) == 500 and len(test_rows) == 201
    assert test_rows[0].startswith("|1x3 Cross validator")
    for rows in (data_rows, test_rows[1:]):
        assert all(len(r.split(",")) == 15 for r in rows)
        pos = sum(r.rstrip(".").endswith(">50K") for r in rows)
        missing = sum("?" in r for r in rows)
        print(f"adult sample: {len(rows)} rows, {pos} > 50K, {missing} with a missing value")
        assert 0 < pos < len(rows) and missing > 0
    for (labels, images), n in ((train_fm, 400), (test_fm, 100)):
        assert len(labels) == 8 + n and len(images) == 16 + n * 784
        assert all(labels[8:].count(c) == n // 10 for c in range(10))
    total = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT))
    print(f"wrote {len(os.listdir(OUT))} files, {total} bytes, under {OUT}")
    assert total < 1_000_000


if __name__ == "__main__":
    main()
