#!/usr/bin/env python3
"""te-mlir CPU benchmarks: FP8 quantize throughput, JIT latencies, attention.

Runs every section side by side in one process and writes, per benchmark,
bench/results/<name>.json, then a chart bench/results/summary.png and a short
table on stdout. What each number means, and how to read it, is in
bench/README.md.

    .venv/bin/python bench/run_benchmarks.py            # about 7 minutes
    .venv/bin/python bench/run_benchmarks.py --quick    # fewer repeats

The sections:

1. fp8_quantize: per-tensor te.quantize of a 64 MiB f32 tensor to
   f8E4M3FN (with scale_inv and amax), timed by `te-run --bench`, against a
   numpy memcpy of the same tensor and against a numpy + ml_dtypes
   implementation of the same quantization.
   Target: te quantize throughput >= 0.7 x memcpy throughput.
2. jit_latency: te.amax of a tensor<1024xf32>: cold compile (empty kernel
   cache), disk-warm (a new te-run process, the kernel cache filled) and
   memory-hot launch overhead (`te-run --bench 1000`).
   Targets: hot launch <= 5 us; disk-warm new process <= 20 ms.
3. attention_fwd: te.attention forward (b=1, h=16, s=1024/2048/4096,
   d=64/128, no_mask/causal, f32/bf16, bshd) timed by `te-run
   --random-inputs --bench N`, against the plain numpy + OpenBLAS way of
   computing it in f32 (bench/attention_numpy.py, in its own process
   without OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE, one BLAS thread), plus a
   correctness check of both against the float64 reference.
   Target: speedup (numpy time / te time) >= 1.5 at s=4096.

6. gemm: te.scaled_matmul (TE's TN forward, D = A B^T, bf16 out) of
   M = N = K in {512, 1024, 2048, 4096} and a TE-shaped one (4096 tokens,
   hidden 4096 -> 11008), with bf16 operands and with per-tensor FP8
   (e4m3) operands, against torch's bf16 matmul on the same values (and
   torch._scaled_mm where torch's CPU build has it, and torch's f32 matmul
   of the same values, its fastest GEMM on processors without AVX512-BF16
   or AMX), interleaved, at one thread and at every core
   (bench/gemm_peers.py in its own process).
   Targets: te speed >= 0.9 x torch's bf16 matmul with bf16 operands,
   >= 0.8 x with FP8 operands. Also te.grouped_matmul (8 groups of uneven
   sizes, 4096 tokens, 2048 -> 2048; bf16 and per-group FP8) against the
   same GEMMs as 8 te.scaled_matmul ops in one program and against torch's
   loop of one matmul per group. Target: grouped time <= 1.1 x the sum of
   its GEMMs.
5. collectives: te.all_reduce (sum) and te.all_gather (dim 0) of f32 from
   1 KiB to 64 MiB per rank, at 2 and 4 ranks (mpirun; 4 oversubscribes a
   2-core machine), against MPI_Allreduce / MPI_Allgather on the same
   buffers in alternating rounds of one run (build/bin/te-collective-bench).
   Targets: bus bandwidth >= 0.95 x raw MPI from 1 MiB; per-call overhead
   <= 5 us above raw MPI up to 4 KiB.

Only te-run (a subprocess), numpy, ml_dtypes, threadpoolctl (optional: it
limits and reports numpy's BLAS) and, for the chart, matplotlib are used.
Nothing outside bench/results/ and a temporary directory is written.
"""
import argparse
import datetime
import importlib.util
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import ml_dtypes
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TE_RUN = ROOT / "build" / "bin" / "te-run"
DEFAULT_OUT = ROOT / "bench" / "results"
MIB = 1 << 20
GB = 1e9  # throughputs are in GB/s = 1e9 bytes per second

# ---------------------------------------------------------------------------
# Programs
# ---------------------------------------------------------------------------

QUANTIZE_SHAPE = (4096, 4096)  # 16M elements: 64 MiB of f32
FP8_MAX = 448.0  # largest finite f8E4M3FN
QUANTIZE_PROGRAM = """\
func.func @quantize(%x: tensor<{m}x{n}xf32>, %s: tensor<f32>)
    -> (tensor<{m}x{n}xf8E4M3FN>, tensor<f32>, tensor<f32>) {{
  %d, %si, %a = te.quantize %x scale(%s) mode per_tensor
      : tensor<{m}x{n}xf32>, tensor<f32>
      -> tensor<{m}x{n}xf8E4M3FN>, tensor<f32>, tensor<f32>
  return %d, %si, %a : tensor<{m}x{n}xf8E4M3FN>, tensor<f32>, tensor<f32>
}}
""".format(m=QUANTIZE_SHAPE[0], n=QUANTIZE_SHAPE[1])

AMAX_N = 1024
AMAX_PROGRAM = """\
func.func @amax(%x: tensor<{n}xf32>) -> tensor<f32> {{
  %a = te.amax %x : tensor<{n}xf32> -> tensor<f32>
  return %a : tensor<f32>
}}
""".format(n=AMAX_N)

# A small attention program, only to ask te-run whether te.attention
# compiles for the CPU yet.
ATTENTION_PROBE_PROGRAM = """\
func.func @attention(%q: tensor<1x128x16x64xf32>, %k: tensor<1x128x16x64xf32>,
                     %v: tensor<1x128x16x64xf32>) -> tensor<1x128x16x64xf32> {
  %o = te.attention %q, %k, %v layout bshd mask causal
      : (tensor<1x128x16x64xf32>, tensor<1x128x16x64xf32>,
         tensor<1x128x16x64xf32>) -> tensor<1x128x16x64xf32>
  return %o : tensor<1x128x16x64xf32>
}
"""

# The attention forward configurations of the spec: b=1, h=16,
# s = 1024..4096, d = 64/128, causal and not, f32 and bf16 (bshd layout).
ATTENTION_CONFIGS = [
    {"b": 1, "h": 16, "s": s, "d": d, "mask": mask, "dtype": dtype,
     "layout": "bshd"}
    for dtype in ("f32", "bf16")
    for d in (64, 128)
    for mask in ("no_mask", "causal")
    for s in (1024, 2048, 4096)
]
ATTENTION_NOT_MEASURED = "not measured (te.attention has no CPU lowering yet)"

ATTENTION_PROGRAM = """\
func.func @attention(%q: {t}, %k: {t}, %v: {t}) -> {t} {{
  %o = te.attention %q, %k, %v layout bshd mask {mask}
      : ({t}, {t}, {t}) -> {t}
  return %o : {t}
}}
"""
# Timed runs per sequence length, te-run's --bench N and numpy's calls
# alike (each side adds one untimed run). s=4096 costs seconds per run.
ATTENTION_REPEATS = {1024: 5, 2048: 3, 4096: 2}
ATTENTION_QUICK_REPEATS = {1024: 2}  # --quick: s=1024 only
ATTENTION_TARGET_S = 4096
ATTENTION_TARGET_SPEEDUP = 1.5  # numpy time / te time at s=4096
# Wall-time budget of the whole script (about 8 minutes on 2 cores): a
# configuration whose predicted cost would end the script later than this
# runs once, or is skipped (and recorded as skipped).
SCRIPT_BUDGET_S = 450
# Correctness: te-run and numpy on the same explicit inputs against the
# float64 reference of test/te-run/attention_reference.py.
ATTENTION_CHECKS = [
    {"b": 1, "h": 16, "s": 256, "d": 64, "mask": "causal", "dtype": "f32",
     "layout": "bshd"},
    {"b": 1, "h": 16, "s": 256, "d": 128, "mask": "no_mask",
     "dtype": "bf16", "layout": "bshd"},
]
# numpy with one BLAS thread against its default thread count, once.
ATTENTION_THREADS_CHECK = {"b": 1, "h": 16, "s": 2048, "d": 128,
                           "mask": "no_mask", "dtype": "f32",
                           "layout": "bshd"}
NUMPY_WORKER = ROOT / "bench" / "attention_numpy.py"
# Removed from the numpy process's environment (they slow current numpy).
NUMPY_ENV_DROP = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")

# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def sig(x, digits=4):
    """Rounds to `digits` significant digits, for readable JSON."""
    if x is None or not np.isfinite(x) or x == 0:
        return x
    return float(f"{x:.{digits}g}")


def median(values):
    return statistics.median(values)


CPU_FEATURES_OF_INTEREST = {
    "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl",
    "avx512_bf16", "avx512_fp16", "avx512_vnni", "avx_vnni", "amx_tile",
    "amx_bf16", "amx_int8", "amx_fp16"}


def machine_info():
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = f"{int(line.split()[1]) // (1 << 20)} GiB"
    except OSError:
        pass
    flags = set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        # What the kernels can use: te-mlir compiles for the host's features.
        "cpu_features": sorted(flags & CPU_FEATURES_OF_INTEREST),
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)),
        "memory": memory,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "ml_dtypes": ml_dtypes.__version__,
        # Other work on the machine skews the numbers; 2 cores have no
        # room to spare. The 1-minute load average when the run started:
        "load_average_1min_at_start": round(os.getloadavg()[0], 2),
    }


def te_mlir_commit():
    """HEAD of the checkout (read only), or None outside a git checkout."""
    try:
        proc = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"],
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() or None


class TeRun:
    """Runs te-run as a subprocess with a chosen kernel cache directory."""

    def __init__(self, path):
        self.path = str(path)
        self.base_env = dict(os.environ)
        for var in ("TE_CACHE_DIR", "TE_CACHE_DISABLE", "TE_CACHE_MAX_BYTES"):
            self.base_env.pop(var, None)

    def __call__(self, args, cache_dir, check=True, timeout=300):
        """Returns (whole-process wall seconds, CompletedProcess)."""
        env = dict(self.base_env, TE_CACHE_DIR=str(cache_dir))
        command = [self.path, *map(str, args)]
        start = time.perf_counter()
        proc = subprocess.run(command, capture_output=True, text=True,
                              env=env, timeout=timeout)
        wall = time.perf_counter() - start
        if check and proc.returncode != 0:
            raise RuntimeError(
                f"{' '.join(command)} exited {proc.returncode}:\n"
                f"{proc.stderr}")
        return wall, proc


BENCH_LINE = re.compile(
    r"bench: (\d+) runs\s+min ([\d.]+) ms\s+median ([\d.]+) ms\s+"
    r"([\d.]+) GB/s")


