#!/usr/bin/env python3
"""Tessera's GPU benchmark harness (bench/gpu/README.md).

For each case: fresh random inputs (seed printed) written as .npy files;
the stdlib operator run by `tessera profile --device cuda`, its time the
median over runs of the kernel time per run in the trace; our output
checked against the anchor's; the anchors (torch and Triton) timed with
CUDA events on the same inputs. It prints a table and records it, with the
GPU, driver, versions, commit and command line, in bench/results/.

`--dry-run` needs neither a GPU nor torch: it prints the plan, builds each
.tsr file for sm_90a and checks every entry's signature against the
planned inputs, and, when numpy is importable, runs each entry on a small
shape on the CPU device through the same `tessera profile` path, checked
against a numpy reference.
"""

import argparse
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from statistics import median

try:
    import numpy as np
except ImportError:  # --dry-run runs without numpy (and then skips its CPU run)
    np = None
try:
    import torch
    import torch.nn.functional as F
except ImportError:  # --dry-run runs without torch
    torch = None
try:
    import triton_kernels
except Exception as e:  # the Triton anchors are optional (and a broken install only skips them)
    triton_kernels, triton_missing = None, str(e)

ROOT = Path(__file__).resolve().parents[2]
TARGET = "sm_90a"
FAMILIES = ("gemm", "gemm_fp8", "gemm_fp8_nt", "attention", "softmax", "layernorm")
RTOL = {"bf16": 2e-2, "f32": 1e-4}
ITEM_BYTES = {"f8e4m3": 1, "bf16": 2, "f32": 4}
LAYERNORM_EPS = 1e-5  # stdlib/nn.tsr's


class HarnessError(Exception):
    pass


@dataclass(frozen=True)
class Tensor:
    name: str  # the entry's parameter (or result) name
    shape: tuple
    dtype: str  # "bf16", "f32" or "f8e4m3" (the manifest's names)


@dataclass(frozen=True)
class Case:
    family: str
    file: str  # relative to the repository root
    entry: str
    shape: str  # as the table shows it
    inputs: tuple
    output: Tensor
    rtol: float
    atol: float | None = None  # None: rtol × the reference's RMS
    flops: int = 0  # > 0: the table shows TFLOP/s, otherwise GB/s of `bytes`
    bytes: int = 0
    causal: bool = False


def gemm(m, n, k):
    # torch.matmul's bf16 GEMM rounds its f32 sums to a bf16 result, and
    # so does gemm_bf16 (rows of whole 16-byte units, K and N multiples of
    # 8); other shapes take matmul_bf16, whose result is f32.
    if k % 8 == 0 and n % 8 == 0:
        return Case(
            "gemm", "stdlib/linalg.tsr", "gemm_bf16", f"{m}x{n}x{k} (MxNxK)",
            (Tensor("A", (m, k), "bf16"), Tensor("B", (k, n), "bf16")),
            Tensor("C", (m, n), "bf16"),
            rtol=RTOL["bf16"], flops=2 * m * n * k,
        )
    return gemm_case("gemm", "matmul_bf16", "bf16", m, n, k)


def gemm_fp8(m, n, k):
    # The anchor is cuBLASLt's fp8 GEMM (torch._scaled_mm, unit scales,
    # bf16 out). Hopper's fp8 tensor cores keep about 14 bits of their
    # accumulator, and Tessera's wgmma accumulates a whole K in them (as
    # _scaled_mm's use_fast_accum does): measured on an H100, the error is
    # about 2e-4 of sum |a·b|, so the check allows 2^-9 of its expectation
    # for standard normal operands rounded to E4M3 (E|a| E|b| = 0.64).
    case = gemm_case("gemm_fp8", "matmul_fp8", "f8e4m3", m, n, k)
    return replace(case, rtol=0.0, atol=FP8_ATOL * k)


# The fp8 check's atol per unit of K (gemm_fp8).
FP8_ATOL = 2.0**-9 * 0.64


def gemm_fp8_nt(m, n, k):
    # A @ Bᵀ with B given N×K (K % 16 == 0): the layout cuBLASLt's fp8
    # GEMM takes, which the anchor gets as a view of the same B, no copy.
    # Both round the f32 sums to a bf16 result (gemm_fp8_nt, N % 8 == 0):
    # the check allows that rounding, 2^-8 of the value, on top of fp8's.
    return Case(
        "gemm_fp8_nt", "stdlib/linalg.tsr", "gemm_fp8_nt", f"{m}x{n}x{k} (MxNxK)",
        (Tensor("A", (m, k), "f8e4m3"), Tensor("B", (n, k), "f8e4m3")),
        Tensor("C", (m, n), "bf16"),
        rtol=2.0**-8, atol=FP8_ATOL * k, flops=2 * m * n * k,
    )


def gemm_case(family, entry, dtype, m, n, k):
    # `entry`(A, B) -> f32 C; rows of whole 16-byte units let sm_90a load
    # both operands through TMA, in the `_aligned` variant.
    unit = 16 // ITEM_BYTES[dtype]
    if k % unit == 0 and n % unit == 0:
        entry += "_aligned"
    return Case(
        family, "stdlib/linalg.tsr", entry, f"{m}x{n}x{k} (MxNxK)",
        (Tensor("A", (m, k), dtype), Tensor("B", (k, n), dtype)),
        Tensor("C", (m, n), "f32"),
        rtol=RTOL["f32"], flops=2 * m * n * k,
    )


