#!/usr/bin/env python3
"""PyTorch or JAX attention on the CPU, as a peer of te-mlir's, in its own
process.

run_benchmarks.py starts one process per peer and thread count:

    attention_peers.py torch --threads N
    attention_peers.py jax --threads N

(the thread count is fixed before the library is imported: XLA reads its
flags once) and talks to it over stdin/stdout, one JSON object per line
each way:

    {"cmd": "info"}
        -> the library, its version and its thread settings.
    {"cmd": "load", "inputs": {"q": q.npy, "k": ..., "v": ..., "do": ...},
     "dtype", "mask"}
        -> {}: the arrays te-run gets as --input (bshd; bf16 as raw uint16
           bits, f32 as f32) become the peer's tensors of that dtype; the
           forward and backward of this configuration are prepared
           (compiled, for JAX) and run once, untimed.
    {"cmd": "time", "pass": "forward" | "backward", "runs"}
        -> {"times_s": [...]}: `runs` timed calls on the loaded tensors.
           forward: O = attention(q, k, v). backward: dQ, dK, dV from dO
           with the forward's saved state (torch: autograd.grad on a graph
           kept with retain_graph; JAX: the jitted function jax.vjp
           returns), so the forward is not timed again.
    {"cmd": "output", "out": o.npy}
        -> {}: the forward's O saved as f32, to compare with te-run's.
    {"cmd": "quit"}

The peers are what a user would pick instead of te-mlir on a CPU:
torch.nn.functional.scaled_dot_product_attention (PyTorch's CPU flash
attention kernels) and jax.nn.dot_product_attention (XLA on the CPU), with
the default scale 1/sqrt(d) and is_causal for the causal mask (top-left
diagonal, s_q = s_kv here).
"""
import argparse
import json
import os
import sys
import time

import ml_dtypes
import numpy as np


def load_array(path, dtype):
    array = np.load(path)
    if dtype == "bf16" and array.dtype == np.uint16:
        array = array.view(ml_dtypes.bfloat16)
    return array


class TorchPeer:
    def __init__(self, threads):
        import torch
        import torch.nn.functional as F
        self.torch, self.F = torch, F
        torch.set_num_threads(threads)

    def info(self):
        t = self.torch
        return {"library": "torch", "version": t.__version__,
                "threads": t.get_num_threads(),
                "parallel_info": t.__config__.parallel_info()}

    def load(self, inputs, dtype, mask):
        t = self.torch
        kind = {"f32": t.float32, "bf16": t.bfloat16}[dtype]

        def tensor(name):
            array = load_array(inputs[name], dtype)
            if dtype == "bf16":
                x = t.from_numpy(array.view(np.int16).copy()).view(t.bfloat16)
            else:
                x = t.from_numpy(np.ascontiguousarray(array, np.float32))
            # bshd -> the b h s d view SDPA takes, without a copy.
            return x.to(kind).transpose(1, 2)

        self.q, self.k, self.v = (tensor(n).requires_grad_() for n in "qkv")
        self.do = tensor("do")
        self.causal = mask == "causal"
        self.forward()
        self.out = self.F.scaled_dot_product_attention(
            self.q, self.k, self.v, is_causal=self.causal)
        self.backward()

    def forward(self):
        with self.torch.no_grad():
            return self.F.scaled_dot_product_attention(
                self.q, self.k, self.v, is_causal=self.causal)

    def backward(self):
        return self.torch.autograd.grad(self.out, (self.q, self.k, self.v),
                                        self.do, retain_graph=True)

    def output(self):
        return self.forward().transpose(1, 2).float().numpy()


class JaxPeer:
    def __init__(self, threads):
        import jax
        import jax.numpy as jnp
        self.jax, self.jnp = jax, jnp
        self.threads = threads

    def info(self):
        return {"library": "jax", "version": self.jax.__version__,
                "jaxlib": __import__("jaxlib").__version__,
                "backend": self.jax.default_backend(),
                "threads": self.threads,
                "XLA_FLAGS": os.environ.get("XLA_FLAGS", "")}

    def load(self, inputs, dtype, mask):
        jax, jnp = self.jax, self.jnp
        kind = {"f32": jnp.float32, "bf16": jnp.bfloat16}[dtype]
        q, k, v, do = (jnp.asarray(load_array(inputs[n], dtype), kind)
                       for n in ("q", "k", "v", "do"))
        causal = mask == "causal"

        def attention(q, k, v):
            # bshd is jax's BTNH layout.
            return jax.nn.dot_product_attention(q, k, v, is_causal=causal,
                                                implementation="xla")

        self.fwd = jax.jit(attention)
        self.args = (q, k, v)
        out, vjp = jax.vjp(attention, q, k, v)
        self.bwd = jax.jit(vjp)
        self.do = do
        self.forward()
        self.backward()

    def forward(self):
        return self.fwd(*self.args).block_until_ready()

    def backward(self):
        return self.jax.block_until_ready(self.bwd(self.do))

    def output(self):
        return np.asarray(self.forward(), np.float32)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("peer", choices=("torch", "jax"))
    parser.add_argument("--threads", type=int, required=True)
    opts = parser.parse_args()
    if opts.peer == "jax":
        # XLA's CPU client reads these once, at its creation.
        flags = os.environ.get("XLA_FLAGS", "")
        if opts.threads == 1:
            flags += (" --xla_cpu_multi_thread_eigen=false"
                      " intra_op_parallelism_threads=1")
        os.environ["XLA_FLAGS"] = flags.strip()
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        peer = JaxPeer(opts.threads)
    else:
        peer = TorchPeer(opts.threads)

    for line in sys.stdin:
        request = json.loads(line)
        cmd = request.get("cmd")
        try:
            if cmd == "quit":
                break
            if cmd == "info":
                reply = peer.info()
            elif cmd == "load":
                peer.load(request["inputs"], request["dtype"],
                          request["mask"])
                reply = {}
            elif cmd == "time":
                call = {"forward": peer.forward,
                        "backward": peer.backward}[request["pass"]]
                times = []
                for _ in range(request["runs"]):
                    start = time.perf_counter()
                    call()
                    times.append(time.perf_counter() - start)
                reply = {"times_s": times}
            elif cmd == "output":
                np.save(request["out"], peer.output())
                reply = {}
            else:
                reply = {"error": f"unknown command {cmd!r}"}
        except Exception as error:  # reported to the driver, not fatal here
            reply = {"error": f"{type(error).__name__}: {error}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
