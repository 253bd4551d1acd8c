#!/usr/bin/env python3
"""Feeds te-opt mechanically mutated copies of te programs.

Every mutant must end in success or a diagnostic (exit code 0 or 1), never a
signal, an abort or a hang. Mutations are deterministic for a given seed, so a
failure reproduces; the offending input is written next to the report.
"""
import argparse
import concurrent.futures
import os
import random
import re
import subprocess
import sys
import tempfile

TOKEN_RE = re.compile(r"%[\w#.]+|@\w+|-?\d+(?:\.\d+)?(?:e[+-]?\d+)?|\w+|\S")

# Values that stress verifiers: zero, negatives, huge and non-finite numbers.
NUMBERS = ["0", "1", "-1", "-2", "2", "3", "31", "33", "127", "129",
           "9223372036854775807", "-9223372036854775808", "1.0e309",
           "0x7FC00000", "nan", "1.5"]
KEYWORDS = ["bshd", "sbhd", "bhsd", "thd", "no_mask", "padding", "causal",
            "causal_bottom_right", "padding_causal",
            "padding_causal_bottom_right", "arbitrary", "no_bias",
            "pre_scale", "post_scale", "alibi", "vanilla", "off_by_one",
            "learnable", "per_tensor", "mxfp8_1x32", "block_1x128",
            "block_128x128", "rowwise", "columnwise", "both", "max",
            "most_recent", "sum", "min", "avg", "f32", "bf16", "f16", "i1",
            "i32", "i64", "f8E4M3FN", "f8E5M2", "f8E8M0FNU", "transpose_a",
            "gelu", "return_lse", "window", "scale", "dropout", "group",
            "shift", "pairs", "dim"]


def mutate(text, rng):
    """Applies one to three random edits to `text`."""
    for _ in range(rng.randint(1, 3)):
        tokens = [m for m in TOKEN_RE.finditer(text)]
        if not tokens:
            return text
        tok = rng.choice(tokens)
        start, end = tok.span()
        kind = rng.randrange(11)
        if kind == 0:  # delete a token
            text = text[:start] + text[end:]
        elif kind == 1:  # duplicate a token
            text = text[:end] + " " + tok.group() + text[end:]
        elif kind == 2:  # replace a number
            nums = [m for m in tokens if re.fullmatch(r"-?\d+(\.\d+)?", m.group())]
            if nums:
                n = rng.choice(nums)
                text = text[:n.start()] + rng.choice(NUMBERS) + text[n.end():]
        elif kind == 3:  # replace a keyword
            text = text[:start] + rng.choice(KEYWORDS) + text[end:]
        elif kind == 4:  # change a tensor dimension
            dims = list(re.finditer(r"(?<=tensor<)[\dx?]*\d", text))
            if dims:
                d = rng.choice(dims)
                parts = d.group().split("x")
                i = rng.randrange(len(parts))
                parts[i] = rng.choice(["0", "1", "?", "3", "17", "64", "4096"])
                if rng.random() < 0.3 and len(parts) > 1:
                    del parts[rng.randrange(len(parts))]
                text = text[:d.start()] + "x".join(parts) + text[d.end():]
        elif kind == 5:  # swap two tokens
            other = rng.choice(tokens)
            a, b = sorted([tok, other], key=lambda m: m.start())
            if a.end() <= b.start():
                text = (text[:a.start()] + b.group() + text[a.end():b.start()]
                        + a.group() + text[b.end():])
        elif kind == 6:  # truncate
            text = text[:start]
        elif kind == 7:  # drop a line
            lines = text.split("\n")
            del lines[rng.randrange(len(lines))]
            text = "\n".join(lines)
        elif kind == 9:  # one size, everywhere: zero-size or huge tensors
            # Every occurrence of a dimension size in the tensor types
            # changes together, so q, k and v stay consistent and the
            # mutant still verifies: the lowerings meet empty and
            # enormous problems, not just verifier errors.
            sizes = sorted({m.group(1) for m in
                            re.finditer(r"(?<=[<x])(\d+)(?=x)", text)})
            if sizes:
                old = rng.choice(sizes)
                new = rng.choice(["0", "0", "1", "4294967296",
                                  "9223372036854775807"])
                text = re.sub(r"(?<=[<x])" + old + r"(?=x)", new, text)
        elif kind == 10:  # inline assembly in a function body
            bodies = [m.end() for m in re.finditer(r"func\.func[^{]*\{", text)]
            if bodies:
                at = rng.choice(bodies)
                text = (text[:at] + '\n  llvm.inline_asm has_side_effects '
                        '"nop", "" : () -> ()' + text[at:])
        else:  # insert a stray character
            text = text[:start] + rng.choice("(){}[]<>,:=%@#\"-") + text[start:]
    return text


def run_one(tool, text, timeout, passes, emit):
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
        f.write(text)
        path = f.name
    # te-opt checks and lowers; te-run --emit=STAGE also runs LLVM's code
    # generator on what te-opt's lowering leaves.
    command = ([tool, path, f"--emit={emit}", "-o", os.devnull] if emit else
               [tool, path, "-split-input-file", *passes])
    try:
        proc = subprocess.run(
            command,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout)
        code, err = proc.returncode, proc.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired:
        code, err = "timeout", ""
    finally:
        os.unlink(path)
    return code, err


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tool", required=True,
                        help="path of te-opt (or of te-run with --emit)")
    parser.add_argument("--emit", default="",
                        help="run the tool as te-run --emit=STAGE -o /dev/null")
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--seed", type=int, default=20261202)
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--report-dir", default=".")
    parser.add_argument("--passes", default="-canonicalize",
                        help="te-opt pass flags, space separated")
    parser.add_argument("inputs", nargs="+")
    args = parser.parse_args()

    sources = [open(p).read() for p in args.inputs]
    rng = random.Random(args.seed)
    mutants = [mutate(rng.choice(sources), rng) for _ in range(args.count)]

    failures = []
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        passes = args.passes.split()
        results = pool.map(
            lambda t: run_one(args.tool, t, args.timeout, passes, args.emit),
            mutants)
        outcomes = {"success": 0, "diagnostic": 0}
        for i, (text, (code, err)) in enumerate(zip(mutants, results)):
            if code == 0:
                outcomes["success"] += 1
            elif code in ((1, 2) if args.emit else (1,)) and "error:" in err:
                outcomes["diagnostic"] += 1
            else:
                failures.append((i, code, text, err))

    print(f"{len(mutants)} mutants: {outcomes['success']} accepted, "
          f"{outcomes['diagnostic']} rejected with a diagnostic, "
          f"{len(failures)} crashed, hung or failed silently")
    for i, code, text, err in failures[:5]:
        path = os.path.join(args.report_dir, f"mutant-{i}.mlir")
        with open(path, "w") as f:
            f.write(text)
        print(f"mutant {i}: exit {code}; input saved to {path}\n{err[-2000:]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