def attention(head_dim, causal, seq, batch, heads):
    shape = (batch, heads, seq, head_dim)
    # The two products' FLOPs; a causal pass does half of them.
    flops = 4 * batch * heads * seq * seq * head_dim // (2 if causal else 1)
    return Case(
        "attention", "stdlib/nn.tsr", f"{'causal_' if causal else ''}attention_d{head_dim}",
        f"B={batch} H={heads} S={seq} D={head_dim}",
        tuple(Tensor(name, shape, "bf16") for name in ("q", "k", "v")),
        Tensor("o", shape, "bf16"),
        rtol=2e-2, atol=2e-2, flops=flops, causal=causal,
    )


def softmax(rows, cols, dtype):
    return Case(
        "softmax", "stdlib/nn.tsr", "softmax" if dtype == "bf16" else "softmax_f32", f"{rows}x{cols} {dtype}",
        (Tensor("x", (rows, cols), dtype),),
        Tensor("y", (rows, cols), dtype),
        rtol=RTOL[dtype], bytes=2 * rows * cols * ITEM_BYTES[dtype],
    )


def layernorm(rows, cols, dtype):
    return Case(
        "layernorm", "stdlib/nn.tsr", "layernorm" if dtype == "bf16" else "layernorm_f32", f"{rows}x{cols} {dtype}",
        (Tensor("x", (rows, cols), dtype), Tensor("weight", (cols,), dtype), Tensor("bias", (cols,), dtype)),
        Tensor("y", (rows, cols), dtype),
        rtol=RTOL[dtype], bytes=(2 * rows * cols + 2 * cols) * ITEM_BYTES[dtype],
    )


def plan(families, quick):
    """The cases, in the order they run."""
    cases = []
    if "gemm" in families:
        shapes = [(2048, 2048, 2048)] if quick else [
            (4096, 4096, 4096),
            (8192, 8192, 8192),
            (4096, 4096, 14336),  # an MLP's down projection
            (4096, 14336, 4096),  # and its up projection
            (16, 4096, 4096),  # skinny: a decode step
        ]
        cases += [gemm(*shape) for shape in shapes]
    for family, make in (("gemm_fp8", gemm_fp8), ("gemm_fp8_nt", gemm_fp8_nt)):
        if family in families:
            shapes = [(2048, 2048, 2048)] if quick else [
                (4096, 4096, 4096),
                (8192, 8192, 8192),
                (4096, 4096, 14336),
                (16, 4096, 4096),  # a decode step: the narrow kernel
            ]
            cases += [make(*shape) for shape in shapes]
    if "attention" in families:
        runs = [(64, False, 1024)] if quick else [
            (head_dim, causal, seq)
            for head_dim in (64, 128)
            for causal in (False, True)
            for seq in (1024, 2048, 4096, 8192, 16384)
        ]
        # FlashAttention's benchmark shapes: 16k tokens, model width 2048.
        cases += [attention(d, c, s, batch=16384 // s, heads=2048 // d) for d, c, s in runs]
    for family, make in (("softmax", softmax), ("layernorm", layernorm)):
        if family in families:
            runs = [(4096, "bf16")] if quick else [
                (cols, dtype) for dtype in ("bf16", "f32") for cols in (1024, 2048, 4096, 8192, 16384, 32768)
            ]
            cases += [make(4096, cols, dtype) for cols, dtype in runs]
    return cases


# Every entry on a shape small enough for the CPU device (--dry-run); the
# shapes are not multiples of the tiles. Rows of a multiple of 8 columns
# and ragged ones take different kernels.
SMOKE_CASES = [
    gemm(130, 72, 96),
    gemm_fp8(130, 72, 96),
    gemm_fp8(130, 80, 96),
    gemm_fp8_nt(130, 72, 96),
    *(attention(d, c, 130, batch=1, heads=2) for d in (64, 128) for c in (False, True)),
    softmax(33, 1500, "bf16"),
    softmax(5, 8200, "bf16"),
    softmax(16, 777, "f32"),
    layernorm(40, 300, "bf16"),
    layernorm(6, 4104, "bf16"),
    layernorm(8, 2100, "f32"),
    layernorm(8, 1000, "f32"),
]


# --- Tessera's side --------------------------------------------------------


def profile_command(tessera, case, work, device, repeat, warmup):
    """The one `tessera profile` command line of a case: flags change here."""
    command = [str(tessera), "profile", case.file, "--device", device, "--entry", case.entry]
    for t in case.inputs:
        command += ["--input", f"{t.name}={work / (t.name + '.npy')}"]
    command += ["--output", str(work / "out.npy"), "-o", str(work / "profile")]
    command += ["--repeat", str(repeat), "--warmup", str(warmup)]
    return command


def twin(case):
    """The case with its entry's `@deterministic` twin (`<entry>_deterministic`
    in the same file), or None when the file has none."""
    entry = f"{case.entry}_deterministic"
    if re.search(rf"^def {entry}\(", (ROOT / case.file).read_text(), re.M):
        return replace(case, entry=entry)
    return None


def with_twins(cases):
    """`cases`, each followed by its deterministic twin where it has one."""
    return [c for case in cases for c in (case, twin(case)) if c is not None]


def entry_params(case, source):
    """The tensor parameters of the case's entry in its source: (name, the
    text of its dims) pairs, in order."""
    header = re.search(rf"^def {case.entry}\((.*?)\)\s*->", source, re.M | re.S)
    return re.findall(r"(\w+)\s*:\s*\w+\[([^\]]*)\]", header.group(1)) if header else []


def tune_dims(case, source):
    """The dims of the case's entry (its parameters' symbolic dims) at the
    case's input shapes, for `tessera tune --dim`."""
    params = dict(entry_params(case, source))
    dims = {}
    for t in case.inputs:
        for dim, size in zip(params.get(t.name, "").split(","), t.shape):
            if dim.strip().isidentifier():
                dims[dim.strip()] = size
    return dims


def tune(tessera, case, device):
    """With `--tune`: `tessera tune` of the case's entry at its shape, when
    it is an `@autotune` function, into the tuning cache that the
    profiles after it read ($TESSERA_CACHE_DIR, which main sets); the
    configuration chosen, or None for an entry without `@autotune`."""
    source = (ROOT / case.file).read_text()
    if not re.search(rf"^@autotune\(.*\)\n(?:@.*\n)*def {case.entry}\(", source, re.M):
        return None
    dims = [f"--dim={name}={size}" for name, size in tune_dims(case, source).items()]
    command = [str(tessera), "tune", case.file, "--entry", case.entry, "--device", device, *dims]
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    best = re.search(rf"best for `{case.entry}`: (.*) at ", proc.stdout)
    if proc.returncode != 0 or best is None:
        output = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-20:])
        raise HarnessError(f"`{shlex.join(command)}` exited with {proc.returncode}:\n{output}")
    return best.group(1)