def parse_bench(stdout, bytes_moved):
    """Parses te-run's `bench:` line.

    te-run prints milliseconds with 3 decimals (1 us resolution), too coarse
    for a sub-microsecond launch, and GB/s with 2 decimals computed at the
    median from the bytes of all its buffers. The median is taken from
    whichever of the two is the more precise: bytes_moved / GB/s recovers
    it to about 4 significant digits for small kernels.
    """
    match = BENCH_LINE.search(stdout)
    if not match:
        raise RuntimeError(f"no bench line in te-run's output:\n{stdout}")
    runs, min_ms, median_ms, gbps = match.groups()
    min_ms, median_ms, gbps = float(min_ms), float(median_ms), float(gbps)
    median_s = median_ms / 1e3
    if gbps > 0:
        from_gbps = bytes_moved / (gbps * GB)
        # relative rounding error of each printed number
        if 0.005 / gbps < 0.0005 / max(median_ms, 1e-9):
            median_s = from_gbps
    return {"runs": int(runs), "min_s": min_ms / 1e3, "median_s": median_s,
            "printed_median_ms": median_ms, "printed_gbps": gbps}


def parse_compile(stderr):
    compile_ms = re.search(r"compile: ([\d.]+) ms", stderr)
    cache = re.search(r"cache: (miss|hit \(disk\))", stderr)
    return (float(compile_ms.group(1)) if compile_ms else None,
            cache.group(1) if cache else None)


def time_calls(fn, n, warmup=1):
    """Seconds of each of n calls of fn, after `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(n):
        start = time.perf_counter_ns()
        fn()
        times.append((time.perf_counter_ns() - start) * 1e-9)
    return times


def target(measured, op, value, note=None):
    met = measured >= value if op == ">=" else measured <= value
    entry = {"measured": sig(measured), "op": op, "value": value,
             "met": bool(met)}
    if note:
        entry["note"] = note
    return entry


def record(benchmark, description, config, results, targets, machine,
           commit, date):
    met = all(t["met"] for t in targets.values()) if targets else None
    return {"benchmark": benchmark, "description": description,
            "config": config, "results": results, "targets": targets,
            "met": met, "machine": machine, "date": date,
            "te_mlir_commit": commit}


# ---------------------------------------------------------------------------
# 1. FP8 quantize vs memcpy vs ml_dtypes
# ---------------------------------------------------------------------------


def bench_fp8_quantize(te_run, work, opts):
    rounds = opts.rounds
    te_runs, copy_runs, ml_runs = ((20, 20, 3) if opts.quick
                                   else (100, 100, 10))
    m, n = QUANTIZE_SHAPE
    elements = m * n
    rng = np.random.default_rng(opts.seed)
    x = rng.standard_normal(QUANTIZE_SHAPE, dtype=np.float32)
    amax_x = np.abs(x).max()
    # Current scaling: map the tensor's amax onto the FP8 range.
    scale = np.float32(FP8_MAX) / amax_x
    program = work / "quantize.mlir"
    program.write_text(QUANTIZE_PROGRAM)
    np.save(work / "x.npy", x)
    np.save(work / "scale.npy", np.array(scale, np.float32))
    cache = work / "cache-quantize"
    inputs = ["--input", work / "x.npy", "--input", work / "scale.npy"]

    # Bytes each implementation is credited with (its own input + output).
    bytes_quantize = elements * 4 + elements * 1  # 64 MiB in + 16 MiB out
    bytes_memcpy = elements * 4 * 2               # 64 MiB in + 64 MiB out
    bytes_ml = bytes_quantize                     # like for like
    # te-run's own GB/s counts every buffer, the three f32 scalars too.
    te_run_buffer_bytes = bytes_quantize + 3 * 4

    # Compile (kept out of the timings), warm the page cache, and check the
    # result against ml_dtypes while at it.
    out_dir = work / "quantize-out"
    te_run([program, *inputs, "--output-dir", out_dir],
           cache)
    data = np.load(out_dir / "out0.npy")
    scale_inv = np.load(out_dir / "out1.npy")
    amax = np.load(out_dir / "out2.npy")

    y = np.empty_like(x)

    def memcpy():
        np.copyto(y, x)

    def ml_quantize():
        q = np.clip(x * scale, -FP8_MAX, FP8_MAX).astype(
            ml_dtypes.float8_e4m3fn)
        a = np.abs(x).max()
        s_inv = np.float32(1) / scale
        return q, s_inv, a

    want, want_scale_inv, want_amax = ml_quantize()
    mismatches = int(np.count_nonzero(data != want.view(np.uint8)))
    check = {
        "data_bits_mismatches": mismatches,
        "amax_equal": bool(amax == want_amax),
        "scale_inv_equal": bool(scale_inv == want_scale_inv),
    }
    del want

    te_medians, te_mins, copy_medians, ml_medians = [], [], [], []
    copy_all, ml_all = [], []
    for r in range(rounds):
        # One thread, like numpy's memcpy.
        _, proc = te_run([program, *inputs, "--bench", te_runs,
                          "--threads", 1], cache)
        bench = parse_bench(proc.stdout, te_run_buffer_bytes)
        te_medians.append(bench["median_s"])
        te_mins.append(bench["min_s"])
        times = time_calls(memcpy, copy_runs)
        copy_all += times
        copy_medians.append(median(times))
        times = time_calls(ml_quantize, ml_runs)
        ml_all += times
        ml_medians.append(median(times))
        print(f"  round {r + 1}/{rounds}: te quantize "
              f"{te_medians[-1] * 1e3:.3f} ms, memcpy "
              f"{copy_medians[-1] * 1e3:.3f} ms, ml_dtypes "
              f"{ml_medians[-1] * 1e3:.1f} ms", flush=True)
    del y, x

    t_te, t_copy, t_ml = (median(te_medians), median(copy_medians),
                          median(ml_medians))
    gbps_te = bytes_quantize / t_te / GB
    gbps_copy = bytes_memcpy / t_copy / GB
    gbps_ml = bytes_ml / t_ml / GB
    ratio = gbps_te / gbps_copy

    def impl(t, t_min, medians, gbps, bytes_counted):
        return {"median_ms": sig(t * 1e3), "min_ms": sig(t_min * 1e3),
                "round_medians_ms": [sig(v * 1e3) for v in medians],
                "bytes_counted": bytes_counted, "gbps": sig(gbps)}

    results = {
        "te_quantize": impl(t_te, min(te_mins), te_medians, gbps_te,
                            bytes_quantize),
        "memcpy": impl(t_copy, min(copy_all), copy_medians, gbps_copy,
                       bytes_memcpy),
        "ml_dtypes": impl(t_ml, min(ml_all), ml_medians, gbps_ml, bytes_ml),
        "quantize_vs_memcpy_throughput": sig(ratio),
        "quantize_vs_memcpy_time": sig(t_te / t_copy),
        "ml_dtypes_vs_memcpy_throughput": sig(gbps_ml / gbps_copy),
        "quantize_speedup_over_ml_dtypes": sig(t_ml / t_te),
        "check_against_ml_dtypes": check,
    }
    config = {
        "op": "te.quantize mode per_tensor (data, scale_inv, amax)",
        "shape": list(QUANTIZE_SHAPE),
        "elements": elements,
        "input": f"f32 N(0,1), numpy default_rng({opts.seed})",
        "output": "f8E4M3FN",
        "scale": sig(float(scale), 8),
        "rounds": rounds,
        "te_run_bench_runs_per_round": te_runs,
        "memcpy_runs_per_round": copy_runs,
        "ml_dtypes_runs_per_round": ml_runs,
        "te_quantize": "te-run --bench N median per launch (launch + "
                       "synchronize through the runtime, single thread)",
        "memcpy": "np.copyto(y, x) into a preallocated f32 array",
        "ml_dtypes": "np.clip(x * s, -448, 448).astype(float8_e4m3fn), "
                     "np.abs(x).max(), 1 / s",
        "throughput": "bytes of the op's own input + output / median time, "
                      "GB = 1e9 bytes; quantize and ml_dtypes 64 MiB + "
                      "16 MiB, memcpy 64 MiB + 64 MiB",
        "statistic": "median over rounds of each round's median",
    }
    targets = {"quantize_vs_memcpy_throughput": target(
        ratio, ">=", 0.7,
        "te quantize GB/s over memcpy GB/s, each counting its own bytes")}
    return config, results, targets


# ---------------------------------------------------------------------------
# 2. JIT latencies: cold compile, disk-warm new process, memory-hot launch
# ---------------------------------------------------------------------------


def bench_jit_latency(te_run, work, opts):
    cold_repeats = 3 if opts.quick else 5
    warm_repeats = 10 if opts.quick else 20
    hot_repeats = 3
    hot_runs = 1000
    difference_runs = 200000
    program = work / "amax.mlir"
    program.write_text(AMAX_PROGRAM)
    buffer_bytes = AMAX_N * 4 + 4
    args = [program, "--random-inputs"]

    # One untimed cold compile first: it loads the compiler libraries into
    # the OS page cache, so "cold" below means an empty *kernel* cache, not
    # a cold disk.
    te_run(args, work / "cache-amax-warmup")

    cold_wall, cold_compile = [], []
    for i in range(cold_repeats):
        cache = work / f"cache-amax-cold{i}"
        wall, proc = te_run(args, cache)
        compile_ms, outcome = parse_compile(proc.stderr)
        if outcome != "miss":
            raise RuntimeError(f"cold run {i} was a cache {outcome}")
        cold_wall.append(wall)
        cold_compile.append(compile_ms)
    cache = work / f"cache-amax-cold{cold_repeats - 1}"  # filled

    warm_wall = []
    for i in range(warm_repeats):
        wall, proc = te_run(args, cache)
        if parse_compile(proc.stderr)[1] != "hit (disk)":
            raise RuntimeError(f"warm run {i} was not a disk hit:\n"
                               f"{proc.stderr}")
        warm_wall.append(wall)
    # The floor of any te-run process here: exec, dynamic linking, exit.
    floor_wall = [te_run(["--help"], cache)[0] for _ in range(warm_repeats)]

    hot = []
    for _ in range(hot_repeats):
        _, proc = te_run([*args, "--bench", hot_runs], cache)
        hot.append(parse_bench(proc.stdout, buffer_bytes))
    hot_median = median(b["median_s"] for b in hot)
    # Cross-check with a mean per launch from whole-process wall times:
    # (wall(--bench 1 + N) - wall(--bench 1)) / N.
    short = median(te_run([*args, "--bench", 1], cache)[0] for _ in range(3))
    long = median(te_run([*args, "--bench", 1 + difference_runs], cache)[0]
                  for _ in range(3))
    hot_mean = (long - short) / difference_runs

    warm_median = median(warm_wall)
    results = {
        "cold_compile": {
            "process_wall_ms_median": sig(median(cold_wall) * 1e3),
            "process_wall_ms": [sig(v * 1e3) for v in cold_wall],
            "compile_ms_median": sig(median(cold_compile)),
            "compile_ms": [sig(v) for v in cold_compile],
        },
        "disk_warm": {
            "process_wall_ms_median": sig(warm_median * 1e3),
            "process_wall_ms_min": sig(min(warm_wall) * 1e3),
            "process_wall_ms": [sig(v * 1e3) for v in warm_wall],
            "te_run_help_process_wall_ms_median":
                sig(median(floor_wall) * 1e3),
        },
        "memory_hot": {
            "launch_us_median": sig(hot_median * 1e6),
            "repeat_medians_us": [sig(b["median_s"] * 1e6) for b in hot],
            "launch_us_mean_from_wall_difference": sig(hot_mean * 1e6),
        },
    }
    config = {
        "program": AMAX_PROGRAM,
        "inputs": "te-run --random-inputs",
        "cold_compile": f"{cold_repeats} te-run processes, each with a fresh "
                        "empty TE_CACHE_DIR (after one untimed compile that "
                        "warms the OS page cache); whole-process wall time "
                        "from Python and te-run's 'compile: T ms' (compile "
                        "only, without loading the compiler library)",
        "disk_warm": f"{warm_repeats} new te-run processes with the kernel "
                     "cache filled ('cache: hit (disk)'); whole-process wall "
                     "time from Python: process start, cache lookup, "
                     "dlopen, buffers, one launch, printing, exit",
        "memory_hot": f"te-run --bench {hot_runs}, {hot_repeats} times; "
                      "median per launch (launch + synchronize), the median "
                      "of the repeats. te-run prints ms with 3 decimals (1 "
                      "us), so the median is recovered from its GB/s figure "
                      f"({buffer_bytes} buffer bytes / GB/s). Cross-check: "
                      "mean from the wall-time difference of --bench "
                      f"{1 + difference_runs} and --bench 1",
    }
    targets = {
        "memory_hot_launch_us": target(hot_median * 1e6, "<=", 5.0),
        "disk_warm_first_launch_ms": target(
            warm_median * 1e3, "<=", 20.0,
            "whole te-run process wall time: a conservative upper bound "
            "on the first launch in a new process"),
    }
    return config, results, targets


# ---------------------------------------------------------------------------
# 3. Attention forward
# ---------------------------------------------------------------------------


def attention_program(c):
    t = f"tensor<{c['b']}x{c['s']}x{c['h']}x{c['d']}x{c['dtype']}>"
    return ATTENTION_PROGRAM.format(t=t, mask=c["mask"])


def attention_name(c):
    return f"{c['dtype']}_d{c['d']}_{c['mask']}_s{c['s']}"


def attention_flops(c):
    """4 b h s^2 d (QK^T and PV, 2 flops per multiply-add), halved for
    causal, where only the visible half of the scores is needed."""
    flops = 4 * c["b"] * c["h"] * c["s"] * c["s"] * c["d"]
    return flops // 2 if c["mask"] == "causal" else flops


def attention_buffer_bytes(c):
    """q, k, v and o: what te-run's GB/s figure counts."""
    size = {"f32": 4, "bf16": 2}[c["dtype"]]
    return 4 * c["b"] * c["s"] * c["h"] * c["d"] * size


