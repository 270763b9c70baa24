"""Prints random arrays with NumPy and with `tessera run` and compares.

Usage: print_compare.py TESSERA WORKDIR SEED COUNT

Writes COUNT random arrays (f64, f32, f16, i32, i64, bool, and ml_dtypes'
bfloat16 and float8_e4m3fn; 0 to 3 dims,
some long enough to be summarized; magnitudes from 1e-30 to 1e30, integral
values, eighths, zeros of both signs, inf and nan) as .npy files, a .tsr
program that loads and prints each, and compares its standard output with
NumPy's `str` and `repr` of each array and the `str` and `repr` of its first
element, alone and in a list, line by line. Exits 1 with the first
differences, 0 with "print: ok COUNT".
"""

import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np


def random_array(rng, i):
    dtypes = [np.float32, np.float64, np.float16, np.int32, np.int64, np.bool_, ml_dtypes.bfloat16,
              ml_dtypes.float8_e4m3fn]
    dtype = dtypes[rng.integers(0, len(dtypes))]
    if rng.integers(0, 4):
        dims = rng.integers(0, 4)
        shape = tuple(int(s) for s in rng.integers(1, 5, size=dims))
    else:
        shape = tuple(int(s) for s in rng.integers(1, 40, size=rng.integers(1, 4)))
    size = int(np.prod(shape))
    if dtype in (np.int32, np.int64):
        bound = 10 ** int(rng.integers(1, 9))
        x = rng.integers(-bound, bound, size=size).astype(dtype)
    elif dtype == np.bool_:
        x = rng.integers(0, 2, size=size).astype(bool)
    else:
        kind = rng.integers(0, 6)
        x = rng.standard_normal(size) * 10.0 ** rng.integers(-12, 12)
        if kind == 1:
            x = np.round(x)
        elif kind == 2:
            x[rng.integers(0, size)] = rng.choice([np.inf, -np.inf, np.nan, 0.0, -0.0])
        elif kind == 3:
            x = x * 10.0 ** rng.integers(-30, 30, size=size)
        elif kind == 4:
            x = np.round(x * 8) / 8
        if dtype == ml_dtypes.float8_e4m3fn:
            # No infinities: they become NaN; values past 448 too.
            x = np.clip(np.nan_to_num(x, nan=0.0), -448.0, 448.0)
        with np.errstate(over="ignore", invalid="ignore"):
            x = x.astype(dtype)
    return x.reshape(shape)


def main():
    tessera, workdir, seed, count = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    rng = np.random.default_rng(seed)
    lines = ["def main():"]
    expected = []
    for i in range(count):
        x = random_array(rng, i)
        path = workdir / f"a{i}.npy"
        np.save(path, x)
        lines.append(f'    print(load("{path}"))')
        expected.append(str(x))
        if x.ndim > 0:
            lines.append(f'    print(repr(load("{path}")))')
            expected.append(repr(x))
        if x.ndim > 0:
            # An element is NumPy's scalar of the dtype: its `str` and its
            # `repr`, alone and in a list.
            at = ", ".join(["0"] * x.ndim)
            lines.append(f'    print(load("{path}")[{at}])')
            element = x[(0,) * x.ndim]
            expected.append(str(element))
            lines.append(f'    print(repr(load("{path}")[{at}]), [load("{path}")[{at}]], f"{{load(\'{path}\')[{at}]!s}}")')
            expected.append(f"{element!r} {[element]} {element!s}")
    program = workdir / "print.tsr"
    program.write_text("\n".join(lines) + "\n")
    run = subprocess.run([tessera, "run", str(program)], capture_output=True, text=True)
    want = "\n".join(expected) + "\n"
    if run.returncode != 0 or run.stdout != want:
        print(f"seed {seed}: tessera's output differs from NumPy {np.__version__}'s")
        shown = 0
        for got, wanted in zip(run.stdout.split("\n"), want.split("\n")):
            if got != wanted and shown < 10:
                print(f"  tessera: {got!r}\n  numpy:   {wanted!r}")
                shown += 1
        print(run.stderr[:4000])
        sys.exit(1)
    print(f"print: ok {count}")


main()