def run_tessera(command):
    """Runs a tessera command from the repository root; HarnessError with
    the end of its output when it fails."""
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        output = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-30:])
        message = f"`{shlex.join(command)}` exited with {proc.returncode}"
        raise HarnessError(message + (f":\n{output}" if output else ""))


def kernel_ms(trace_path):
    """From a `tessera profile` trace: the median over its recorded runs of
    the run's summed kernel time in ms, and the kernels' names."""
    per_run, names = {}, set()
    for event in json.loads(trace_path.read_text())["traceEvents"]:
        if event.get("ph") == "X" and event.get("cat") == "kernel":
            run = event["args"]["run"]
            per_run[run] = per_run.get(run, 0.0) + event["dur"]
            names.add(event["name"])
    if not per_run:
        raise HarnessError(f"{trace_path} has no kernel events")
    return median(per_run.values()) / 1000.0, sorted(names)


# What `--ncu` asks Nsight Compute for: where the time goes in a kernel
# (throughput against the peaks, warp stall reasons, the pipes and the
# memory hierarchy), with the clocks left alone (device/METHOD.md).
NCU_SECTIONS = ("SpeedOfLight", "LaunchStats", "Occupancy", "WarpStateStats", "ComputeWorkloadAnalysis",
                "MemoryWorkloadAnalysis", "SchedulerStats")


def ncu_command(command):
    """`command` under Nsight Compute: its second kernel launch (after one
    warm-up) profiled, the sections of NCU_SECTIONS printed."""
    sections = [arg for name in NCU_SECTIONS for arg in ("--section", name)]
    return ["ncu", "--clock-control", "none", "--launch-skip", "1", "--launch-count", "1", *sections, *command]


def run_ours(tessera, case, inputs, device, repeat, warmup, ncu_dir=None):
    """Writes `inputs` (name → numpy array) as .npy files, profiles the
    case's entry on them; (median ms, kernel names, output as f32 numpy).
    With `ncu_dir`, one more run under Nsight Compute writes its report
    there (a text file named after the case)."""
    with tempfile.TemporaryDirectory(prefix="tessera-bench-") as tmp:
        work = Path(tmp)
        for t in case.inputs:
            save_npy(work / f"{t.name}.npy", inputs[t.name])
        run_tessera(profile_command(tessera, case, work, device, repeat, warmup))
        ms, kernels = kernel_ms(work / "profile" / "trace.json")
        output = load_npy(work / "out.npy")
        if ncu_dir is not None:
            command = ncu_command(profile_command(tessera, case, work, device, repeat=1, warmup=1))
            proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
            name = re.sub(r"[^A-Za-z0-9]+", "-", f"{case.entry} {case.shape}").strip("-")
            ncu_dir.mkdir(parents=True, exist_ok=True)
            (ncu_dir / f"{name}.txt").write_text(
                f"$ {shlex.join(command)}\nexit {proc.returncode}\n{proc.stdout}{proc.stderr}")
        return ms, kernels, output


def save_npy(path, array):
    """bf16 arrays are held as their uint16 bit patterns and written as
    `|V2`, E4M3 ones as their uint8 codes written as `|V1`: the .npy dtypes
    Tessera reads as bf16 and fp8_e4m3."""
    views = {np.dtype(np.uint16): "V2", np.dtype(np.uint8): "V1"}
    np.save(path, array.view(views[array.dtype]) if array.dtype in views else array)