def te_run_with_rss(te_run, args, cache_dir, timeout=600):
    """Runs te-run like TeRun.__call__ and also returns the te-run
    process's peak resident set size in bytes (None if unknown).

    The peak is VmHWM of /proc/PID/status, read every 10 ms while te-run
    runs (the last reading before it exits; te-run's buffers live until
    then). Not wait4's ru_maxrss: Linux carries the high-water mark of the
    forking process (this Python, holding the other benchmarks' arrays)
    over the exec into the child's.

    Returns (stdout, stderr, max_rss_bytes).
    """
    env = dict(te_run.base_env, TE_CACHE_DIR=str(cache_dir))
    command = [te_run.path, *map(str, args)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    done = threading.Event()
    peak = []
    name = Path(te_run.path).name[:15]  # the kernel's comm is 15 chars

    def watch():
        status = Path(f"/proc/{proc.pid}/status")
        while not done.wait(0.01):
            try:
                text = status.read_text()
            except OSError:
                return
            # Only once te-run is exec'd (before, the child is a copy of
            # this process), and while it still has its memory.
            hwm = re.search(r"^VmHWM:\s+(\d+) kB", text, re.M)
            if hwm and re.search(rf"^Name:\s+{re.escape(name)}$", text,
                                 re.M):
                peak.append(int(hwm.group(1)) * 1024)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
    finally:
        done.set()
        watcher.join()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {proc.returncode}:"
                           f"\n{stderr}")
    return stdout, stderr, max(peak) if peak else None


class JsonLinesWorker:
    """A worker process spoken to in JSON lines over stdin/stdout: each
    request gets one reply; a reply with "error" raises."""

    def __init__(self, name, command, env=None):
        self.name = name
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True,
                                     env=env)

    def __call__(self, **request):
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.name} process exited "
                               f"(code {self.proc.poll()})")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"{self.name}: {reply['error']}")
        return reply

    def close(self, timeout=30):
        try:
            self.proc.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=timeout)
        except (OSError, subprocess.SubprocessError):
            self.proc.kill()
            self.proc.wait()


class NumpyWorker(JsonLinesWorker):
    """bench/attention_numpy.py in its own process (see that file), with
    OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE removed from its environment:
    set, they make OpenBLAS use other kernels than it would pick for the
    CPU, which slows current numpy down."""

    def __init__(self):
        self.dropped = {var: os.environ[var] for var in NUMPY_ENV_DROP
                        if var in os.environ}
        env = {key: value for key, value in os.environ.items()
               if key not in NUMPY_ENV_DROP}
        # Without threadpoolctl the worker cannot limit OpenBLAS's threads
        # itself: one thread from the start then, like te-run.
        self.has_threadpoolctl = (
            importlib.util.find_spec("threadpoolctl") is not None)
        if not self.has_threadpoolctl:
            env["OPENBLAS_NUM_THREADS"] = "1"
        super().__init__("numpy attention",
                         [sys.executable, str(NUMPY_WORKER)], env=env)


def attention_check(te_run, worker, work, c, seed):
    """Runs te-run and the numpy baseline on the same explicit inputs and
    compares both with test/te-run/attention_reference.py (float64), with
    the tolerances of test/te-run/test_attention.py."""
    sys.path.insert(0, str(ROOT / "test" / "te-run"))
    try:
        import attention_reference as reference
    finally:
        sys.path.pop(0)
    name = attention_name(c)
    shape = (c["b"], c["s"], c["h"], c["d"])
    rng = np.random.default_rng(seed)
    # N(0,1) values of the element type, saved as f32 (te-run takes them
    # as they are: they round to themselves).
    arrays = [reference.round_to(rng.standard_normal(shape, np.float32),
                                 c["dtype"]) for _ in range(3)]
    paths = []
    for tensor, array in zip("qkv", arrays):
        paths.append(work / f"check-{name}-{tensor}.npy")
        np.save(paths[-1], array)
    program = work / f"check-{name}.mlir"
    program.write_text(attention_program(c))
    out_dir = work / f"check-{name}-out"
    te_run([program, *[arg for path in paths for arg in ("--input", path)],
            "--output-dir", out_dir], work / "cache-attention")
    got = np.load(out_dir / "out0.npy")
    if got.dtype == np.uint16:  # bf16 results come back as raw bits
        got = got.view(ml_dtypes.bfloat16)
    got = got.astype(np.float32)
    numpy_out = work / f"check-{name}-numpy.npy"
    worker(cmd="run", inputs=[str(p) for p in paths], mask=c["mask"],
           dtype=c["dtype"], out=str(numpy_out))
    numpy_o = np.load(numpy_out)
    want, _ = reference.attention(*arrays, c["layout"], mask=c["mask"])
    if c["dtype"] == "f32":
        allowed = 1e-5 + 1e-5 * np.abs(want)
        tolerance = "rtol = atol = 1e-5 against the f64 reference"
    else:
        allowed = (reference.ulp(reference.round_to(want, c["dtype"]),
                                 c["dtype"]) + 1e-5)
        tolerance = (f"1 {c['dtype']} ulp of the rounded f64 reference "
                     "+ 1e-5")
    te_over = float(np.max(np.abs(got - want) / allowed))
    numpy_over = float(np.max(np.abs(numpy_o - want) / allowed))
    return {
        "config": name,
        "shape_bshd": list(shape),
        "inputs": f"N(0,1) rounded to {c['dtype']}, numpy "
                  f"default_rng({seed}), passed with --input",
        "tolerance": tolerance,
        "te_max_abs_error_vs_f64": sig(float(np.max(np.abs(got - want)))),
        "numpy_max_abs_error_vs_f64":
            sig(float(np.max(np.abs(numpy_o - want)))),
        "te_vs_numpy_max_abs_difference":
            sig(float(np.max(np.abs(got - numpy_o)))),
        "te_error_over_tolerance": sig(te_over),
        "numpy_error_over_tolerance": sig(numpy_over),
        "passed": bool(te_over <= 1 and numpy_over <= 1),
    }


