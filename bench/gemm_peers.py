#!/usr/bin/env python3
"""PyTorch's GEMM on the CPU, as the peer of te-mlir's, in its own process.

run_benchmarks.py starts one process per thread count:

    gemm_peers.py --threads N

and talks to it over stdin/stdout, one JSON object per line each way:

    {"cmd": "info"}
        -> torch's version, its thread count, and whether this build has a
           CPU torch._scaled_mm.
    {"cmd": "load", "a": a.npy, "b": b.npy, "dtype": "bf16" | "f8E4M3FN",
     "scales": [sa, sb]}
        -> {}: the arrays te-run gets as --input (a [M, K], b [N, K]: TE's
           TN forward, D = A B^T). bf16 arrives as raw uint16 bits, FP8 as
           raw uint8 bits with its per-tensor scale inverses. torch gets the
           same values: bf16 tensors, or for FP8 the dequantized values in
           bf16 (exact: bf16 holds every e4m3 value times a power-of-two
           scale) and, where this build has it on the CPU, the FP8 tensors
           for torch._scaled_mm. Each is run once, untimed.
    {"cmd": "load_grouped", "a": a.npy, "b": b.npy, "splits": [...],
     "dtype", "scales": [sa [G], sb [G]]}
        -> {}: a grouped GEMM (b [G, N, K]; group g's rows of a times
           b[g]^T), as a torch user runs GroupedLinear's forward on the
           CPU: one matmul per group into its rows of one output. FP8
           arrives as for "load", with one scale per group.
    {"cmd": "time", "kind": "matmul" | "matmul_f32" | "scaled_mm" |
     "grouped", "runs"}
        -> {"times_s": [...]}: `runs` timed calls of a @ b.T (bf16 out),
           the same values' product in f32 (f32 in and out: torch's fastest
           GEMM where its bf16 matmul has no fast path, on processors
           without AVX512-BF16 or AMX), torch._scaled_mm (bf16 out) or the
           grouped GEMM.
    {"cmd": "output", "out": d.npy}
        -> {}: a @ b.T as f32, to compare with te-run's D.
    {"cmd": "quit"}
"""
import argparse
import json
import sys
import time

import ml_dtypes
import numpy as np


class TorchGemm:
    def __init__(self, threads):
        import torch
        self.torch = torch
        torch.set_num_threads(threads)
        self.a = self.b = None
        self.fp8 = None
        self.scaled_mm_error = None

    def info(self):
        return {"library": "torch", "version": self.torch.__version__,
                "threads": self.torch.get_num_threads(),
                "mkldnn": bool(self.torch.backends.mkldnn.is_available()),
                "scaled_mm": self.scaled_mm_error or "not tried yet"}

    def load(self, a, b, dtype, scales=None):
        torch = self.torch
        a_np, b_np = np.load(a), np.load(b)
        self.fp8 = None
        if dtype == "bf16":
            a32 = a_np.view(ml_dtypes.bfloat16).astype(np.float32)
            b32 = b_np.view(ml_dtypes.bfloat16).astype(np.float32)
        else:
            sa, sb = scales
            a8 = a_np.view(ml_dtypes.float8_e4m3fn)
            b8 = b_np.view(ml_dtypes.float8_e4m3fn)
            a32 = a8.astype(np.float32) * np.float32(sa)
            b32 = b8.astype(np.float32) * np.float32(sb)
            try:
                fa = torch.from_numpy(a_np.copy()).view(torch.float8_e4m3fn)
                fb = torch.from_numpy(b_np.copy()).view(torch.float8_e4m3fn)
                self.fp8 = (fa, fb.t(), torch.tensor(sa, dtype=torch.float32),
                            torch.tensor(sb, dtype=torch.float32))
                self._scaled_mm()
                self.scaled_mm_error = "available"
            except Exception as error:  # the CPU build has no such kernel
                self.fp8 = None
                self.scaled_mm_error = f"unavailable: {error}".splitlines()[0]
        self.a = torch.from_numpy(a32).to(torch.bfloat16)
        self.b = torch.from_numpy(b32).to(torch.bfloat16)
        self.a32, self.b32 = torch.from_numpy(a32), torch.from_numpy(b32)
        self._matmul()
        self._matmul_f32()
        return {"scaled_mm": self.scaled_mm_error}

    def load_grouped(self, a, b, splits, dtype, scales=None):
        torch = self.torch
        a_np, b_np = np.load(a), np.load(b)
        if dtype == "bf16":
            a32 = a_np.view(ml_dtypes.bfloat16).astype(np.float32)
            b32 = b_np.view(ml_dtypes.bfloat16).astype(np.float32)
        else:
            sa, sb = (np.asarray(s, np.float32) for s in scales)
            rows = np.repeat(np.arange(len(splits)), splits)
            a32 = (a_np.view(ml_dtypes.float8_e4m3fn).astype(np.float32) *
                   sa[rows][:, None])
            b32 = (b_np.view(ml_dtypes.float8_e4m3fn).astype(np.float32) *
                   sb[:, None, None])
        x = torch.from_numpy(a32).to(torch.bfloat16)
        w = torch.from_numpy(b32).to(torch.bfloat16)
        self.grouped = (list(x.split(list(splits))), list(w),
                        torch.empty(x.shape[0], w.shape[1],
                                    dtype=torch.bfloat16))
        self._grouped()
        return {}

    def _grouped(self):
        xs, ws, out = self.grouped
        start = 0
        for x, w in zip(xs, ws):
            self.torch.mm(x, w.t(), out=out[start:start + x.shape[0]])
            start += x.shape[0]
        return out

    def _matmul(self):
        return self.a @ self.b.t()

    def _matmul_f32(self):
        return self.a32 @ self.b32.t()

    def _scaled_mm(self):
        fa, fb, sa, sb = self.fp8
        return self.torch._scaled_mm(fa, fb, scale_a=sa, scale_b=sb,
                                     out_dtype=self.torch.bfloat16)

    def time(self, kind, runs):
        call = {"matmul": self._matmul, "matmul_f32": self._matmul_f32,
                "scaled_mm": self._scaled_mm, "grouped": self._grouped}[kind]
        if kind == "scaled_mm" and self.fp8 is None:
            raise RuntimeError("torch._scaled_mm is not available here")
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        return {"times_s": times}

    def output(self, out):
        np.save(out, self._matmul().float().numpy())
        return {}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, required=True)
    opts = parser.parse_args()
    peer = TorchGemm(opts.threads)
    for line in sys.stdin:
        request = json.loads(line)
        cmd = request.pop("cmd")
        if cmd == "quit":
            break
        try:
            reply = getattr(peer, cmd)(**request)
        except Exception as error:
            reply = {"error": f"{type(error).__name__}: {error}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