def load_npy(path):
    """A .npy file as a float32 array; `|V2` (bf16) and `|V1` (E4M3) widened."""
    array = np.load(path)
    if array.dtype.kind == "V":
        array = array.view(np.uint16 if array.dtype.itemsize == 2 else np.uint8)
    return widen(array).astype(np.float32, copy=False)


def e4m3_values():
    """The float32 value of each E4M3 code (NaN for S.1111.111)."""
    codes = np.arange(256)
    e, m = (codes >> 3) & 15, (codes & 7).astype(np.float64)
    value = np.where(e == 0, m / 8 * 2.0**-6, (1 + m / 8) * 2.0 ** (e - 7))
    value = np.where(codes & 0x7F == 0x7F, np.nan, value)
    return np.where(codes & 0x80, -value, value).astype(np.float32)


def widen(array):
    """bf16 bit patterns (uint16) and E4M3 codes (uint8) as float32; other
    arrays as they are."""
    if array.dtype == np.uint16:
        return (array.astype(np.uint32) << 16).view(np.float32)
    if array.dtype == np.uint8:
        return e4m3_values()[array]
    return array


def check(ours, ref, rtol, atol):
    """(ok, max |ours − ref|): ok when every element is within
    atol + rtol·|ref|; atol None is rtol × the RMS of ref."""
    if ours.shape != ref.shape:
        return False, math.inf
    ref = ref.astype(np.float64)
    if atol is None:
        atol = rtol * math.sqrt(float(np.mean(ref * ref)))
    err = np.abs(ours.astype(np.float64) - ref)
    return bool(np.all(err <= atol + rtol * np.abs(ref))), float(err.max())


# --- the dry run -----------------------------------------------------------


def signature_problems(case, host, source):
    """What in the entry's host function (from the build's manifest) and
    its source does not fit the case's inputs and output."""
    if host is None:
        return [f"no host function `{case.entry}` in the manifest"]
    problems = []
    names = [name for name, _ in entry_params(case, source)]
    if names != [t.name for t in case.inputs]:
        problems.append(f"parameters {names} in {case.file}, the harness writes {[t.name for t in case.inputs]}")
    results = [host["params"][i] for i in host["results"]]
    inputs = [p for i, p in enumerate(host["params"]) if p["kind"] == "buffer" and i not in host["results"]]
    if len(inputs) != len(case.inputs) or len(results) != 1:
        return problems + [f"{len(inputs)} inputs and {len(results)} results in the module"]
    dims = {}
    for t, p in zip((*case.inputs, case.output), (*inputs, *results)):
        if p["dtype"] != t.dtype or len(p["shape"]) != len(t.shape):
            problems.append(f"`{t.name}` is {p['dtype']}{p['shape']} in the module, {t.dtype}{list(t.shape)} here")
            continue
        for dim, size in zip(p["shape"], t.shape):
            if dim.isdigit() and int(dim) != size:
                problems.append(f"`{t.name}`: a dim is {dim} in the module, {size} here")
            elif not dim.isdigit() and dims.setdefault(dim, size) != size:
                problems.append(f"`{t.name}`: {dim} = {dims[dim]} elsewhere, {size} here")
    return problems


def build(tessera, file, out_dir, emit):
    """Builds a .tsr file for TARGET; its manifest."""
    run_tessera([str(tessera), "build", file, "--target", TARGET, "--emit", emit, "-o", str(out_dir)])
    return json.loads((out_dir / f"{Path(file).stem}.{TARGET}.json").read_text())


def dry_run(cases, tessera, repeat, warmup, tuned=False):
    """Prints the plan and checks what runs without a GPU; the number of
    problems found."""
    print(f"plan: {len(cases)} cases, each run as (<work> is a new temporary directory):")
    for i, case in enumerate(cases, 1):
        command = profile_command(tessera, case, Path("<work>"), "cuda", repeat, warmup)
        print(f"[{i}/{len(cases)}] {case.entry} {case.shape}\n    {shlex.join(command)}")
    emit = "ptx,cubin" if shutil.which("ptxas") else "ptx"
    if emit == "ptx":
        print("\nnote: ptxas is not on PATH, so the PTX is not assembled (scripts/setup.sh puts it in .venv/bin)")
    problems = 0
    with tempfile.TemporaryDirectory(prefix="tessera-bench-") as tmp:
        for file in sorted({case.file for case in cases}):
            started = time.monotonic()
            try:
                manifest = build(tessera, file, Path(tmp) / Path(file).stem, emit)
            except HarnessError as e:
                print(f"\nFAIL build {file}: {e}")
                problems += 1
                continue
            print(f"\nbuilt {file} for {TARGET} (--emit {emit}) in {time.monotonic() - started:.1f} s")
            hosts = {f["name"]: f for f in manifest["host_functions"]}
            kernels = {k["name"]: k for k in manifest["kernels"]}
            source = (ROOT / file).read_text()
            for entry in dict.fromkeys(c.entry for c in cases if c.file == file):
                shapes = [c for c in cases if c.entry == entry]
                found = [f"{c.shape}: {p}" for c in shapes for p in signature_problems(c, hosts.get(entry), source)]
                problems += len(found)
                if found:
                    print("\n".join(f"  FAIL {entry} {line}" for line in found))
                    continue
                launched = [describe_launch(launch, kernels) for launch in hosts[entry]["launches"]]
                count = f"{len(shapes)} shape{'s' if len(shapes) > 1 else ''}"
                print(f"  ok   {entry} ({count}): launches " + ", ".join(launched))
    if np is None:
        print("\nnote: numpy is not importable, so the entries are not run on the CPU device")
        return problems
    return problems + cpu_smoke(cases, tessera, tuned)