def bench_attention(te_run, work, opts):
    """te.attention forward (te-run --random-inputs --bench N) against the
    numpy baseline of bench/attention_numpy.py, config by config.

    A small te.attention program is compiled first; if that fails (a
    te-run without the CPU lowering), the record says "not measured".
    """
    program = work / "attention_probe.mlir"
    program.write_text(ATTENTION_PROBE_PROGRAM)
    cache = work / "cache-attention"
    _, proc = te_run([program, "--random-inputs"], cache, check=False)
    error = next((line for line in proc.stderr.splitlines()
                  if "error" in line), None)
    probe = {"program": ATTENTION_PROBE_PROGRAM,
             "te_run_exit_code": proc.returncode, "error": error}
    base_config = {"configurations": ATTENTION_CONFIGS}
    if proc.returncode != 0:
        status = ATTENTION_NOT_MEASURED
        if "no CPU lowering" not in proc.stderr:
            status = f"not measured (the te.attention probe failed: {error})"
        return base_config, {"measured": False, "status": status,
                             "probe": probe}, {}

    repeats = ATTENTION_QUICK_REPEATS if opts.quick else ATTENTION_REPEATS
    # By sequence length (f32 before bf16 within one), so that the budget
    # check below has the smaller lengths' times to extrapolate from.
    configs = sorted((c for c in ATTENTION_CONFIGS if c["s"] in repeats),
                     key=lambda c: c["s"])
    worker = NumpyWorker()
    try:
        numpy_info = worker(cmd="info")
        checks = [attention_check(te_run, worker, work, c, opts.seed)
                  for c in ATTENTION_CHECKS]
        for check in checks:
            print(f"  check {check['config']}: te error "
                  f"{check['te_error_over_tolerance']:.3g} x tolerance, "
                  f"numpy {check['numpy_error_over_tolerance']:.3g} x "
                  f"({'passed' if check['passed'] else 'FAILED'})",
                  flush=True)

        # Is the single-threaded BLAS the faster numpy here? (te-run is
        # single-threaded; the comparison below limits OpenBLAS to one
        # thread, this records what its default thread count would give.)
        threads_check = {"config": attention_name(ATTENTION_THREADS_CHECK)}
        if not worker.has_threadpoolctl:
            threads_check["skipped"] = (
                "threadpoolctl is not installed: OPENBLAS_NUM_THREADS=1 for "
                "the numpy process")
        else:
            for label, threads in (("one_thread", 1),
                                   ("default_threads", None)):
                reply = worker(cmd="time", **ATTENTION_THREADS_CHECK,
                               runs=3, warmup=1, threads=threads,
                               seed=opts.seed)
                threads_check[f"numpy_median_ms_{label}"] = sig(
                    median(reply["times_s"]) * 1e3)
            print(f"  numpy BLAS threads: 1 thread "
                  f"{threads_check['numpy_median_ms_one_thread']:.0f} ms, "
                  f"default "
                  f"{threads_check['numpy_median_ms_default_threads']:.0f}"
                  f" ms ({threads_check['config']})", flush=True)

        rows, skipped = [], []
        per_launch = {}  # (dtype, d, mask) -> (s, te s, numpy s)
        default_threads = numpy_info["blas"] and max(
            info["num_threads"] for info in numpy_info["blas"]) > 1
        for c in configs:
            name = attention_name(c)
            runs = repeats[c["s"]]
            key = (c["dtype"], c["d"], c["mask"])
            if key in per_launch:
                # Predicted cost: te-run's launches (one untimed) and
                # numpy's calls (one warm-up), scaled by s^2.
                s0, t_te, t_np = per_launch[key]
                grow = (c["s"] / s0) ** 2
                if c["s"] == ATTENTION_TARGET_S and default_threads:
                    t_np *= 2  # also timed with the default threads
                elapsed = time.perf_counter() - opts.started

                def cost(n):
                    return (n + 1) * grow * (t_te + t_np) + 2

                if elapsed + cost(runs) > SCRIPT_BUDGET_S:
                    if elapsed + cost(1) > SCRIPT_BUDGET_S:
                        skipped.append({"config": name, "reason": (
                            f"time budget: predicted {cost(1):.0f} s at "
                            f"{elapsed:.0f} s of {SCRIPT_BUDGET_S} s")})
                        print(f"  {name}: skipped (time budget)", flush=True)
                        continue
                    runs = 1
            source = work / f"attention-{name}.mlir"
            source.write_text(attention_program(c))
            stdout, stderr, rss = te_run_with_rss(
                te_run, [source, "--random-inputs", "--seed", opts.seed,
                         "--bench", runs, "--threads", 1], cache)
            bench = parse_bench(stdout, attention_buffer_bytes(c))
            compile_ms, _ = parse_compile(stderr)
            reply = worker(cmd="time", **c, runs=runs, warmup=1, threads=1,
                           seed=opts.seed, peak_memory=True)
            t_te, t_np = bench["median_s"], median(reply["times_s"])
            per_launch[key] = (c["s"], t_te, t_np)
            flops = attention_flops(c)
            buffers = attention_buffer_bytes(c)
            numpy_threaded = None
            if c["s"] == ATTENTION_TARGET_S and default_threads:
                # For context: numpy as it runs by default, with OpenBLAS
                # on all its threads (te-run uses one).
                times = worker(cmd="time", **c, runs=runs, warmup=1,
                               threads=None, seed=opts.seed)["times_s"]
                numpy_threaded = {
                    "threads": max(info["num_threads"]
                                   for info in numpy_info["blas"]),
                    "median_ms": sig(median(times) * 1e3),
                    "times_ms": [sig(t * 1e3) for t in times],
                    "gflops": sig(flops / median(times) / 1e9),
                    "speedup_over_it": sig(median(times) / t_te),
                }
            rows.append({
                "config": name, **c, "flops": flops,
                "te": {
                    "median_ms": sig(t_te * 1e3),
                    "min_ms": sig(bench["min_s"] * 1e3),
                    "runs": runs,
                    "gflops": sig(flops / t_te / 1e9),
                    "compile_ms": compile_ms,
                    "process_max_rss_mib": (sig(rss / MIB) if rss
                                            else None),
                    "buffers_mib": sig(buffers / MIB),
                },
                "numpy": {
                    "median_ms": sig(t_np * 1e3),
                    "min_ms": sig(min(reply["times_s"]) * 1e3),
                    "runs": runs,
                    "times_ms": [sig(t * 1e3) for t in reply["times_s"]],
                    "gflops": sig(flops / t_np / 1e9),
                    "peak_mib": sig(reply["peak_bytes"] / MIB),
                    "scores_mib": sig(reply["scores_bytes"] / MIB),
                },
                "speedup": sig(t_np / t_te),
            })
            if numpy_threaded:
                rows[-1]["numpy_default_threads"] = numpy_threaded
            print(f"  {name}: te {t_te * 1e3:.1f} ms "
                  f"({flops / t_te / 1e9:.1f} GFLOP/s), numpy "
                  f"{t_np * 1e3:.1f} ms ({flops / t_np / 1e9:.1f} GFLOP/s),"
                  f" speedup {t_np / t_te:.2f}x", flush=True)
    finally:
        worker.close()

    # Memory: te-run's peak RSS minus its four buffers (the compiler
    # library, code, one host copy of an input, ...) should not grow like
    # s^2 with the sequence length; one head's f32 [s, s] scores would add
    # s*s*4 bytes (64 MiB at s=4096), all heads' 16 times that.
    memory = []
    for key in sorted({(r["dtype"], r["d"], r["mask"]) for r in rows}):
        group = [r for r in rows if (r["dtype"], r["d"], r["mask"]) == key]
        small, large = group[0], group[-1]
        if small is large or not (small["te"]["process_max_rss_mib"]
                                  and large["te"]["process_max_rss_mib"]):
            continue
        extra = [r["te"]["process_max_rss_mib"] - r["te"]["buffers_mib"]
                 for r in (small, large)]
        memory.append({
            "configs": f"{key[0]}_d{key[1]}_{key[2]}",
            "s": [small["s"], large["s"]],
            "te_rss_minus_buffers_mib": [sig(v) for v in extra],
            "te_growth_mib": sig(extra[1] - extra[0]),
            "one_head_scores_growth_mib": sig(
                (large["s"] ** 2 - small["s"] ** 2) * 4 / MIB),
            "numpy_peak_mib": [small["numpy"]["peak_mib"],
                               large["numpy"]["peak_mib"]],
        })

    at_target = [r for r in rows if r["s"] == ATTENTION_TARGET_S]
    targets = {}
    for r in at_target:
        targets[f"speedup_{r['config']}"] = target(
            r["speedup"], ">=", ATTENTION_TARGET_SPEEDUP,
            "numpy time / te time")
    targets["check_error_over_tolerance"] = target(
        max(max(c["te_error_over_tolerance"], c["numpy_error_over_tolerance"])
            for c in checks), "<=", 1.0,
        "largest error / tolerance of te and numpy against the f64 "
        "reference (see results.checks)")
    planned_target = [c for c in ATTENTION_CONFIGS
                      if c["s"] == ATTENTION_TARGET_S]
    status = (f"measured {len(rows)} of {len(ATTENTION_CONFIGS)} "
              f"configurations; s={ATTENTION_TARGET_S}: {len(at_target)} of "
              f"{len(planned_target)}")
    if at_target:
        speedups = [r["speedup"] for r in at_target]
        status += (f", speedup over numpy {min(speedups):.2f}x to "
                   f"{max(speedups):.2f}x (target >= "
                   f"{ATTENTION_TARGET_SPEEDUP}x)")
    results = {
        "measured": True,
        "status": status,
        "configs": rows,
        "skipped": skipped,
        "checks": checks,
        "memory": memory,
        "numpy_blas": numpy_info,
        "numpy_env_removed": {"variables": list(NUMPY_ENV_DROP),
                              "were_set_to": worker.dropped},
        "numpy_blas_threads_check": threads_check,
        # Other work on the machine during the long attention section
        # skews both sides; machine.load_average_1min_at_start is the
        # other end.
        "load_average_1min_at_end": round(os.getloadavg()[0], 2),
        "probe": probe,
    }
    config = {
        **base_config,
        "measured_configurations": [r["config"] for r in rows],
        "repeats_per_s": {str(s): n for s, n in repeats.items()},
        "subset": (None if len(rows) == len(ATTENTION_CONFIGS) else
                   "not every configuration was measured: see "
                   "results.skipped" + (" and --quick (s=1024 only)"
                                        if opts.quick else "")),
        "te": "te-run PROGRAM --random-inputs --seed N --bench R: one "
              "untimed launch, then the median of R launches (launch + "
              "synchronize; single thread; compile kept out). Inputs "
              "N(0,1) rounded to the element type",
        "numpy": "bench/attention_numpy.py in its own process without "
                 f"{' / '.join(NUMPY_ENV_DROP)}, OpenBLAS limited to one "
                 "thread (threadpoolctl): per head P = (q * scale) @ k^T "
                 "in f32, -inf above the diagonal when causal, "
                 "P = exp(P - rowmax), O = (P @ v) / rowsum; bf16 inputs "
                 "upcast to f32 and O rounded back inside the timing; the "
                 "[s, s] scores buffer and causal mask allocated once per "
                 "shape. One untimed call (under tracemalloc, for the peak "
                 "memory), then the median of R calls",
        "flops": "4 * b * h * s * s * d, halved for causal, credited to "
                 "both (numpy computes every score even when causal)",
        "speedup": "numpy median time / te median time",
        "memory": "te: peak RSS of the te-run process (VmHWM of "
                  "/proc/PID/status, polled every 10 ms), which also "
                  "holds the compiler library and a host copy of an "
                  "input; numpy: tracemalloc peak of one call (scores, "
                  "mask, temporaries, output; not the inputs)",
        "script_budget_s": SCRIPT_BUDGET_S,
        "budget_rule": "an s=4096 configuration whose cost, predicted from "
                       "the same configuration at s=2048, would end the "
                       "script after the budget runs once (R=1) or is "
                       "skipped",
        "checks": ATTENTION_CHECKS,
        "threads_check": ATTENTION_THREADS_CHECK,
    }
    return config, results, targets



# ---------------------------------------------------------------------------
# Chart and table
# ---------------------------------------------------------------------------


