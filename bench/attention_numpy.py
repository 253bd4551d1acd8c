#!/usr/bin/env python3
"""The numpy baseline of the attention benchmark, run as its own process.

run_benchmarks.py starts this file as a subprocess (with OPENBLAS_CORETYPE
and OPENBLAS_L2_SIZE removed from its environment, so that OpenBLAS picks
its kernels for the CPU itself) and talks to it over stdin/stdout, one JSON
object per line each way:

    {"cmd": "info"}
        -> numpy version, the BLAS libraries threadpoolctl sees (kernel
           architecture, threads, version), the OPENBLAS_* variables this
           process has.
    {"cmd": "time", "b", "s", "h", "d", "mask", "dtype", "runs", "warmup",
     "threads", "seed", "peak_memory"}
        -> {"times_s": [...], "peak_bytes", "scores_bytes"}: random N(0,1)
           inputs of that shape (rounded to the element type), `warmup`
           untimed calls, then `runs` timed calls, with the BLAS limited to
           `threads` threads (null: its default). peak_memory: one more,
           untimed, call under tracemalloc for the peak of what the
           computation allocates (its buffers, temporaries and output; the
           inputs not counted).
    {"cmd": "run", "inputs": [q.npy, k.npy, v.npy], "mask", "dtype",
     "out": o.npy}
        -> {}: one call on the given f32 inputs (holding values of the
           element type), the result saved as f32 to `out`.
    {"cmd": "quit"}

The reference is the fast plain-numpy way to compute te.attention forward
(bshd, no bias, vanilla softmax, default scale 1/sqrt(d)) in float32, one
head at a time:

    q' = q * scale                       (scale folded into q: O(s*d))
    P  = q'_h @ k_h^T                    [s, s] scores, OpenBLAS sgemm
    P[j > i] = -inf                      causal only (precomputed mask)
    P  = exp(P - rowmax(P))
    O_h = (P @ v_h) / rowsum(P)          normalising the [s, d] result

bf16 inputs are upcast to f32 and the result rounded back to bf16, inside
the timed call. The [s, s] scores and the causal mask are allocated once
per shape, outside the timing (te-run's buffers are too), and reused across
heads and calls; for causal it still computes every score, as numpy cannot
skip the masked half.
"""
import json
import os
import sys
import time
import tracemalloc

import ml_dtypes
import numpy as np

try:
    import threadpoolctl
except ImportError:  # then the BLAS runs with its default threads
    threadpoolctl = None

DTYPES = {"f32": np.float32, "bf16": ml_dtypes.bfloat16}


class Attention:
    """softmax(q k^T / sqrt(d) + mask) v for [b, s, h, d] (bshd) inputs."""

    def __init__(self, s_q, s_kv, causal):
        self.scores = np.empty((s_q, s_kv), np.float32)
        self.row_max = np.empty((s_q, 1), np.float32)
        self.row_sum = np.empty((s_q, 1), np.float32)
        self.masked = (np.triu(np.ones((s_q, s_kv), bool), 1) if causal
                       else None)

    def __call__(self, q, k, v):
        dtype = q.dtype
        batch, _, heads, d = q.shape
        q = q.astype(np.float32) * np.float32(1 / np.sqrt(d))
        k = k.astype(np.float32, copy=False)
        v = v.astype(np.float32, copy=False)
        o = np.empty(q.shape[:3] + v.shape[3:], np.float32)
        p = self.scores
        for n in range(batch):
            for h in range(heads):
                np.matmul(q[n, :, h, :], k[n, :, h, :].T, out=p)
                if self.masked is not None:
                    np.copyto(p, -np.inf, where=self.masked)
                np.max(p, axis=1, keepdims=True, out=self.row_max)
                np.subtract(p, self.row_max, out=p)
                np.exp(p, out=p)
                np.sum(p, axis=1, keepdims=True, out=self.row_sum)
                o_h = o[n, :, h, :]
                np.matmul(p, v[n, :, h, :], out=o_h)
                np.divide(o_h, self.row_sum, out=o_h)
        return o if dtype == np.float32 else o.astype(dtype)


def blas_info():
    if threadpoolctl is None:
        return None
    keep = ("user_api", "internal_api", "version", "architecture",
            "num_threads", "threading_layer", "prefix", "filepath")
    return [{key: info.get(key) for key in keep}
            for info in threadpoolctl.threadpool_info()]


def limit_threads(threads):
    if threads is None or threadpoolctl is None:
        return _Nothing()
    return threadpoolctl.threadpool_limits(limits=threads, user_api="blas")


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def random_inputs(b, s, h, d, dtype, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((b, s, h, d), dtype=np.float32).astype(
        DTYPES[dtype]) for _ in range(3)]


def time_config(req):
    b, s, h, d = req["b"], req["s"], req["h"], req["d"]
    q, k, v = random_inputs(b, s, h, d, req["dtype"], req.get("seed", 0))
    attention = Attention(s, s, req["mask"] == "causal")
    times = []
    with limit_threads(req.get("threads")):
        for _ in range(req.get("warmup", 1)):
            attention(q, k, v)
        for _ in range(req["runs"]):
            start = time.perf_counter_ns()
            attention(q, k, v)
            times.append((time.perf_counter_ns() - start) * 1e-9)
        peak = None
        if req.get("peak_memory"):
            del attention
            tracemalloc.start()
            base = tracemalloc.get_traced_memory()[0]
            attention = Attention(s, s, req["mask"] == "causal")
            attention(q, k, v)
            peak = tracemalloc.get_traced_memory()[1] - base
            tracemalloc.stop()
    return {"times_s": times, "peak_bytes": peak,
            "scores_bytes": attention.scores.nbytes}


def run_config(req):
    dtype = DTYPES[req["dtype"]]
    q, k, v = (np.load(path).astype(dtype) for path in req["inputs"])
    _, s_q, _, _ = q.shape
    o = Attention(s_q, k.shape[1], req["mask"] == "causal")(q, k, v)
    np.save(req["out"], o.astype(np.float32))
    return {}


def main():
    for line in sys.stdin:
        req = json.loads(line)
        cmd = req["cmd"]
        if cmd == "quit":
            break
        try:
            if cmd == "info":
                reply = {
                    "numpy": np.__version__,
                    "python": sys.executable,
                    "blas": blas_info(),
                    "threadpoolctl": (threadpoolctl.__version__
                                      if threadpoolctl else None),
                    "openblas_env": {key: value for key, value
                                     in os.environ.items()
                                     if key.startswith("OPENBLAS")},
                }
            elif cmd == "time":
                reply = time_config(req)
            elif cmd == "run":
                reply = run_config(req)
            else:
                raise ValueError(f"unknown command {cmd!r}")
        except Exception as error:  # reported to the parent, which stops
            reply = {"error": f"{type(error).__name__}: {error}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
