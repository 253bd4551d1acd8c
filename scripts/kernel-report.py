#!/usr/bin/env python3
"""Resource report of the GPU kernels in a PTX file, checked against budgets.

Runs the CUDA toolkit's ptxas with -v on the PTX (te-run --emit=ptx) for one
arch and prints, per kernel: registers, shared memory, stack frame and spill
bytes. Exits 1 when a kernel spills, uses a stack frame, or needs more
registers than --max-registers: the generated kernels must do neither.

    scripts/kernel-report.py kernels.ptx --arch sm_90a [--max-registers 64]
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile


def ptxas_path():
    for variable in ("TE_CUDA_PATH", "CUDA_HOME"):
        if os.environ.get(variable):
            return os.path.join(os.environ[variable], "bin", "ptxas")
    return "/usr/local/cuda/bin/ptxas"


def parse(output):
    """ptxas -v's lines -> {kernel: {registers, shared, stack, spill_stores,
    spill_loads}}."""
    kernels = {}
    current = None
    for line in output.splitlines():
        match = re.search(r"Compiling entry function '([^']+)'", line)
        if match:
            current = kernels.setdefault(match.group(1), {
                "registers": 0, "shared": 0, "stack": 0,
                "spill_stores": 0, "spill_loads": 0})
            continue
        if current is None:
            continue
        match = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, "
                          r"(\d+) bytes spill loads", line)
        if match:
            current["stack"], current["spill_stores"], current["spill_loads"] = (
                int(group) for group in match.groups())
        match = re.search(r"Used (\d+) registers", line)
        if match:
            current["registers"] = int(match.group(1))
        match = re.search(r"(\d+) bytes smem", line)
        if match:
            current["shared"] = int(match.group(1))
    return kernels


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ptx")
    parser.add_argument("--arch", required=True, help="e.g. sm_80, sm_90a")
    parser.add_argument("--max-registers", type=int, default=255)
    parser.add_argument("--json", help="also write the report here")
    args = parser.parse_args()

    ptxas = ptxas_path()
    if not os.access(ptxas, os.X_OK):
        print(f"kernel-report: no ptxas at {ptxas}; set TE_CUDA_PATH to the "
              "CUDA toolkit", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as scratch:
        result = subprocess.run(
            [ptxas, f"-arch={args.arch}", "-v", args.ptx, "-o",
             os.path.join(scratch, "kernels.cubin")],
            capture_output=True, text=True)
    if result.returncode != 0:
        print(f"kernel-report: ptxas refused {args.ptx} for {args.arch}:\n"
              + result.stderr, file=sys.stderr)
        return 1
    kernels = parse(result.stderr + result.stdout)
    if not kernels:
        print(f"kernel-report: {args.ptx} has no kernels", file=sys.stderr)
        return 1

    failures = []
    print(f"{'kernel':64} {'regs':>5} {'smem':>6} {'stack':>6} {'spills':>7}")
    for name, info in sorted(kernels.items()):
        spills = info["spill_stores"] + info["spill_loads"]
        print(f"{name:64} {info['registers']:5} {info['shared']:6} "
              f"{info['stack']:6} {spills:7}")
        if spills:
            failures.append(f"{name} spills {spills} bytes")
        if info["stack"]:
            failures.append(f"{name} uses a {info['stack']}-byte stack frame")
        if info["registers"] > args.max_registers:
            failures.append(f"{name} uses {info['registers']} registers, over "
                            f"the budget of {args.max_registers}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"arch": args.arch, "kernels": kernels}, out, indent=2)
    for failure in failures:
        print(f"kernel-report: {args.arch}: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