def draw_attention(ax, rec, colour, grey):
    """Speedup over numpy per configuration, s=1024/2048/4096 side by side;
    the target applies to s=4096."""
    rows = rec["results"].get("configs", [])
    if not rows:
        ax.axis("off")
        ax.text(0.5, 0.5, "attention_fwd: " + rec["results"]["status"],
                ha="center", va="center", fontsize=9, wrap=True)
        return
    groups = sorted({(r["dtype"], r["d"], r["mask"]) for r in rows},
                    key=lambda g: (g[0] != "f32", g[1], g[2] != "no_mask"))
    lengths = sorted({r["s"] for r in rows})
    width = 0.8 / len(lengths)
    shades = {1024: "#d5d5d5", 2048: "#b0b0b0"}
    top = ATTENTION_TARGET_SPEEDUP
    for gi, group in enumerate(groups):
        for si, s in enumerate(lengths):
            row = next((r for r in rows if (r["dtype"], r["d"], r["mask"])
                        == group and r["s"] == s), None)
            x = gi + (si - (len(lengths) - 1) / 2) * width
            if row is None:
                ax.text(x, 0.02, "skipped", rotation=90, ha="center",
                        va="bottom", fontsize=7)
                continue
            t = rec["targets"].get(f"speedup_{row['config']}")
            bar_colour = colour(t["met"]) if t else shades.get(s, grey)
            ax.bar(x, row["speedup"], width * 0.92, color=bar_colour)
            ax.annotate(f"{row['speedup']:.2f}", (x, row["speedup"]),
                        ha="center", va="bottom", fontsize=7)
            top = max(top, row["speedup"])
    ax.axhline(ATTENTION_TARGET_SPEEDUP, color="black", linestyle="--",
               linewidth=1)
    ax.text(len(groups) - 0.5, ATTENTION_TARGET_SPEEDUP,
            f"target at s={ATTENTION_TARGET_S}: >= "
            f"{ATTENTION_TARGET_SPEEDUP}x", ha="right", va="bottom",
            fontsize=8)
    ax.axhline(1.0, color="grey", linestyle=":", linewidth=1)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([f"{g[0]} d={g[1]}\n{g[2]}" for g in groups],
                       fontsize=8)
    ax.set_xlim(-0.5, len(groups) - 0.5)
    ax.set_ylim(0, top * 1.15)
    ax.set_ylabel("numpy time / te time")
    ax.set_title("te.attention forward (b=1, h=16, bshd) against numpy + "
                 "OpenBLAS (1 thread, f32)\nspeedup per configuration, bars "
                 "left to right s = " + ", ".join(map(str, lengths))
                 + f" (grey: no target; higher is better)", fontsize=9)


