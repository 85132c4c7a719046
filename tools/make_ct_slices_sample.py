#!/usr/bin/env python3
"""Write tests/fixtures/ct_slices_sample.csv: 5 rows in the schema of the UCI CT-slices file
(header patientId, value0 ... value383, reference), for the loader tests of
src/data/ct_slices.rs (tests/suite/svr_ct_slices.rs).

    python3 tools/make_ct_slices_sample.py

Row r = 0..4: patientId = r // 2, value_j = ((r + 1) * (j + 1) % 17) / 16 - 0.25 (exact
binary fractions in [-0.25, 0.75], like the real file's range), reference = 10.5 * r + 0.25.
Numbers are written with Python's repr (exact); the test recomputes every cell from the same
formula. Standard library only; re-running gives a byte-identical file.
"""

N_FEATURES = 384
ROWS = 5
OUT = "tests/fixtures/ct_slices_sample.csv"


def main():
    lines = [",".join(["patientId"] + [f"value{j}" for j in range(N_FEATURES)] + ["reference"])]
    for r in range(ROWS):
        cells = [str(r // 2)]
        cells += [repr(((r + 1) * (j + 1) % 17) / 16 - 0.25) for j in range(N_FEATURES)]
        cells.append(repr(10.5 * r + 0.25))
        lines.append(",".join(cells))
    with open(OUT, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {OUT}: {ROWS} rows x {len(lines[0].split(','))} columns")


if __name__ == "__main__":
    main()
