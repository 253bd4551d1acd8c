#!/usr/bin/env python3
"""te_mlir from Python against PyTorch: per-call overhead of a cached op on
tiny inputs, and the peak memory of an attention call.

    PYTHONPATH=build/python .venv/bin/python bench/python_overhead.py

1. overhead: causal attention of tiny bshd f32 tensors (b=1, s=8, h=2,
   d=16), whose kernel time is negligible, called N times in a row; rounds
   of every variant alternate and the best round's mean per call is kept:
   te_mlir.ops.attention on numpy arrays and on torch tensors,
   te_mlir.torch.dot_product_attention (the torch custom op), a bare
   te_mlir Module call of the same program, and torch.nn.functional.
   scaled_dot_product_attention on the same torch tensors.
2. peak_memory: causal attention at b=1, s=2048, h=8, d=64, f32, forward
   and forward + backward, each variant in a fresh process: after a warm-up
   call (the compile, torch's first-call setup), the kernel's peak resident
   memory is reset (/proc/self/clear_refs), one call runs, and the growth
   of the peak (VmHWM) over the resident memory before the call is the
   call's extra memory; the inputs themselves (3 x 4 MiB) are not counted,
   the outputs are.

Writes bench/results/python.json (--out DIR elsewhere) and prints a table.
Needs torch (scripts/bootstrap.sh installs it).
"""

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TINY = dict(b=1, s=8, h=2, d=16)
LARGE = dict(b=1, s=2048, h=8, d=64)


def overhead(calls, rounds):
    import numpy as np
    import torch
    import torch.nn.functional as F

    import te_mlir
    import te_mlir.torch as tet
    from te_mlir import ops

    b, s, h, d = (TINY[k] for k in "bshd")
    torch.manual_seed(0)
    q, k, v = (torch.randn(b, s, h, d) for _ in range(3))
    qn, kn, vn = (x.numpy() for x in (q, k, v))
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    t = f"tensor<{b}x{s}x{h}x{d}xf32>"
    module = te_mlir.compile(
        f"func.func @a(%q: {t}, %k: {t}, %v: {t}) -> {t} {{\n"
        f"  %o = te.attention %q, %k, %v layout bshd mask causal : "
        f"({t}, {t}, {t}) -> {t}\n  return %o : {t}\n}}")
    variants = {
        "te_mlir Module call (numpy)": lambda: module(qn, kn, vn),
        "te_mlir.ops.attention (numpy)": lambda: ops.attention(qn, kn, vn),
        "te_mlir.ops.attention (torch)": lambda: ops.attention(q, k, v),
        "te_mlir.torch.dot_product_attention (custom op)":
            lambda: tet.dot_product_attention(q, k, v),
        "torch SDPA": lambda: F.scaled_dot_product_attention(
            qt, kt, vt, is_causal=True),
    }
    bshd = {"torch SDPA": lambda out: out.transpose(1, 2)}
    # Same answer first: they compute the same thing.
    want = variants["torch SDPA"]().transpose(1, 2).numpy()
    for name, fn in variants.items():
        out = fn()
        out = out[0] if isinstance(out, tuple) else out
        out = bshd.get(name, lambda o: o)(out)
        got = out.numpy() if hasattr(out, "numpy") else out
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5,
                                   err_msg=name)
    best = {name: float("inf") for name in variants}
    with torch.no_grad():
        for _ in range(rounds):
            for name, fn in variants.items():
                start = time.perf_counter()
                for _ in range(calls):
                    fn()
                per_call = (time.perf_counter() - start) / calls
                best[name] = min(best[name], per_call)
    sdpa = best["torch SDPA"]
    return [{"variant": name, "us_per_call": round(sec * 1e6, 2),
             "vs_torch_sdpa": round(sec / sdpa, 2)}
            for name, sec in best.items()]


PEAK_CHILD = r"""
import json, sys
import torch
import torch.nn.functional as F
variant, backward = sys.argv[1], sys.argv[2] == "1"
b, s, h, d = {b}, {s}, {h}, {d}
torch.manual_seed(0)
q, k, v = (torch.randn(b, s, h, d, requires_grad=backward) for _ in range(3))
if variant == "te_mlir":
    import te_mlir.torch as tet
    call = lambda: tet.dot_product_attention(q, k, v, mask="causal")
else:
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    call = lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=True)
def step():
    out = call()
    if backward:
        out.sum().backward()
        for x in (q, k, v):
            x.grad = None
    return out
def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
with torch.set_grad_enabled(backward):
    step()  # warm-up: compile, first-call setup
    rss = status("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # peak RSS := current RSS
    out = step()
    peak = status("VmHWM")
print(json.dumps({{"extra_bytes": peak - rss}}))
"""


def peak_memory():
    rows = []
    script = PEAK_CHILD.format(**LARGE)
    for backward in (False, True):
        for variant in ("te_mlir", "torch SDPA"):
            proc = subprocess.run(
                [sys.executable, "-c", script, variant,
                 "1" if backward else "0"], capture_output=True, text=True,
                timeout=600)
            if proc.returncode != 0:
                raise RuntimeError(f"{variant}: {proc.stderr}")
            extra = json.loads(proc.stdout.strip().splitlines()[-1])
            rows.append({"variant": variant,
                         "pass": "forward + backward" if backward else
                         "forward",
                         "extra_MiB": round(extra["extra_bytes"] / 2**20, 1)})
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    opts = parser.parse_args()
    import torch
    result = {
        "benchmark": "python",
        "description": "te_mlir's Python per-call overhead against torch "
                       "SDPA on tiny inputs, and the peak memory of an "
                       "attention call against torch's",
        "config": {"overhead": TINY, "peak_memory": LARGE, "dtype": "f32",
                   "mask": "causal", "layout": "bshd", "calls": opts.calls,
                   "rounds": opts.rounds, "torch": torch.__version__,
                   "torch_threads": torch.get_num_threads()},
        "machine": {"cpu": platform.processor() or platform.machine(),
                    "cores": os.cpu_count()},
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"),
        "overhead": overhead(opts.calls, opts.rounds),
        "peak_memory": peak_memory(),
    }
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "python.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"per call, b={TINY['b']} s={TINY['s']} h={TINY['h']} "
          f"d={TINY['d']} f32 causal (best of {opts.rounds} rounds of "
          f"{opts.calls}):")
    for row in result["overhead"]:
        print(f"  {row['variant']:38s} {row['us_per_call']:8.2f} us  "
              f"{row['vs_torch_sdpa']:5.2f}x torch SDPA")
    print(f"extra peak memory of one call, b={LARGE['b']} s={LARGE['s']} "
          f"h={LARGE['h']} d={LARGE['d']} f32 causal:")
    for row in result["peak_memory"]:
        print(f"  {row['variant']:12s} {row['pass']:20s} "
              f"{row['extra_MiB']:8.1f} MiB")
    print(f"wrote {out / 'python.json'}")


if __name__ == "__main__":
    main()