def describe_launch(launch, kernels):
    kernel = kernels[launch["kernel"]]
    text = f"{kernel['name']} (block {kernel['block'][0]}, {kernel['shared_bytes']} B shared"
    if kernel["registers"] is not None:
        text += f", {kernel['registers']} registers, {kernel['spill_bytes']} B spilled"
    if launch.get("when"):
        text += f", when {launch['when']}"
    return text + ")"


def cpu_smoke(cases, tessera, tuned=False):
    """Runs each planned entry on a small shape on the CPU device through
    `tessera profile` (with `tuned`, after `tessera tune` at that shape on
    the CPU), checked against a numpy reference; the failures."""
    entries = {case.entry for case in cases}
    smoke = [case for case in with_twins(SMOKE_CASES) if case.entry in entries]
    print(f"\nthe same path on the CPU device, {len(smoke)} entries on small shapes (seed 0):")
    failures = 0
    for case in smoke:
        rng = np.random.default_rng(0)
        inputs = {t.name: numpy_random(rng, t) for t in case.inputs}
        try:
            config = tune(tessera, case, "cpu") if tuned else None
            ms, kernels, ours = run_ours(tessera, case, inputs, "cpu", repeat=2, warmup=1)
        except HarnessError as e:
            print(f"  FAIL {case.entry} {case.shape}: {e}")
            failures += 1
            continue
        ok, err = check(ours, numpy_reference(case, {k: widen(v) for k, v in inputs.items()}), case.rtol, case.atol)
        failures += not ok
        print(f"  {'ok  ' if ok else 'FAIL'} {case.entry} {case.shape}: {', '.join(kernels)} {ms:.1f} ms, "
              f"max |err| {err:.1e}" + (f", tuned {config}" if config else ""))
    return failures


def numpy_random(rng, t):
    """Standard normal values of a tensor's dtype (bf16 as bit patterns);
    E4M3 codes of magnitude up to 4, uniformly, either sign."""
    if t.dtype == "f8e4m3":
        return (rng.integers(0, 0x49, t.shape) | rng.integers(0, 2, t.shape) << 7).astype(np.uint8)
    x = rng.standard_normal(t.shape, dtype=np.float32)
    if t.dtype == "f32":
        return x
    bits = x.view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)  # round to nearest even


