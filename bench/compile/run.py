"""Compile-speed benchmark: cold `tessera build` against cold Triton compiles.

Run through `bench/compile/run.sh`, which builds the release `tessera`, sets
up target/bench-venv with Triton and runs this file with that environment's
Python:

    bench/compile/run.sh              # 5 runs of each measurement
    bench/compile/run.sh --runs 9 --kernels matmul --targets sm_90a

For each kernel (examples/matmul.tsr, bench/compile/softmax.tsr and their
Triton twins in triton_compile.py), each target (sm_80, sm_90a) and each
end point (up to PTX; up to PTX and cubin), it times, interleaved, RUNS
fresh processes of:

- tessera: `tessera build FILE --target T --emit ptx[,cubin] -o NEW_DIR`,
  wall clock of the process;
- triton, cold: triton_compile.py in a new Python process with new empty
  TRITON_CACHE_DIR and TRITON_HOME; the time inside `triton.compile(...)`
  and the wall clock of the process (interpreter start, `import triton`,
  compile, writing the files);
- triton, warm process: the same after an untimed compile of an unrelated
  kernel in the same process (Triton's cost of one more kernel).

and prints the medians and the ratios triton / tessera.
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

SOURCES = {
    "matmul": os.path.join(ROOT, "examples", "matmul.tsr"),
    "softmax": os.path.join(HERE, "softmax.tsr"),
}
TARGET = 5.0


def run(cmd, env=None):
    """Runs `cmd`, returns (wall seconds, stdout); exits on failure."""
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"compile-bench: `{' '.join(cmd)}` failed ({proc.returncode}):\n{proc.stderr}{proc.stdout}")
    return wall, proc.stdout


def without_ptxas(path):
    """PATH with every directory holding a `ptxas` removed."""
    return os.pathsep.join(d for d in path.split(os.pathsep) if d and not os.path.exists(os.path.join(d, "ptxas")))


def first_line(cmd):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True).stdout.strip().splitlines()
        return out[-1] if out else "?"
    except OSError:
        return "?"


def machine_info(tessera, tessera_from, ptxas):
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    if tessera_from is None:
        commit = first_line(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"])
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        tessera_from = f"the working tree at {commit}{', with uncommitted changes' if dirty else ''}"
    import triton
    return {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "cpu": cpu,
        "nproc": os.cpu_count(),
        "loadavg": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "tessera": f"{tessera}, built from {tessera_from}",
        "triton": triton.__version__,
        "ptxas": f"{ptxas}: {first_line([ptxas, '--version'])}",
        "python": platform.python_version(),
    }


def median_ms(xs):
    return 1000 * statistics.median(xs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5, help="timed runs of each measurement (default 5)")
    ap.add_argument("--tessera", required=True, help="the release tessera binary")
    ap.add_argument("--tessera-from", help="what the binary was built from (default: this checkout's commit)")
    ap.add_argument("--ptxas", default=os.path.join(ROOT, ".venv", "bin", "ptxas"),
                    help="ptxas for both compilers (default .venv/bin/ptxas from scripts/setup.sh)")
    ap.add_argument("--kernels", default="matmul,softmax")
    ap.add_argument("--targets", default="sm_80,sm_90a")
    ap.add_argument("--stops", default="ptx,cubin", help="end points: ptx, cubin (PTX assembled by ptxas)")
    ap.add_argument("--json", help="also write every measurement to this file")
    ap.add_argument("--keep", help="keep the outputs of the last run of each measurement in this directory")
    args = ap.parse_args()

    ptxas = os.path.abspath(args.ptxas)
    if not os.access(ptxas, os.X_OK):
        sys.exit(f"compile-bench: no ptxas at {ptxas} (scripts/setup.sh installs it into .venv/bin)")
    kernels = args.kernels.split(",")
    targets = args.targets.split(",")
    stops = args.stops.split(",")

    info = machine_info(args.tessera, args.tessera_from, ptxas)
    for k, v in info.items():
        print(f"{k:>8}: {v}")
    print()

    base_env = dict(os.environ)
    base_env.pop("TRITON_CACHE_DIR", None)
    no_ptxas_path = without_ptxas(base_env.get("PATH", ""))
    env_ptx = dict(base_env, PATH=no_ptxas_path)
    env_cubin = dict(base_env, PATH=os.path.dirname(ptxas) + os.pathsep + no_ptxas_path)
    scratch = tempfile.mkdtemp(prefix="compile-bench-")
    python = sys.executable
    script = os.path.join(HERE, "triton_compile.py")

    def tessera_once(kernel, target, stop, out):
        emit = "ptx" if stop == "ptx" else "ptx,cubin"
        wall, _ = run([args.tessera, "build", SOURCES[kernel], "--target", target, "--emit", emit, "-o", out],
                      env=env_ptx if stop == "ptx" else env_cubin)
        produced = sorted(os.listdir(out))
        want = {f"{kernel}.{target}.ptx"} | ({f"{kernel}.{target}.cubin"} if stop == "cubin" else set())
        if not want <= set(produced):
            sys.exit(f"compile-bench: tessera wrote {produced}, expected {sorted(want)}")
        return wall

    def triton_once(kernel, target, stop, out, warm):
        fresh = tempfile.mkdtemp(dir=scratch)
        env = dict(env_cubin, TRITON_CACHE_DIR=os.path.join(fresh, "cache"), TRITON_HOME=os.path.join(fresh, "home"),
                   TRITON_PTXAS_PATH=ptxas, PYTHONWARNINGS="ignore")
        cmd = [python, script, kernel, target, stop, out] + (["--warm"] if warm else [])
        wall, stdout = run(cmd, env=env)
        result = json.loads(stdout.strip().splitlines()[-1])
        if result["cache_hit"]:
            sys.exit("compile-bench: Triton found the kernel in its cache; the measurement is not cold")
        shutil.rmtree(fresh)
        return wall, result

    # One untimed round first, so that both read their binaries and libraries
    # from the page cache and Python's bytecode is compiled.
    for kernel in kernels:
        out = tempfile.mkdtemp(dir=scratch)
        tessera_once(kernel, targets[0], stops[-1], out)
        triton_once(kernel, targets[0], stops[-1], out, warm=False)

    rows = []
    records = []
    for kernel in kernels:
        for target in targets:
            for stop in stops:
                tess, tri_compile, tri_wall, tri_warm, tri_import = [], [], [], [], []
                for i in range(args.runs):
                    outs = [tempfile.mkdtemp(dir=scratch) for _ in range(3)]
                    tess.append(tessera_once(kernel, target, stop, outs[0]))
                    wall, res = triton_once(kernel, target, stop, outs[1], warm=False)
                    tri_wall.append(wall)
                    tri_compile.append(res["compile_s"])
                    tri_import.append(res["import_s"])
                    records.append(dict(kernel=kernel, target=target, stop=stop, run=i, tessera_s=tess[-1],
                                        triton_wall_s=wall, triton=res))
                    _, res_warm = triton_once(kernel, target, stop, outs[2], warm=True)
                    tri_warm.append(res_warm["compile_s"])
                    records[-1]["triton_warm"] = res_warm
                    if args.keep and i == args.runs - 1:
                        for name, o in zip(("tessera", "triton", "triton-warm"), outs):
                            dst = os.path.join(args.keep, f"{kernel}.{target}.{stop}", name)
                            shutil.rmtree(dst, ignore_errors=True)
                            shutil.copytree(o, dst)
                    for o in outs:
                        shutil.rmtree(o)
                rows.append(dict(kernel=kernel, target=target, stop=stop, tessera=median_ms(tess),
                                 tessera_min=1000 * min(tess), triton=median_ms(tri_compile),
                                 triton_wall=median_ms(tri_wall), triton_warm=median_ms(tri_warm),
                                 triton_import=median_ms(tri_import),
                                 stages=records[-1]["triton"]["stages"]))
                r = rows[-1]
                print(f"  measured {kernel} {target} up to {stop}: tessera {r['tessera']:.0f} ms, "
                      f"triton {r['triton']:.0f} ms", flush=True)
    shutil.rmtree(scratch, ignore_errors=True)

    print()
    print(f"Medians of {args.runs} cold runs each, in ms. Ratios are triton / tessera (> 1: tessera faster).")
    print("  tessera:      wall clock of `tessera build` (process start to exit)")
    print("  triton:       time inside `triton.compile(...)` in a fresh process with an empty cache")
    print("  triton wall:  wall clock of that whole process (python start, import triton, compile, write)")
    print("  triton warm:  `triton.compile(...)` after an untimed compile of another kernel in the same process")
    print("  up to ptx:    tessera without ptxas on PATH (it then does not assemble), triton without its cubin stage")
    print("  up to cubin:  both also run ptxas (the same binary) on their PTX")
    print()
    header = (f"| kernel | target | up to | tessera | triton | ratio | ≥{TARGET:.0f}x | triton wall | ratio "
              f"| triton warm | ratio |")
    print(header)
    print("|---|---|---|---:|---:|---:|---|---:|---:|---:|---:|")
    for r in rows:
        ratio = r["triton"] / r["tessera"]
        print(f"| {r['kernel']} | {r['target']} | {r['stop']} | {r['tessera']:.0f} | {r['triton']:.0f} "
              f"| {ratio:.2f} | {'yes' if ratio >= TARGET else 'no'} | {r['triton_wall']:.0f} "
              f"| {r['triton_wall'] / r['tessera']:.2f} | {r['triton_warm']:.0f} "
              f"| {r['triton_warm'] / r['tessera']:.2f} |")
    print()
    met = sum(r["triton"] / r["tessera"] >= TARGET for r in rows)
    print(f"target: tessera at least {TARGET:.0f}x faster than triton per kernel: met by {met} of {len(rows)} rows")
    print()
    print("Triton's stages in the last cold run of each, ms (ir_initialization includes the cache key,")
    print("which hashes Triton's own 500 MB library once per process):")
    for r in rows:
        stages = r["stages"] or {}
        parts = ", ".join(f"{k} {1000 * v:.0f}" for k, v in stages.items() if k != "cache_hit")
        print(f"  {r['kernel']} {r['target']} up to {r['stop']}: {parts}; import triton {r['triton_import']:.0f}")
    print(f"\nload average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(info=info, rows=rows, runs=records), f, indent=1)


if __name__ == "__main__":
    main()
