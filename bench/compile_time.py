#!/usr/bin/env python3
"""Cold compile time of a te program per target, median of N runs.

    .venv/bin/python bench/compile_time.py                       # attention_forward
    .venv/bin/python bench/compile_time.py examples/ring_attention.mlir --runs 3

Each run is `te-run FILE --emit=module` in a fresh process: --emit neither
reads nor writes the kernel cache, so every run compiles from the source
text (process start and MLIR's load included, as a user's first call pays
them). Targets: cpu (the host) and cuda for each --arch (TE_CUDA_ARCH;
no GPU is needed to compile). The runs of all targets are interleaved, so
that a slow moment of the machine does not fall on one target only.
Prints one line per target and, with --json, writes the numbers there.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("program", nargs="?",
                        default=str(ROOT / "examples/attention_forward.mlir"))
    parser.add_argument("--te-run", default=os.environ.get(
        "TE_RUN", str(ROOT / "build/bin/te-run")))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--arch", action="append", default=None,
                        help="cuda arch to compile for (repeatable; "
                        "default sm_90a)")
    parser.add_argument("--json", help="write the results to this file")
    args = parser.parse_args()
    archs = args.arch or ["sm_90a"]
    targets = [("cpu", {})] + [(f"cuda {a}", {"TE_CUDA_ARCH": a})
                               for a in archs]
    times = {name: [] for name, _ in targets}
    with tempfile.TemporaryDirectory() as work:
        for _ in range(args.runs):
            for name, extra in targets:
                env = dict(os.environ, **extra)
                backend = name.split()[0]
                cmd = [args.te_run, args.program, "--backend", backend,
                       "--emit=module", "-o", os.path.join(work, "module")]
                start = time.perf_counter()
                proc = subprocess.run(cmd, env=env, capture_output=True,
                                      text=True)
                elapsed = time.perf_counter() - start
                if proc.returncode != 0:
                    sys.stderr.write(f"{name}: te-run failed:\n"
                                     f"{proc.stderr}")
                    return 1
                times[name].append(elapsed)
    results = {name: {"median_s": statistics.median(t), "runs_s": t}
               for name, t in times.items()}
    for name, r in results.items():
        print(f"{name:14s} median {r['median_s']:.3f} s over "
              f"{len(r['runs_s'])} runs")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"benchmark": "compile_time", "program": args.program,
             "machine": platform.processor() or platform.machine(),
             "results": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