def numpy_reference(case, x):
    """The case's result in float64 from float32 inputs."""
    x = {k: v.astype(np.float64) for k, v in x.items()}
    if case.family in ("gemm", "gemm_fp8"):
        return x["A"] @ x["B"]
    if case.family == "gemm_fp8_nt":
        return x["A"] @ x["B"].T
    if case.family == "softmax":
        e = np.exp(x["x"] - x["x"].max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    if case.family == "layernorm":
        centered = x["x"] - x["x"].mean(axis=-1, keepdims=True)
        rstd = 1.0 / np.sqrt((centered * centered).mean(axis=-1, keepdims=True) + LAYERNORM_EPS)
        return centered * rstd * x["weight"] + x["bias"]
    scores = x["q"] @ x["k"].swapaxes(-1, -2) / math.sqrt(x["q"].shape[-1])
    if case.causal:
        seq = scores.shape[-1]
        scores = np.where(np.tri(seq, dtype=bool), scores, -np.inf)
    p = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ x["v"]


# --- the GPU run -----------------------------------------------------------


def scaled_mm_anchors(a, b_columns):
    """cuBLASLt's fp8 GEMM of `a` by the column-major `b_columns` (unit
    scales, a bf16 result), with and without fast accumulation."""
    one = torch.ones((), device="cuda")
    return [
        ("torch._scaled_mm", lambda: torch._scaled_mm(
            a, b_columns, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)),
        ("torch._scaled_mm fast accum", lambda: torch._scaled_mm(
            a, b_columns, scale_a=one, scale_b=one, out_dtype=torch.bfloat16, use_fast_accum=True)),
    ]


def anchors(case, t):
    """The reference our result is checked against, and the timed anchors
    (name, function) on the tensors `t`."""
    if case.family == "gemm":
        # cuBLAS's fast path: bf16 operands, f32 accumulation, a bf16 result.
        # The check uses an f32 product of the same operands (TF32 off).
        reference = lambda: torch.matmul(t["A"].float(), t["B"].float())
        timed = [("torch.matmul", lambda: torch.matmul(t["A"], t["B"]))]
        if triton_kernels:
            timed.append(("triton matmul", lambda: triton_kernels.matmul(t["A"], t["B"])))
    elif case.family == "gemm_fp8":
        # The same values in f32; cuBLASLt wants B column-major (made once,
        # outside the timing) and scales.
        reference = lambda: torch.matmul(t["A"].float(), t["B"].float())
        timed = scaled_mm_anchors(t["A"], t["B"].t().contiguous().t())
    elif case.family == "gemm_fp8_nt":
        # B is N×K: its transpose is the column-major K×N cuBLASLt takes.
        reference = lambda: torch.matmul(t["A"].float(), t["B"].float().t())
        timed = scaled_mm_anchors(t["A"], t["B"].t())
    elif case.family == "attention":
        from torch.nn.attention import SDPBackend, sdpa_kernel

        def sdpa():
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                return F.scaled_dot_product_attention(t["q"], t["k"], t["v"], is_causal=case.causal)

        reference = sdpa
        timed = [("torch SDPA flash", sdpa)]
        if triton_kernels:
            timed.append(("triton attention",
                          lambda: triton_kernels.attention(t["q"], t["k"], t["v"], case.causal)))
    elif case.family == "softmax":
        reference = lambda: torch.softmax(t["x"], dim=-1)
        timed = [("torch.softmax", reference)]
        if triton_kernels:
            timed.append(("triton softmax", lambda: triton_kernels.softmax(t["x"])))
    else:
        cols = t["x"].shape[-1]
        reference = lambda: F.layer_norm(t["x"], (cols,), t["weight"], t["bias"], eps=LAYERNORM_EPS)
        timed = [("F.layer_norm", reference)]
        if triton_kernels:
            timed.append(("triton layernorm",
                          lambda: triton_kernels.layernorm(t["x"], t["weight"], t["bias"], LAYERNORM_EPS)))
    return reference, timed


def cuda_ms(fn, warmup, repeat, flush):
    """The median time of `fn` over `repeat` calls after `warmup` calls, in
    ms, each call timed with CUDA events after L2 is flushed (zeroing
    `flush`, a buffer larger than L2)."""
    for _ in range(warmup):
        fn()
    events = []
    for _ in range(repeat):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        events.append((start, end))
    torch.cuda.synchronize()
    return median(start.elapsed_time(end) for start, end in events)


def measure(case, seed, tessera, repeat, warmup, flush, ncu_dir=None, tuned=False, deterministic=False):
    """One case on the GPU: a dict of what the results record (with
    `tuned`, the entry tuned at the case's shape first; with
    `deterministic`, its deterministic twin timed and checked too, on the
    same inputs)."""
    generator = torch.Generator(device="cuda").manual_seed(seed)
    dtypes = {"bf16": torch.bfloat16, "f32": torch.float32, "f8e4m3": torch.float8_e4m3fn}
    t = {x.name: torch.randn(x.shape, generator=generator, device="cuda").to(dtypes[x.dtype]) for x in case.inputs}
    bits = {torch.bfloat16: (torch.int16, np.uint16), torch.float8_e4m3fn: (torch.uint8, np.uint8)}
    host = {name: (x.view(bits[x.dtype][0]).cpu().numpy().view(bits[x.dtype][1]) if x.dtype in bits
                   else x.cpu().numpy())
            for name, x in t.items()}
    result = {"entry": case.entry, "shape": case.shape, "seed": seed, "flops": case.flops, "bytes": case.bytes}
    try:
        if tuned:
            result["config"] = tune(tessera, case, "cuda")
        result["ours_ms"], result["kernels"], ours = run_ours(tessera, case, host, "cuda", repeat, warmup, ncu_dir)
    except HarnessError as e:
        result["error"] = str(e)
        return result
    reference_fn, timed = anchors(case, t)
    try:
        reference = reference_fn().float().cpu().numpy()
    except Exception as e:  # reported in the table; the other cases go on
        result["error"] = f"the reference failed: {type(e).__name__}: {e}"
        return result
    result["ok"], result["max_err"] = check(ours, reference, case.rtol, case.atol)
    twin_case = twin(case) if deterministic else None
    if twin_case is not None:
        result["deterministic"] = measure_twin(twin_case, host, reference, tessera, repeat, warmup, tuned)
    result["anchors"] = {}
    for name, fn in timed:
        try:
            out = fn()
            # An anchor is checked with the tolerance of its own result's dtype.
            rtol = max(case.rtol, RTOL["bf16"] if out.dtype == torch.bfloat16 else 0.0)
            ok, err = check(out.float().cpu().numpy(), reference, rtol, case.atol)
            result["anchors"][name] = {"ms": cuda_ms(fn, warmup, repeat, flush), "ok": ok, "max_err": err}
        except Exception as e:  # a failing anchor is reported, not fatal
            result["anchors"][name] = {"error": f"{type(e).__name__}: {e}".splitlines()[0]}
    if case.bytes:
        x = t["x"]
        y = torch.empty_like(x)
        result["copy_ms"] = cuda_ms(lambda: y.copy_(x), warmup, repeat, flush)
        result["copy_bytes"] = 2 * x.numel() * x.element_size()
    return result


def measure_twin(case, host, reference, tessera, repeat, warmup, tuned):
    """The deterministic twin `case` on the inputs `host`: what the results
    record of it."""
    twin_result = {"entry": case.entry}
    try:
        if tuned:
            twin_result["config"] = tune(tessera, case, "cuda")
        twin_result["ms"], twin_result["kernels"], out = run_ours(tessera, case, host, "cuda", repeat, warmup)
    except HarnessError as e:
        twin_result["error"] = str(e)
        return twin_result
    twin_result["ok"], twin_result["max_err"] = check(out, reference, case.rtol, case.atol)
    return twin_result


def best_anchor(result):
    """The fastest anchor whose result passed its check: (name, ms)."""
    passed = [(name, a["ms"]) for name, a in result.get("anchors", {}).items() if a.get("ok")]
    return min(passed, key=lambda anchor: anchor[1], default=(None, None))


def rate(amount, ms):
    return amount / (ms * 1e-3)


TABLE_HEADER = ("case", "shape", "ours ms", "anchor", "anchor ms", "ours", "anchor ms / ours ms", "copy GB/s",
                "max err", "check")


def table_row(result):
    if "error" in result:
        return (result["entry"], result["shape"], "error", "", "", "", "", "", "", "ERROR")
    ours = result["ours_ms"]
    name, anchor = best_anchor(result)
    speed = (f"{rate(result['flops'], ours) / 1e12:.1f} TFLOP/s" if result["flops"]
             else f"{rate(result['bytes'], ours) / 1e9:.0f} GB/s")
    copy = f"{rate(result['copy_bytes'], result['copy_ms']) / 1e9:.0f}" if "copy_ms" in result else ""
    return (
        result["entry"], result["shape"], f"{ours:.3f}", name or "none", "" if anchor is None else f"{anchor:.3f}",
        speed, "" if anchor is None else f"{anchor / ours:.2f}x", copy, f"{result['max_err']:.1e}",
        "OK" if result["ok"] else "FAIL",
    )


def markdown_table(results):
    return markdown_rows(TABLE_HEADER, [table_row(r) for r in results])


def markdown_rows(header, body):
    rows = [header] + body
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    line = lambda row: "| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths)) + " |"
    return "\n".join([line(rows[0]), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [line(r) for r in rows[1:]])


TWIN_HEADER = ("case", "shape", "ours ms", "deterministic twin", "twin ms", "ours ms / twin ms", "max err", "check")


def twin_table(results):
    """The table of the deterministic twins' times against their
    entries', or None when no twin ran."""
    rows = []
    for r in results:
        d = r.get("deterministic")
        if d is None:
            continue
        if "error" in d or "ours_ms" not in r:
            rows.append((r["entry"], r["shape"], "", d["entry"], "error", "", "", "ERROR"))
            continue
        rows.append((r["entry"], r["shape"], f"{r['ours_ms']:.3f}", d["entry"], f"{d['ms']:.3f}",
                     f"{r['ours_ms'] / d['ms']:.2f}x", f"{d['max_err']:.1e}", "OK" if d["ok"] else "FAIL"))
    return markdown_rows(TWIN_HEADER, rows) if rows else None


def outcome_notes(entry, shape, record):
    """Markdown lines on the configuration tuned for one of our entries at
    a shape, and its error, from what the results record of it."""
    lines = []
    if record.get("config"):
        lines.append(f"- {entry} {shape}: tuned at this shape, {record['config']}")
    if "error" in record:
        lines += [f"- {entry} {shape}:", "", "```", record["error"], "```", ""]
    return lines


def notes(results):
    """Markdown lines on the configurations tuned, the cases that failed
    and the anchors left out of the comparison."""
    lines = []
    for r in results:
        lines += outcome_notes(r["entry"], r["shape"], r)
        if "deterministic" in r:
            lines += outcome_notes(r["deterministic"]["entry"], r["shape"], r["deterministic"])
        for name, a in r.get("anchors", {}).items():
            if "error" in a:
                lines.append(f"- {r['entry']} {r['shape']}: {name} failed: {a['error']}")
            elif not a["ok"]:
                lines.append(f"- {r['entry']} {r['shape']}: {name} left out, its result is off by {a['max_err']:.1e}")
    return lines


def command_output(command):
    try:
        return subprocess.run(command, cwd=ROOT, capture_output=True, text=True).stdout.strip()
    except FileNotFoundError:
        return ""


def environment(args, seed):
    driver = command_output(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        "gpu": torch.cuda.get_device_name(),
        "driver": driver.splitlines()[0] if driver else "unknown",
        "cuda": torch.version.cuda,
        "torch": torch.__version__,
        "triton": triton_kernels.triton.__version__ if triton_kernels else None,
        "commit": command_output(["git", "rev-parse", "--short", "HEAD"]),
        "uncommitted_changes": bool(command_output(["git", "status", "--porcelain", "--untracked-files=no"])),
        "tessera": str(args.tessera),
        "command": shlex.join([Path(sys.executable).name, *sys.argv]),
        "seed": seed,
        "repeat": args.repeat,
        "warmup": args.warmup,
    }


def results_path(out_dir, env):
    """A new `<date>-<gpu>-<commit>[-n].md` in `out_dir`."""
    slug = re.sub(r"[^a-z0-9]+", "-", env["gpu"].lower()).strip("-")
    stem = f"{env['date']}-{slug}-{env['commit']}"
    path = out_dir / f"{stem}.md"
    n = 1
    while path.exists() or path.with_suffix(".json").exists():
        n += 1
        path = out_dir / f"{stem}-{n}.md"
    return path


def write_results(path, env, results, cases):
    """The table of `results` (the first of `cases`) at `path`, the
    results themselves beside it in JSON; the table's text."""
    table = markdown_table(results)
    twins = twin_table(results)
    if twins:
        table += "\n\nThe deterministic twins, on the same inputs:\n\n" + twins
    note_lines = notes(results)
    if len(results) < len(cases):
        note_lines.append(f"- the run stopped after {len(results)} of its {len(cases)} cases")
    changes = " (with uncommitted changes)" if env["uncommitted_changes"] else ""
    text = [
        f"# {env['gpu']}, {env['date']}",
        "",
        f"- commit `{env['commit']}`{changes}, `{env['tessera']}`",
        f"- driver {env['driver']}, CUDA {env['cuda']}, torch {env['torch']}, "
        f"triton {env['triton'] or 'not installed'}",
        f"- command: `{env['command']}`",
        f"- seed {env['seed']} (case i uses seed + i); every time is the median of {env['repeat']} runs "
        f"after {env['warmup']} untimed ones",
        "",
        table,
        "",
        *note_lines,
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(text).rstrip() + "\n")
    path.with_suffix(".json").write_text(json.dumps({"environment": env, "results": results}, indent=1) + "\n")
    return "\n".join([table, "", *note_lines]).rstrip()


def gpu_run(cases, args):
    if not torch.cuda.is_available():
        raise HarnessError("torch sees no CUDA device; --dry-run checks what runs without one")
    if triton_kernels is None:
        print(f"note: Triton is not importable ({triton_missing}), so the Triton anchors are skipped")
    torch.backends.cuda.matmul.allow_tf32 = False  # the gemm reference is a true f32 product
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little") % 2**31
    print(f"{torch.cuda.get_device_name()}, seed {seed}")
    flush = torch.empty(256 * 2**20, dtype=torch.int8, device="cuda")
    env = environment(args, seed)
    # Written again after every case, so that a run stopped early keeps
    # what it measured.
    path = results_path(args.out, env)
    results = []
    for i, case in enumerate(cases):
        result = measure(case, seed + i, args.tessera, args.repeat, args.warmup, flush, args.ncu, args.tune,
                         args.deterministic)
        results.append(result)
        print(f"[{i + 1}/{len(cases)}] " + " | ".join(table_row(result)), flush=True)
        if "error" in result:
            print(result["error"], flush=True)
        torch.cuda.empty_cache()
        report = write_results(path, env, results, cases)
    print("\n" + report)
    print(f"\nwrote {path} and {path.with_suffix('.json').name}")
    return all(r.get("ok") and r.get("deterministic", {"ok": True}).get("ok") for r in results)


def families(text):
    chosen = [f for f in text.split(",") if f]
    unknown = set(chosen) - set(FAMILIES)
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown families {sorted(unknown)}; choose from {','.join(FAMILIES)}")
    return chosen


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tessera", type=Path, default=ROOT / "target/release/tessera", help="the tessera binary")
    parser.add_argument("--only", type=families, default=list(FAMILIES), help=f"families, from {','.join(FAMILIES)}")
    parser.add_argument("--quick", action="store_true", help="one small shape per family")
    parser.add_argument("--cases", type=re.compile, metavar="REGEX",
                        help="only the cases whose `entry shape` text this matches (say 'S=(1024|16384) ')")
    parser.add_argument("--repeat", type=int, default=20, help="timed runs of each kernel (median)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed runs first")
    parser.add_argument("--seed", type=int, help="the first case's seed (default: random, printed)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results", help="where the results go")
    parser.add_argument("--ncu", type=Path, metavar="DIR",
                        help="also run each of our kernels once under Nsight Compute, its report a text file in DIR")
    parser.add_argument("--tune", action="store_true",
                        help="tune each `@autotune` entry at the case's shape (`tessera tune`) before timing it")
    parser.add_argument("--deterministic", action="store_true",
                        help="also time each entry's `@deterministic` twin (`<entry>_deterministic`), where it has one")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the plan and check what runs without a GPU (no torch needed)")
    args = parser.parse_args()
    args.tessera = args.tessera.resolve()
    if not args.tessera.is_file():
        parser.error(f"{args.tessera} does not exist: `cargo build --release -p tessera-cli`, or pass --tessera")
    cases = [c for c in plan(args.only, args.quick) if args.cases is None or args.cases.search(f"{c.entry} {c.shape}")]
    if not cases:
        parser.error("no case of the plan matches --cases")
    if args.tune:
        # The tunings of this run, which its profiles read.
        cache = Path(tempfile.mkdtemp(prefix="tessera-tune-"))
        os.environ["TESSERA_CACHE_DIR"] = str(cache)
        print(f"tuning into {cache}")
    if args.dry_run:
        problems = dry_run(with_twins(cases) if args.deterministic else cases, args.tessera, args.repeat, args.warmup, args.tune)
        print(f"\ndry run: {'no problems' if problems == 0 else f'{problems} problems'}")
        return 0 if problems == 0 else 1
    if np is None or torch is None:
        parser.error("the GPU run needs torch and numpy; --dry-run needs neither")
    try:
        return 0 if gpu_run(cases, args) else 1
    except HarnessError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