def draw_chart(records, path, machine, date):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("chart: matplotlib is not installed, no summary.png "
              "(.venv/bin/python -m pip install matplotlib)")
        return False

    q = records["fp8_quantize"]
    j = records["jit_latency"]
    green, red, grey = "#2e7d32", "#c62828", "#9e9e9e"

    def colour(met):
        return green if met else red

    fig = plt.figure(figsize=(13, 9.6))
    grid = fig.add_gridspec(2, 3, height_ratios=(1, 1.05))
    axes = [fig.add_subplot(grid[0, i]) for i in range(3)]
    draw_attention(fig.add_subplot(grid[1, :]), records["attention_fwd"],
                   colour, grey)

    ax = axes[0]
    t = q["targets"]["quantize_vs_memcpy_throughput"]
    values = [q["results"]["quantize_vs_memcpy_throughput"],
              q["results"]["ml_dtypes_vs_memcpy_throughput"]]
    bars = ax.bar(["te.quantize", "numpy +\nml_dtypes"], values,
                  color=[colour(t["met"]), grey])
    ax.axhline(t["value"], color="black", linestyle="--", linewidth=1)
    ax.text(1.45, t["value"], f" target >= {t['value']}", va="bottom",
            ha="right", fontsize=8)
    ax.set_ylim(0, max(1.0, max(values) * 1.2))
    ax.set_title("FP8 quantize, 64 MiB f32 -> f8E4M3FN\n"
                 "throughput / memcpy throughput (higher is better)",
                 fontsize=9)
    for bar, value in zip(bars, values):
        ax.annotate(f"{value:.2f}x", (bar.get_x() + bar.get_width() / 2,
                                      bar.get_height()),
                    ha="center", va="bottom", fontsize=9)

    ax = axes[1]
    t = j["targets"]["memory_hot_launch_us"]
    bars = ax.bar(["hot launch\n(te-run --bench 1000)"], [t["measured"]],
                  color=[colour(t["met"])], width=0.5)
    ax.axhline(t["value"], color="black", linestyle="--", linewidth=1)
    ax.text(0.45, t["value"], f"target <= {t['value']:g} us", va="bottom",
            ha="right", fontsize=8)
    ax.set_xlim(-0.6, 0.6)
    ax.set_ylim(0, max(t["value"], t["measured"]) * 1.25)
    ax.set_ylabel("us per launch (median)")
    ax.set_title("memory-hot launch overhead, te.amax 1024 f32\n"
                 "(lower is better)", fontsize=9)
    ax.annotate(f"{t['measured']:.2f} us", (0, t["measured"]), ha="center",
                va="bottom", fontsize=9)

    ax = axes[2]
    t = j["targets"]["disk_warm_first_launch_ms"]
    floor = j["results"]["disk_warm"]["te_run_help_process_wall_ms_median"]
    values = [t["measured"], floor]
    bars = ax.bar(["disk-warm\nte-run process", "te-run --help\n(process floor)"],
                  values, color=[colour(t["met"]), grey])
    ax.axhline(t["value"], color="black", linestyle="--", linewidth=1)
    ax.text(1.45, t["value"], f"target <= {t['value']:g} ms", va="bottom",
            ha="right", fontsize=8)
    ax.set_ylim(0, max(t["value"], *values) * 1.25)
    ax.set_ylabel("ms, whole process wall time (median)")
    ax.set_title("disk-warm first launch in a new process\n"
                 "(upper bound; lower is better)", fontsize=9)
    for bar, value in zip(bars, values):
        ax.annotate(f"{value:.1f} ms", (bar.get_x() + bar.get_width() / 2,
                                        bar.get_height()),
                    ha="center", va="bottom", fontsize=9)

    cold = j["results"]["cold_compile"]
    fig.suptitle(f"te-mlir CPU benchmarks  |  {machine['cpu']}, "
                 f"{machine['cores']} cores  |  {date}", fontsize=10)
    footer = [
        "green: target met, red: target missed, grey: context (no target).  "
        f"Cold compile (not charted): {cold['process_wall_ms_median']:.0f} ms "
        f"whole process, {cold['compile_ms_median']:.0f} ms compile.",
        *textwrap.wrap("attention_fwd: "
                       + records["attention_fwd"]["results"]["status"], 150),
    ]
    fig.text(0.5, 0.01, "\n".join(footer), ha="center", va="bottom",
             fontsize=8)
    fig.tight_layout(rect=(0, 0.015 + 0.015 * len(footer), 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


SECTION_NAMES = ("fp8_quantize", "jit_latency", "attention_fwd",
                 "attention_peers", "collectives", "gemm")


def print_peer_table(record):
    results = record["results"]
    print(f"\nattention_peers: {results['status']}")
    for r in results.get("configs", []):
        times = r["timings"]
        print(f"  {r['config']:24} " + "  ".join(
            f"{k.replace('_ms', '')} {v:.1f}" for k, v in times.items()))
        print(f"  {'':24} " + "  ".join(
            f"{k} {v:.2f}x" for k, v in r["ratios"].items()))


def print_table(records):
    q = records["fp8_quantize"]
    j = records["jit_latency"]
    a = records["attention_fwd"]
    qr, jr = q["results"], j["results"]

    def yes(met):
        return "yes" if met else "NO"

    rows = [
        ("fp8_quantize", "te quantize (64 MiB f32 -> fp8)",
         f"{qr['te_quantize']['median_ms']:.2f} ms  "
         f"{qr['te_quantize']['gbps']:.1f} GB/s", "", ""),
        ("", "memcpy (64 MiB)",
         f"{qr['memcpy']['median_ms']:.2f} ms  "
         f"{qr['memcpy']['gbps']:.1f} GB/s", "", ""),
        ("", "numpy + ml_dtypes",
         f"{qr['ml_dtypes']['median_ms']:.1f} ms  "
         f"{qr['ml_dtypes']['gbps']:.2f} GB/s", "", ""),
    ]
    t = q["targets"]["quantize_vs_memcpy_throughput"]
    rows.append(("", "quantize / memcpy throughput",
                 f"{t['measured']:.2f}x", f">= {t['value']}x",
                 yes(t["met"])))
    rows.append(("", "quantize speedup over ml_dtypes",
                 f"{qr['quantize_speedup_over_ml_dtypes']:.1f}x", "", ""))
    rows.append(("jit_latency", "cold compile (process / compile)",
                 f"{jr['cold_compile']['process_wall_ms_median']:.1f} / "
                 f"{jr['cold_compile']['compile_ms_median']:.1f} ms", "", ""))
    t = j["targets"]["disk_warm_first_launch_ms"]
    rows.append(("", "disk-warm new process (wall)",
                 f"{t['measured']:.2f} ms", f"<= {t['value']:g} ms",
                 yes(t["met"])))
    t = j["targets"]["memory_hot_launch_us"]
    rows.append(("", "memory-hot launch (median)",
                 f"{t['measured']:.3f} us", f"<= {t['value']:g} us",
                 yes(t["met"])))
    attention = a["results"].get("configs", [])
    if not attention:
        rows.append(("attention_fwd", a["results"]["status"], "", "", ""))
    for i, r in enumerate(attention):
        t = a["targets"].get(f"speedup_{r['config']}")
        rows.append((
            "attention_fwd" if i == 0 else "",
            f"{r['dtype']} d={r['d']} {r['mask']} s={r['s']}",
            f"te {r['te']['median_ms']:7.0f} ms {r['te']['gflops']:5.1f} "
            f"GFLOP/s | numpy {r['numpy']['median_ms']:6.0f} ms "
            f"{r['numpy']['gflops']:5.1f} GFLOP/s | {r['speedup']:.2f}x",
            f">= {t['value']}x" if t else "",
            yes(t["met"]) if t else ""))
    if attention:
        t = a["targets"]["check_error_over_tolerance"]
        rows.append(("", "check vs f64 reference (error / tol)",
                     f"{t['measured']:.3g}", f"<= {t['value']:g}",
                     yes(t["met"])))
        for s in a["results"]["skipped"]:
            rows.append(("", f"{s['config']}: skipped ({s['reason']})",
                         "", "", ""))

    headers = ("benchmark", "metric", "measured", "target", "met")
    widths = [max(len(h), *(len(r[i]) for r in rows if i != 1 or r[2]))
              for i, h in enumerate(headers)]
    line = "  ".join(f"{{:{w}}}" for w in widths)
    print()
    print(line.format(*headers).rstrip())
    print(line.format(*("-" * w for w in widths)))
    for row in rows:
        if row[2]:
            print(line.format(*row).rstrip())
        else:  # a status line: let it run past the columns
            print(f"{row[0]:{widths[0]}}  {row[1]}")


# ---------------------------------------------------------------------------
# 4. Attention forward and backward against PyTorch and JAX
# ---------------------------------------------------------------------------

PEERS = ("torch", "jax")
PEER_WORKER = ROOT / "bench" / "attention_peers.py"
# b=1, h=16, bshd; --full adds s=4096.
PEER_CONFIGS = [
    {"b": 1, "h": 16, "s": s, "d": d, "mask": mask, "dtype": dtype}
    for dtype in ("f32", "bf16")
    for d in (64, 128)
    for mask in ("no_mask", "causal")
    for s in (1024, 2048)
]
PEER_FULL_SIZES = (4096,)
PEER_QUICK_CONFIGS = [
    {"b": 1, "h": 16, "s": 1024, "d": 64, "mask": mask, "dtype": dtype}
    for dtype in ("f32", "bf16") for mask in ("no_mask", "causal")]
PEER_TARGET = 1.0  # te speed / peer speed, forward and backward

PEER_FORWARD_PROGRAM = """\
func.func @forward(%q: {t}, %k: {t}, %v: {t}) -> ({t}, {l}) {{
  %o, %lse = te.attention %q, %k, %v layout bshd mask {mask} {{return_lse}}
      : ({t}, {t}, {t}) -> ({t}, {l})
  return %o, %lse : {t}, {l}
}}
"""
PEER_BACKWARD_PROGRAM = """\
func.func @backward(%q: {t}, %k: {t}, %v: {t}, %o: {t}, %do: {t}, %lse: {l})
    -> ({t}, {t}, {t}) {{
  %dq, %dk, %dv = te.attention_backward %q, %k, %v, %o, %do, %lse
      layout bshd mask {mask}
      : ({t}, {t}, {t}, {t}, {t}, {l}) -> ({t}, {t}, {t})
  return %dq, %dk, %dv : {t}, {t}, {t}
}}
"""


class PeerWorker(JsonLinesWorker):
    """bench/attention_peers.py for one library and thread count."""

    def __init__(self, peer, threads):
        super().__init__(f"{peer}/{threads} peer",
                         [sys.executable, str(PEER_WORKER), peer,
                          "--threads", str(threads)])

    def close(self):
        super().close(timeout=60)


def peers_available():
    """The peers importable by this Python, and why the others are not."""
    found, missing = [], {}
    for peer in PEERS:
        if importlib.util.find_spec(peer) is None:
            missing[peer] = ("not installed (scripts/bootstrap.sh --bench "
                             "installs it)")
        else:
            found.append(peer)
    return found, missing


def peer_runs(c):
    """Timed calls per round: about a second of the slowest side."""
    return 3 if c["s"] <= 1024 else 2 if c["s"] <= 2048 else 1


def bench_attention_peers(te_run, work, opts):
    """te.attention and te.attention_backward against PyTorch's
    scaled_dot_product_attention and jax.nn.dot_product_attention, on the
    same inputs, at one thread and at every core the process may use.

    Per configuration and round, interleaved: te (te-run --bench N
    --threads T on --input files), then each peer (N timed calls in its
    worker), forward then backward, for each thread count. The figure is
    the median over rounds of each round's median; ratio = peer time / te
    time (above 1: te is faster).
    """
    found, missing = peers_available()
    all_threads = len(os.sched_getaffinity(0))
    thread_counts = sorted({1, all_threads})
    configs = (PEER_QUICK_CONFIGS if opts.quick else
               PEER_CONFIGS + [dict(c, s=s) for c in PEER_CONFIGS
                               if c["s"] == 2048 for s in PEER_FULL_SIZES]
               if opts.full else PEER_CONFIGS)
    rounds = 2 if opts.quick else 3
    config = {"configurations": configs, "thread_counts": thread_counts,
              "rounds": rounds, "peers_missing": missing,
              "method": bench_attention_peers.__doc__}
    if not found:
        return config, {"status": "not measured: " + "; ".join(
            f"{p} {why}" for p, why in missing.items())}, {}

    workers = {(peer, t): PeerWorker(peer, t)
               for peer in found for t in thread_counts}
    results, targets = [], {}
    try:
        config["peers"] = {f"{p}/{t}": w(cmd="info")
                           for (p, t), w in workers.items()}
        cache = work / "cache-peers"
        for c in configs:
            results.append(peer_configuration(te_run, work, cache, workers,
                                              c, thread_counts, rounds))
            r = results[-1]
            print(f"  {r['config']}: " + ", ".join(
                f"{k} {v:.2f}x" for k, v in r["ratios"].items()),
                flush=True)
            for key, ratio in r["ratios"].items():
                targets[f"{r['config']}_{key}"] = {
                    "value": PEER_TARGET, "measured": ratio,
                    "met": ratio >= PEER_TARGET}
    finally:
        for w in workers.values():
            w.close()
    met = sum(t["met"] for t in targets.values())
    status = (f"{met} of {len(targets)} ratios >= {PEER_TARGET}x "
              f"(te speed / peer speed)")
    if missing:
        status += "; not measured: " + ", ".join(missing)
    return config, {"status": status, "configs": results}, targets


def peer_configuration(te_run, work, cache, workers, c, thread_counts,
                       rounds):
    name = attention_name(c)
    shape = (c["b"], c["s"], c["h"], c["d"])
    t = f"tensor<{'x'.join(map(str, shape))}x{c['dtype']}>"
    l = f"tensor<{c['b']}x{c['h']}x{c['s']}x1xf32>"
    rng = np.random.default_rng(len(name))
    inputs = {}
    for tensor in ("q", "k", "v", "do"):
        array = rng.standard_normal(shape, np.float32)
        if c["dtype"] == "bf16":  # te-run and the peers take raw bits
            array = array.astype(ml_dtypes.bfloat16).view(np.uint16)
        inputs[tensor] = work / f"peer-{name}-{tensor}.npy"
        np.save(inputs[tensor], array)
    forward = work / f"peer-{name}-forward.mlir"
    forward.write_text(PEER_FORWARD_PROGRAM.format(t=t, l=l, mask=c["mask"]))
    backward = work / f"peer-{name}-backward.mlir"
    backward.write_text(PEER_BACKWARD_PROGRAM.format(t=t, l=l,
                                                     mask=c["mask"]))
    # te's O and LSE, for its backward and for comparing the outputs.
    saved = work / f"peer-{name}-te"
    te_run([forward, "--input", inputs["q"], "--input", inputs["k"],
            "--input", inputs["v"], "--output-dir", saved], cache)
    forward_args = [arg for x in "qkv" for arg in ("--input", inputs[x])]
    backward_args = forward_args + [
        "--input", saved / "out0.npy", "--input", inputs["do"],
        "--input", saved / "out1.npy"]

    te_o = np.load(saved / "out0.npy")
    if c["dtype"] == "bf16":
        te_o = te_o.view(ml_dtypes.bfloat16)
    te_o = te_o.astype(np.float32)
    agreement = {}
    for (peer, threads), worker in workers.items():
        worker(cmd="load", inputs={k: str(v) for k, v in inputs.items()},
               dtype=c["dtype"], mask=c["mask"])
        if threads == thread_counts[0]:
            out = work / f"peer-{name}-{peer}.npy"
            worker(cmd="output", out=str(out))
            peer_o = np.load(out)
            agreement[peer] = sig(float(np.max(np.abs(peer_o - te_o))))

    runs = peer_runs(c)
    samples = {}  # (side, pass, threads) -> per-round medians
    for _ in range(rounds):
        for threads in thread_counts:
            for pass_, program, args in (("forward", forward, forward_args),
                                         ("backward", backward,
                                          backward_args)):
                _, proc = te_run([program, *args, "--bench", runs,
                                  "--threads", threads], cache)
                bench = parse_bench(proc.stdout, 1)
                samples.setdefault(("te", pass_, threads), []).append(
                    bench["printed_median_ms"] / 1e3)
                for (peer, t), worker in workers.items():
                    if t != threads:
                        continue
                    times = worker(cmd="time", runs=runs,
                                   **{"pass": pass_})["times_s"]
                    samples.setdefault((peer, pass_, threads), []).append(
                        median(times))
    timings, ratios = {}, {}
    for (side, pass_, threads), values in samples.items():
        timings[f"{side}_{pass_}_t{threads}_ms"] = sig(median(values) * 1e3)
    for (side, pass_, threads), values in samples.items():
        if side == "te":
            continue
        te_time = median(samples[("te", pass_, threads)])
        ratios[f"{pass_}_t{threads}_vs_{side}"] = sig(median(values) /
                                                      te_time, 3)
    return {"config": name, "shape_bshd": list(shape), **c,
            "runs_per_round": runs, "timings": timings, "ratios": ratios,
            "max_abs_difference_of_o_vs_te": agreement}


def draw_peer_chart(record, path):
    """Bars of te speed / peer speed per configuration, one panel per
    pass and thread count."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    configs = record["results"].get("configs", [])
    if not configs:
        return False
    keys = sorted({k for r in configs for k in r["ratios"]})
    panels = sorted({k.rsplit("_vs_", 1)[0] for k in keys})
    peers = sorted({k.rsplit("_vs_", 1)[1] for k in keys})
    fig, axes = plt.subplots(len(panels), 1,
                             figsize=(max(8, 0.6 * len(configs)),
                                      2.6 * len(panels)), squeeze=False)
    width = 0.8 / max(1, len(peers))
    for ax, panel in zip(axes[:, 0], panels):
        for i, peer in enumerate(peers):
            values = [r["ratios"].get(f"{panel}_vs_{peer}", 0)
                      for r in configs]
            ax.bar([x + i * width for x in range(len(configs))], values,
                   width, label=f"vs {peer}")
        ax.axhline(PEER_TARGET, color="black", linewidth=0.8)
        ax.set_ylabel("te / peer speed")
        ax.set_title(panel.replace("_t", ", threads "), fontsize=9)
        ax.set_xticks([x + width * (len(peers) - 1) / 2
                       for x in range(len(configs))])
        ax.set_xticklabels([r["config"] for r in configs], rotation=60,
                           ha="right", fontsize=7)
        ax.legend(fontsize=7)
    machine = record["machine"]
    fig.suptitle(f"te-mlir attention against PyTorch and JAX  |  "
                 f"{machine['cpu']}, {machine['cores_usable']} cores  |  "
                 f"{record['date']}", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


# ---------------------------------------------------------------------------
# 5. Collectives against raw MPI
# ---------------------------------------------------------------------------

# OpenMPI refuses root without the first two; 4 ranks may exceed the cores.
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1"}


def bench_collectives(te_run, work, opts):
    """te-collective-bench under mpirun at 2 and 4 ranks: te's all_reduce
    and all_gather against MPI_Allreduce / MPI_Allgather on the same
    buffers, in alternating rounds of one run."""
    bin_dir = Path(te_run.path).parent
    tool = bin_dir / "te-collective-bench"
    mpirun = shutil.which("mpirun")
    if not tool.is_file() or not mpirun:
        return ({}, {"status": "skipped: no te-collective-bench or mpirun"},
                {})
    rounds = 3 if opts.quick else 7
    rows = []
    for ranks in (2, 4):
        out = work / f"collectives{ranks}.json"
        env = dict(os.environ, **MPI_ENV,
                   TE_CACHE_DIR=str(work / "collective-cache"),
                   TE_COMPILER_LIBRARY=str(
                       bin_dir.parent / "lib" / "libTECompiler.so"))
        proc = subprocess.run(
            [mpirun, "-np", str(ranks), "--bind-to", "none", str(tool),
             "--rounds", str(rounds), "--json", str(out)],
            capture_output=True, text=True, env=env, timeout=1800)
        if proc.returncode != 0:
            raise RuntimeError(f"te-collective-bench -np {ranks} failed:\n"
                               f"{proc.stdout}{proc.stderr}")
        print(proc.stdout, flush=True)
        rows += json.loads(out.read_text())
    for row in rows:
        row["ratio"] = sig(row["mpi_us"] / row["te_us"])
        row["overhead_us"] = sig(row["te_us"] - row["mpi_us"])
    large = [r for r in rows if r["bytes"] >= 1 << 20]
    small = [r for r in rows if r["bytes"] <= 4096]
    targets = {}
    for ranks in (2, 4):
        worst = min(r["ratio"] for r in large if r["ranks"] == ranks)
        targets[f"np{ranks}_large_ratio"] = target(
            worst, ">=", 0.95, "worst te / raw MPI bus bandwidth, >= 1 MiB")
        over = max(r["overhead_us"] for r in small if r["ranks"] == ranks)
        targets[f"np{ranks}_small_overhead_us"] = target(
            over, "<=", 5.0, "worst per-call overhead above raw MPI, <= 4 KiB")
    config = {"rounds": rounds, "ranks": [2, 4], "dtype": "f32",
              "ops": ["all_reduce sum", "all_gather dim 0"],
              "bytes": sorted({r["bytes"] for r in rows})}
    return config, {"status": "ok", "rows": rows}, targets


# ---------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# 6. GEMM vs PyTorch
# ---------------------------------------------------------------------------

GEMM_WORKER = ROOT / "bench" / "gemm_peers.py"
# (name, M, N, K): D [M, N] = A [M, K] x B [N, K]^T.
GEMM_CONFIGS = [("512", 512, 512, 512), ("1024", 1024, 1024, 1024),
                ("2048", 2048, 2048, 2048), ("4096", 4096, 4096, 4096),
                ("te_4096x4096_to_11008", 4096, 11008, 4096)]
GEMM_QUICK_CONFIGS = GEMM_CONFIGS[:2]
GEMM_TARGETS = {"bf16": 0.9, "f8E4M3FN": 0.8}
GEMM_SCALES = (0.125, 0.5)
# Seconds between torch's timed calls and te's: longer than libgomp's spin
# before its idle threads sleep, so that they do not take te's cores.
GEMM_SETTLE_S = 0.5

GEMM_PROGRAM = """\
func.func @gemm({args}) -> tensor<{m}x{n}xbf16> {{
  %d = te.scaled_matmul %a, %b{scales} transpose_b : {types} -> tensor<{m}x{n}xbf16>
  return %d : tensor<{m}x{n}xbf16>
}}
"""


def gemm_runs(m, n, k):
    """Timed calls per round: about half a second of one thread."""
    seconds = 2.0 * m * n * k / 200e9
    return max(1, min(50, int(0.5 / seconds)))


def bench_gemm(te_run, work, opts):
    """te.scaled_matmul against torch's matmul on the same values, at one
    thread and at every core the process may use.

    Per configuration, operand type and round, interleaved: te (te-run
    --bench N --threads T on --input files), then torch (N timed calls in
    its worker with T threads). The figure is the median over rounds of
    each round's median; ratio = torch time / te time (above 1: te is
    faster). FP8 operands are compared with torch's bf16 matmul of the
    dequantized values (and torch._scaled_mm where the CPU build has it).
    torch's f32 matmul of the same values is timed beside them (no target:
    it is the faster peer where torch's bf16 matmul has no fast path).
    """
    if importlib.util.find_spec("torch") is None:
        return ({"method": bench_gemm.__doc__},
                {"status": "not measured: torch not installed "
                           "(scripts/bootstrap.sh --bench installs it)"}, {})
    all_threads = len(os.sched_getaffinity(0))
    thread_counts = sorted({1, all_threads})
    configs = GEMM_QUICK_CONFIGS if opts.quick else GEMM_CONFIGS
    rounds = 2 if opts.quick else 3
    config = {"configurations": [dict(zip(("name", "m", "n", "k"), c))
                                 for c in configs],
              "dtypes": list(GEMM_TARGETS), "thread_counts": thread_counts,
              "rounds": rounds, "method": bench_gemm.__doc__}
    workers = {t: JsonLinesWorker(f"torch gemm/{t}", [
        sys.executable, str(GEMM_WORKER), "--threads", str(t)])
        for t in thread_counts}
    results, targets = [], {}
    cache = work / "cache-gemm"
    try:
        config["torch"] = workers[thread_counts[-1]](cmd="info")
        for name, m, n, k in configs:
            for dtype in GEMM_TARGETS:
                r = gemm_configuration(te_run, work, cache, workers, name,
                                       m, n, k, dtype, thread_counts, rounds)
                results.append(r)
                print(f"  gemm {r['config']}: " + ", ".join(
                    f"{key} {value:.2f}x" for key, value in r["ratios"].items()),
                    flush=True)
                for key, ratio in r["ratios"].items():
                    # The issue's targets are against torch's bf16 matmul;
                    # _scaled_mm and the f32 matmul are reported beside it.
                    if "scaled_mm" in key or "matmul_f32" in key:
                        continue
                    targets[f"{r['config']}_{key}"] = target(
                        ratio, ">=", GEMM_TARGETS[dtype])
        for dtype in GEMM_TARGETS:
            r = grouped_gemm_configuration(te_run, work, cache, workers,
                                           dtype, thread_counts, rounds,
                                           opts.quick)
            results.append(r)
            print(f"  gemm {r['config']}: " + ", ".join(
                f"{key} {value:.2f}x" for key, value in r["ratios"].items()),
                flush=True)
            for threads in thread_counts:
                targets[f"{r['config']}_t{threads}_vs_separate"] = target(
                    r["ratios"][f"t{threads}_vs_te_separate"], ">=",
                    GROUPED_TARGET)
    finally:
        for w in workers.values():
            w.close()
    met = sum(t["met"] for t in targets.values())
    status = (f"{met} of {len(targets)} ratios met (te speed / torch speed; "
              "grouped: the separate GEMMs' time / the grouped GEMM's)")
    return config, {"status": status, "configs": results}, targets


# The grouped GEMM: (tokens, K, N, G); the quick run is smaller.
GROUPED_CONFIG = (4096, 2048, 2048, 8)
GROUPED_QUICK_CONFIG = (1024, 512, 512, 4)
# Grouped time <= 1.1 x the separate GEMMs': their time / grouped >= 1/1.1.
GROUPED_TARGET = round(1 / 1.1, 3)


def grouped_gemm_configuration(te_run, work, cache, workers, dtype,
                               thread_counts, rounds, quick):
    """te.grouped_matmul against its GEMMs as separate te.scaled_matmul ops
    (one program, one launch) and torch's per-group loop, on the same
    values and splits (uneven, drawn once)."""
    tokens, k, n, groups = GROUPED_QUICK_CONFIG if quick else GROUPED_CONFIG
    key = f"grouped_{groups}x_{tokens}x{k}_to_{n}_{dtype}"
    rng = np.random.default_rng(tokens + groups)
    cuts = np.sort(rng.integers(0, tokens + 1, groups - 1))
    splits = np.diff(np.concatenate([[0], cuts, [tokens]])).astype(np.int64)
    a = rng.standard_normal((tokens, k), np.float32)
    b = rng.standard_normal((groups, n, k), np.float32)
    fp8 = dtype != "bf16"
    if fp8:
        a_bits = (a * 8).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
        b_bits = (b * 2).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
        sa = rng.uniform(0.1, 0.2, groups).astype(np.float32)
        sb = rng.uniform(0.4, 0.6, groups).astype(np.float32)
    else:
        a_bits = a.astype(ml_dtypes.bfloat16).view(np.uint16)
        b_bits = b.astype(ml_dtypes.bfloat16).view(np.uint16)

    def save(name, value):
        path = work / f"gemm-{key}-{name}.npy"
        np.save(path, value)
        return path
    paths = {"a": save("a", a_bits), "b": save("b", b_bits),
             "m": save("m", splits)}
    # The grouped program.
    a_type, b_type = (f"tensor<{tokens}x{k}x{dtype}>",
                      f"tensor<{groups}x{n}x{k}x{dtype}>")
    types = [a_type, b_type, f"tensor<{groups}xi64>"]
    inputs = ["--input", paths["a"], "--input", paths["b"], "--input",
              paths["m"]]
    scales = ""
    if fp8:
        types += [f"tensor<{groups}xf32>"] * 2
        inputs += ["--input", save("sa", sa), "--input", save("sb", sb)]
        scales = " scales(%a3, %a4)"
    d_type = f"tensor<{tokens}x{n}xbf16>"
    grouped = work / f"gemm-{key}.mlir"
    grouped.write_text(
        f"func.func @grouped({', '.join(f'%a{i}: {t}' for i, t in enumerate(types))})"
        f" -> {d_type} {{\n"
        f"  %d = te.grouped_matmul %a0, %a1 splits(%a2){scales} transpose_b\n"
        f"      : {', '.join(types)} -> {d_type}\n"
        f"  return %d : {d_type}\n}}\n")
    # The same GEMMs as separate ops, on the groups' slices.
    args, body, results, separate_inputs = [], [], [], []
    start = 0
    for g, m in enumerate(splits):
        x_type, w_type = f"tensor<{m}x{k}x{dtype}>", f"tensor<{n}x{k}x{dtype}>"
        names = [f"%x{g}", f"%w{g}"]
        op_types = [x_type, w_type]
        separate_inputs += ["--input", save(f"x{g}", a_bits[start:start + m]),
                            "--input", save(f"w{g}", b_bits[g])]
        clause = ""
        if fp8:
            names += [f"%sx{g}", f"%sw{g}"]
            op_types += ["tensor<f32>"] * 2
            separate_inputs += ["--input", save(f"sx{g}", sa[g]),
                                "--input", save(f"sw{g}", sb[g])]
            clause = f" scales(%sx{g}, %sw{g})"
        args += [f"{v}: {t}" for v, t in zip(names, op_types)]
        out_type = f"tensor<{m}x{n}xbf16>"
        body.append(f"  %y{g} = te.scaled_matmul %x{g}, %w{g}{clause} "
                    f"transpose_b : {', '.join(op_types)} -> {out_type}")
        results.append((f"%y{g}", out_type))
        start += m
    separate = work / f"gemm-{key}-separate.mlir"
    separate.write_text(
        f"func.func @separate({', '.join(args)}) -> "
        f"({', '.join(t for _, t in results)}) {{\n" + "\n".join(body) +
        f"\n  return {', '.join(v for v, _ in results)} : "
        f"{', '.join(t for _, t in results)}\n}}\n")

    # Compile both once; the grouped D must equal the separate GEMMs' (the
    # same products summed in the same order) and be close to torch's.
    saved = work / f"gemm-{key}-te"
    _, proc = te_run([grouped, *inputs, "--output-dir", saved], cache,
                     timeout=1800)
    compile_ms, _ = parse_compile(proc.stderr)
    te_d = np.load(saved / "out0.npy").view(ml_dtypes.bfloat16).astype(
        np.float32)
    saved_separate = work / f"gemm-{key}-te-separate"
    te_run([separate, *separate_inputs, "--output-dir", saved_separate],
           cache, timeout=1800)
    separate_d = np.concatenate([
        np.load(saved_separate / f"out{g}.npy").view(ml_dtypes.bfloat16)
        for g in range(groups)]).astype(np.float32)
    for t, worker in workers.items():
        worker(cmd="load_grouped", a=str(paths["a"]), b=str(paths["b"]),
               splits=splits.tolist(), dtype=dtype,
               scales=[sa.tolist(), sb.tolist()] if fp8 else None)
    runs = max(1, gemm_runs(tokens, n, k) // 2)
    samples = {}
    for _ in range(rounds):
        for threads in thread_counts:
            time.sleep(GEMM_SETTLE_S)
            for side, program, program_inputs in (
                    ("te", grouped, inputs),
                    ("te_separate", separate, separate_inputs)):
                _, proc = te_run([program, *program_inputs, "--bench", runs,
                                  "--threads", threads], cache, timeout=1800)
                samples.setdefault((side, threads), []).append(
                    parse_bench(proc.stdout, 1)["printed_median_ms"] / 1e3)
            times = workers[threads](cmd="time", kind="grouped",
                                     runs=runs)["times_s"]
            samples.setdefault(("torch", threads), []).append(median(times))
    timings, ratios = {}, {}
    for (side, threads), values in samples.items():
        timings[f"{side}_t{threads}_ms"] = sig(median(values) * 1e3)
        if side != "te":
            ratios[f"t{threads}_vs_{side}"] = sig(
                median(values) / median(samples[("te", threads)]), 3)
    return {"config": key, "tokens": tokens, "k": k, "n": n,
            "splits": splits.tolist(), "dtype": dtype,
            "runs_per_round": runs, "compile_ms": compile_ms,
            "timings": timings, "ratios": ratios,
            "grouped_equals_separate": bool(np.array_equal(te_d, separate_d))}


def gemm_configuration(te_run, work, cache, workers, name, m, n, k, dtype,
                       thread_counts, rounds):
    key = f"{name}_{dtype}"
    rng = np.random.default_rng(m + n + k)
    a = rng.standard_normal((m, k), np.float32)
    b = rng.standard_normal((n, k), np.float32)
    if dtype == "bf16":
        a_bits = a.astype(ml_dtypes.bfloat16).view(np.uint16)
        b_bits = b.astype(ml_dtypes.bfloat16).view(np.uint16)
    else:
        a_bits = (a * 8).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
        b_bits = (b * 2).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    paths = {"a": work / f"gemm-{key}-a.npy", "b": work / f"gemm-{key}-b.npy"}
    np.save(paths["a"], a_bits)
    np.save(paths["b"], b_bits)
    types = [f"tensor<{m}x{k}x{dtype}>", f"tensor<{n}x{k}x{dtype}>"]
    args = [f"%a: {types[0]}", f"%b: {types[1]}"]
    inputs = ["--input", paths["a"], "--input", paths["b"]]
    scales = ""
    if dtype != "bf16":
        for name_, value in zip(("sa", "sb"), GEMM_SCALES):
            path = work / f"gemm-{key}-{name_}.npy"
            np.save(path, np.array(value, np.float32))
            inputs += ["--input", path]
            args.append(f"%{name_}: tensor<f32>")
            types.append("tensor<f32>")
        scales = " scales(%sa, %sb)"
    program = work / f"gemm-{key}.mlir"
    program.write_text(GEMM_PROGRAM.format(
        args=", ".join(args), m=m, n=n, scales=scales, types=", ".join(types)))

    # Compile once (and keep te's D to compare with torch's).
    saved = work / f"gemm-{key}-te"
    _, proc = te_run([program, *inputs, "--output-dir", saved], cache,
                     timeout=1800)
    compile_ms, _ = parse_compile(proc.stderr)
    te_d = np.load(saved / "out0.npy").view(ml_dtypes.bfloat16).astype(
        np.float32)
    scaled_mm = {}
    for t, worker in workers.items():
        reply = worker(cmd="load", a=str(paths["a"]), b=str(paths["b"]),
                       dtype=dtype, scales=list(GEMM_SCALES))
        scaled_mm[t] = reply["scaled_mm"]
    out = work / f"gemm-{key}-torch.npy"
    workers[thread_counts[0]](cmd="output", out=str(out))
    torch_d = np.load(out)
    difference = float(np.max(np.abs(torch_d - te_d)) /
                       max(1e-30, float(np.max(np.abs(torch_d)))))
    kinds = ["matmul", "matmul_f32"] + (["scaled_mm"] if dtype != "bf16" and all(
        v == "available" for v in scaled_mm.values()) else [])

    runs = gemm_runs(m, n, k)
    samples = {}
    for _ in range(rounds):
        for threads in thread_counts:
            # torch's OpenMP threads spin for a while after its last call;
            # let them go to sleep before te's threads need the cores.
            time.sleep(GEMM_SETTLE_S)
            _, proc = te_run([program, *inputs, "--bench", runs, "--threads",
                              threads], cache, timeout=1800)
            samples.setdefault(("te", threads), []).append(
                parse_bench(proc.stdout, 1)["printed_median_ms"] / 1e3)
            for kind in kinds:
                times = workers[threads](cmd="time", kind=kind,
                                         runs=runs)["times_s"]
                samples.setdefault((kind, threads), []).append(median(times))
    timings, ratios, gflops = {}, {}, {}
    for (side, threads), values in samples.items():
        seconds = median(values)
        timings[f"{side}_t{threads}_ms"] = sig(seconds * 1e3)
        gflops[f"{side}_t{threads}"] = sig(2.0 * m * n * k / seconds / 1e9)
        if side != "te":
            ratios[f"t{threads}_vs_torch_{side}"] = sig(
                seconds / median(samples[("te", threads)]), 3)
    return {"config": key, "m": m, "n": n, "k": k, "dtype": dtype,
            "runs_per_round": runs, "compile_ms": compile_ms,
            "timings": timings, "gflops": gflops, "ratios": ratios,
            "torch_scaled_mm": scaled_mm[thread_counts[0]],
            "max_difference_vs_torch_relative_to_max": sig(difference)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--te-run", default=os.environ.get(
        "TE_RUN", str(DEFAULT_TE_RUN)),
        help="te-run binary (default: $TE_RUN or build/bin/te-run)")
    parser.add_argument("--out", default=str(DEFAULT_OUT),
                        help="results directory (default: bench/results)")
    parser.add_argument("--rounds", type=int, default=5,
                        help="interleaved rounds of the quantize comparison")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true",
                        help="fewer repeats, for a smoke test")
    parser.add_argument("--full", action="store_true",
                        help="attention_peers also at s=4096 (long)")
    parser.add_argument("--only", action="append", choices=SECTION_NAMES,
                        help="run only this section (repeatable)")
    parser.add_argument("--keep-work", action="store_true",
                        help="keep the temporary directory (programs, "
                             "inputs, kernel caches)")
    opts = parser.parse_args()

    te_path = Path(opts.te_run)
    if not te_path.is_file() or not os.access(te_path, os.X_OK):
        sys.exit(f"run_benchmarks: no te-run at {te_path} "
                 "(build it, or pass --te-run)")
    te_run = TeRun(te_path)
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    machine = machine_info()
    commit = te_mlir_commit()
    date = datetime.datetime.now(datetime.timezone.utc).isoformat(
        timespec="seconds")
    print(f"te-run: {te_path}\nmachine: {machine['cpu']}, "
          f"{machine['cores']} cores\ndate: {date}", flush=True)

    work = Path(tempfile.mkdtemp(prefix="te-bench-"))
    records = {}
    started = opts.started = time.perf_counter()
    try:
        sections = [
            ("fp8_quantize", bench_fp8_quantize,
             "per-tensor FP8 quantize throughput against memcpy and "
             "numpy + ml_dtypes"),
            ("jit_latency", bench_jit_latency,
             "cold compile, disk-warm new process and memory-hot launch "
             "latency of a small kernel"),
            ("attention_fwd", bench_attention,
             "fused attention forward against a numpy reference"),
            ("attention_peers", bench_attention_peers,
             "attention forward and backward against PyTorch and JAX, at "
             "one thread and at every core"),
            ("collectives", bench_collectives,
             "all_reduce and all_gather on MPI against raw MPI calls on the "
             "same buffers, at 2 and 4 ranks"),
            ("gemm", bench_gemm,
             "te.scaled_matmul (bf16 and FP8 operands) against torch's "
             "matmul, at one thread and at every core"),
        ]
        for name, run, description in sections:
            if opts.only and name not in opts.only:
                continue
            print(f"{name}: {description}", flush=True)
            config, results, targets = run(te_run, work, opts)
            records[name] = record(name, description, config, results,
                                   targets, machine, commit, date)
            if name == "attention_fwd":
                print(f"  attention: {results['status']}", flush=True)
    finally:
        if opts.keep_work:
            print(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    for name, rec in records.items():
        (out / f"{name}.json").write_text(json.dumps(rec, indent=2) + "\n")
    written = [f"{name}.json" for name in records]
    if all(name in records for name in SECTION_NAMES[:3]):
        if draw_chart(records, out / "summary.png", machine, date):
            written.append("summary.png")
        print_table(records)
    if "attention_peers" in records:
        if draw_peer_chart(records["attention_peers"],
                           out / "attention_peers.png"):
            written.append("attention_peers.png")
        print_peer_table(records["attention_peers"])
    print(f"\nwrote {', '.join(written)} to {out}  "
          f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
