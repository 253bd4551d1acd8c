#!/usr/bin/env python3
"""te_mlir's transformer-layer ops against PyTorch, eager and compiled, in
one process on the same inputs and threads.

    PYTHONPATH=build/python .venv/bin/python bench/layer_peers.py [--quick]

1. ops: forward + backward of LayerNorm, RMSNorm, GeLU, SwiGLU, RoPE and
   cross-entropy, as a torch user calls them: te_mlir.torch's functions
   (te's kernels through the te_mlir::* custom ops and autograd) against
   torch's own (F.layer_norm, F.rms_norm, F.gelu(tanh), silu * up, the
   rotate-half formula, F.cross_entropy) eager and under torch.compile.
   tokens x hidden 4096 x 4096 (vocab 32000 for cross-entropy) scaled to
   the machine: 2048 x 2048 and 1024 tokens x 32000 by default, 1024 x
   1024 with --quick; bf16 (what TE trains in) and f32.
2. norm_quantize: LayerNorm fused with the FP8 cast (te_mlir.ops.layer_norm
   with quantize="per_tensor", TE's fused kernel), its bytes (x read, the
   FP8 output and f32 statistics written) per second against a memcpy of
   the same bytes (numpy copy of a buffer of that size).
3. layer_step: one training step (forward, backward) of a TransformerLayer
   (hidden 1024, 16 heads, 4 KV groups, seq 1024, batch 1, RMSNorm,
   SwiGLU, RoPE, causal), te_mlir.torch's in bf16 against the same layer
   written in plain torch (F.rms_norm, F.linear, SDPA, ...) in bf16 and in
   f32 (torch's faster dtype on processors without AVX512-BF16 or AMX).

Every figure is the median over 3 rounds of a block of timed calls per
peer, after warmups and a pause (see timed() for why blocks). ratio = torch time / te time (above
1: te is faster). Writes bench/results/layer_ops.json (the record format of
run_benchmarks.py) and prints a table.
"""

import argparse
import datetime
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_benchmarks as rb  # noqa: E402

import te_mlir  # noqa: E402
import te_mlir.torch as te  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "f32": torch.float32}
TARGET_EAGER, TARGET_COMPILE = 1.0, 0.8
TARGET_MEMCPY, TARGET_LAYER = 0.7, 1.0
#: Longer than libomp's KMP_BLOCKTIME (200 ms), so that the other
#: runtime's threads have parked before a block starts.
PAUSE_S = 0.3


def timed(fns, runs, warmup=2, rounds=3):
    """{name: median seconds} of each fn in `fns`: `rounds` rounds, in
    each a block of `runs` timed calls per fn after `warmup` untimed ones,
    and a pause before each block. Blocks, not alternating calls: te's
    OpenMP threads (libomp) and torch's (libgomp) both spin a while after
    each parallel region, and on a machine with no spare cores calls that
    alternate would measure that contention (the subject of its own
    issue), not the kernels."""
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            time.sleep(PAUSE_S)
            for _ in range(warmup):
                fn()
            for _ in range(runs):
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def leaf(t):
    return t.detach().clone().requires_grad_()


def fwd_bwd(fn, inputs, grad):
    """A call that runs fn(*inputs) forward and backward."""
    def call():
        for t in inputs:
            t.grad = None
        fn(*inputs).backward(grad)
    return call


def torch_rope(x, freqs):
    s = x.shape[1]
    f = freqs[:s].transpose(0, 1)
    x1, x2 = x.chunk(2, dim=-1)
    rot = torch.cat((-x2, x1), dim=-1)
    return (x.float() * torch.cos(f) + rot.float() * torch.sin(f)).to(
        x.dtype)


def op_cases(tokens, hidden, vocab_tokens, dtype):
    """(name, te fn, torch fn, inputs, grad) per op."""
    g = torch.Generator().manual_seed(0)
    r = lambda *shape: torch.randn(*shape, generator=g).to(dtype)
    x, w, b = r(tokens, hidden), r(hidden), r(hidden)
    cases = [
        ("layer_norm", lambda x, w, b: te.norm(x, w, b, "layernorm", 1e-5),
         lambda x, w, b: F.layer_norm(x, (hidden,), w, b, 1e-5), (x, w, b)),
        ("rms_norm", lambda x, w: te.norm(x, w, None, "rmsnorm", 1e-5),
         lambda x, w: F.rms_norm(x, (hidden,), w, 1e-5), (x, w)),
        ("gelu", lambda x: te.activation(x, "gelu"),
         lambda x: F.gelu(x, approximate="tanh"), (x,)),
        ("swiglu", lambda x: te.activation(x, "swiglu"),
         lambda x: F.silu(x.chunk(2, -1)[0]) * x.chunk(2, -1)[1],
         (r(tokens, 2 * hidden),)),
    ]
    heads = max(1, hidden // 128)
    q = r(1, tokens, heads, hidden // heads)
    freqs = te.RotaryPositionEmbedding(hidden // heads)(tokens)
    cases.append(("rope", lambda q: te.rope(q, freqs, "bshd"),
                  lambda q: torch_rope(q, freqs), (q,)))
    logits = r(vocab_tokens, 32000)
    target = torch.randint(0, 32000, (vocab_tokens,), generator=g)
    cases.append(("cross_entropy",
                  lambda z: te.parallel_cross_entropy(z, target,
                                                      reduce_loss=True),
                  # TE's reduced loss has shape (1,).
                  lambda z: F.cross_entropy(z.float(), target).reshape(1),
                  (logits,)))
    return cases


def bench_ops(args):
    results, targets = [], {}
    for dname, dtype in DTYPES.items():
        for name, te_fn, torch_fn, inputs, in op_cases(
                args.tokens, args.hidden, args.vocab_tokens, dtype):
            inputs = [leaf(t) for t in inputs]
            out = te_fn(*inputs)
            grad = torch.randn_like(out)
            compiled = torch.compile(torch_fn)
            fns = {"te": fwd_bwd(te_fn, inputs, grad),
                   "torch_eager": fwd_bwd(torch_fn, inputs, grad),
                   "torch_compile": fwd_bwd(compiled, inputs, grad)}
            t = timed(fns, args.runs)
            row = {"op": name, "dtype": dname,
                   "shape": [list(i.shape) for i in inputs],
                   "te_ms": rb.sig(t["te"] * 1e3),
                   "torch_eager_ms": rb.sig(t["torch_eager"] * 1e3),
                   "torch_compile_ms": rb.sig(t["torch_compile"] * 1e3),
                   "vs_eager": rb.sig(t["torch_eager"] / t["te"]),
                   "vs_compile": rb.sig(t["torch_compile"] / t["te"])}
            results.append(row)
            print(f"{name:14s} {dname:5s} te {row['te_ms']:9.3f} ms  "
                  f"eager x{row['vs_eager']:.2f}  compile "
                  f"x{row['vs_compile']:.2f}", flush=True)
            targets[f"{name}_{dname}_vs_eager"] = rb.target(
                row["vs_eager"], ">=", TARGET_EAGER)
            targets[f"{name}_{dname}_vs_compile"] = rb.target(
                row["vs_compile"], ">=", TARGET_COMPILE)
    return results, targets


def bench_norm_quantize(args):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(args.tokens, args.hidden, generator=g).bfloat16()
    w, b = torch.ones(args.hidden).bfloat16(), torch.zeros(
        args.hidden).bfloat16()
    scale = np.array(1.0, np.float32)
    run = lambda: te_mlir.ops.layer_norm(x, w, b, quantize="per_tensor",
                                         scale=scale)
    moved = x.numel() * 2 + x.numel() + args.tokens * 8  # x, FP8 z, mu+rs
    src = np.empty(moved // 2, np.uint8)
    dst = np.empty_like(src)
    copy = lambda: np.copyto(dst, src)  # reads and writes moved/2 each
    t = timed({"te": run, "memcpy": copy}, args.runs)
    te_gbps, copy_gbps = moved / t["te"] / 1e9, moved / t["memcpy"] / 1e9
    ratio = te_gbps / copy_gbps
    print(f"norm+quantize  bf16  {te_gbps:.2f} GB/s, memcpy "
          f"{copy_gbps:.2f} GB/s: x{ratio:.2f}", flush=True)
    return ({"shape": [args.tokens, args.hidden], "bytes": moved,
             "te_gbps": rb.sig(te_gbps), "memcpy_gbps": rb.sig(copy_gbps),
             "vs_memcpy": rb.sig(ratio)},
            {"norm_quantize_vs_memcpy": rb.target(ratio, ">=",
                                                  TARGET_MEMCPY)})


class PlainLayer(torch.nn.Module):
    """The TransformerLayer (pre-norm, RMSNorm, GQA causal attention with
    RoPE, SwiGLU, no biases) in plain torch, with a te layer's weights."""

    def __init__(self, te_layer, heads, groups):
        super().__init__()
        s = {k: v.detach().clone() for k, v in te_layer.state_dict().items()
             if not k.endswith("_extra_state")}
        a = "self_attention.layernorm_qkv."
        P = torch.nn.Parameter
        self.n1 = P(s[a + "layer_norm_weight"])
        self.wqkv = P(torch.cat([s[a + "query_weight"], s[a + "key_weight"],
                                 s[a + "value_weight"]]))
        self.wo = P(s["self_attention.proj.weight"])
        self.n2 = P(s["layernorm_mlp.layer_norm_weight"])
        self.w1 = P(s["layernorm_mlp.fc1_weight"])
        self.w2 = P(s["layernorm_mlp.fc2_weight"])
        self.heads, self.groups = heads, groups

    def forward(self, x, freqs):
        b, s, hidden = x.shape
        d = hidden // self.heads
        h = F.rms_norm(x, (hidden,), self.n1, 1e-5)
        q, k, v = F.linear(h, self.wqkv).split(
            [hidden, self.groups * d, self.groups * d], -1)
        q = torch_rope(q.reshape(b, s, self.heads, d), freqs)
        k = torch_rope(k.reshape(b, s, self.groups, d), freqs)
        v = v.reshape(b, s, self.groups, d)
        o = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
            is_causal=True, enable_gqa=True).transpose(1, 2).flatten(2)
        x = x + F.linear(o, self.wo)
        h = F.rms_norm(x, (hidden,), self.n2, 1e-5)
        gate, up = F.linear(h, self.w1).chunk(2, -1)
        return x + F.linear(F.silu(gate) * up, self.w2)


def bench_layer_step(args):
    hidden, heads, groups, seq = args.layer_hidden, 16, 4, args.layer_seq
    layer = te.TransformerLayer(
        hidden, 4 * hidden, heads, num_gqa_groups=groups,
        hidden_dropout=0.0, attention_dropout=0.0, normalization="RMSNorm",
        activation="swiglu", bias=False, attn_input_format="bshd",
        params_dtype=torch.bfloat16)
    # torch's peers: the same layer in bf16, and in f32, torch's fastest
    # on processors whose bf16 matmul has no fast path (no AVX512-BF16 or
    # AMX): a torch user there would train in f32.
    plain = PlainLayer(layer, heads, groups)
    plain32 = PlainLayer(layer, heads, groups).float()
    freqs = te.RotaryPositionEmbedding(hidden // heads)(seq)
    x = torch.randn(1, seq, hidden).bfloat16().requires_grad_()
    x32 = x.detach().float().requires_grad_()
    grad = torch.randn_like(x)

    def step(model, inp, run):
        def call():
            inp.grad = None
            model.zero_grad(set_to_none=True)
            out = run()
            out.backward(grad.to(out.dtype))
        return call
    runs = {"te": (layer, x, lambda: layer(x, rotary_pos_emb=freqs)),
            "torch_bf16": (plain, x, lambda: plain(x, freqs)),
            "torch_f32": (plain32, x32, lambda: plain32(x32, freqs))}
    with torch.no_grad():
        a, b = runs["te"][2]().float(), runs["torch_bf16"][2]().float()
        rel = ((a - b).norm() / b.norm()).item()
    t = timed({name: step(*r) for name, r in runs.items()}, args.layer_runs,
              warmup=1, rounds=1)
    vs_bf16, vs_f32 = t["torch_bf16"] / t["te"], t["torch_f32"] / t["te"]
    print(f"layer step     bf16  te {t['te'] * 1e3:.1f} ms, torch bf16 "
          f"{t['torch_bf16'] * 1e3:.1f} ms (x{vs_bf16:.2f}), torch f32 "
          f"{t['torch_f32'] * 1e3:.1f} ms (x{vs_f32:.2f}); outputs "
          f"{rel:.1e} apart", flush=True)
    return ({"hidden": hidden, "heads": heads, "kv_groups": groups,
             "seq": seq, "batch": 1, "dtype": "bf16",
             "te_ms": rb.sig(t["te"] * 1e3),
             "torch_bf16_ms": rb.sig(t["torch_bf16"] * 1e3),
             "torch_f32_ms": rb.sig(t["torch_f32"] * 1e3),
             "vs_torch_bf16": rb.sig(vs_bf16),
             "vs_torch_f32": rb.sig(vs_f32),
             "outputs_relative_difference": rb.sig(rel)},
            {"layer_step_vs_torch_bf16": rb.target(vs_bf16, ">=",
                                                   TARGET_LAYER),
             "layer_step_vs_torch_f32": rb.target(
                 vs_f32, ">=", TARGET_LAYER,
                 "torch's best dtype where its bf16 GEMM is slow")})


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--full", action="store_true",
                        help="the issue's sizes: 4096 x 4096, 4096 tokens "
                        "x 32000")
    parser.add_argument("--out", default=str(rb.DEFAULT_OUT))
    args = parser.parse_args(argv)
    args.tokens = args.hidden = 1024 if args.quick else (
        4096 if args.full else 2048)
    args.vocab_tokens = args.tokens // 2 if not args.full else 4096
    args.runs = 3 if args.quick else 7
    args.layer_hidden, args.layer_seq = (256, 256) if args.quick else \
        (1024, 1024)
    args.layer_runs = 2 if args.quick else 3
    threads = len(os.sched_getaffinity(0))
    torch.set_num_threads(threads)
    machine = rb.machine_info()
    print(f"{machine['cpu']}, {threads} threads, torch {torch.__version__}")
    ops, op_targets = bench_ops(args)
    nq, nq_target = bench_norm_quantize(args)
    layer, layer_target = bench_layer_step(args)
    targets = {**op_targets, **nq_target, **layer_target}
    date = datetime.datetime.now(datetime.timezone.utc).isoformat(
        timespec="seconds")
    rec = rb.record(
        "layer_ops",
        "transformer-layer ops (forward + backward) against torch eager "
        "and torch.compile, norm + FP8 cast against memcpy, and a "
        "TransformerLayer training step against plain torch",
        {"tokens": args.tokens, "hidden": args.hidden,
         "vocab_tokens": args.vocab_tokens, "vocab": 32000,
         "runs": args.runs, "threads": threads, "torch": torch.__version__,
         "quick": args.quick, "method": __doc__.split("\n\n", 2)[2]},
        {"ops": ops, "norm_quantize": nq, "layer_step": layer}, targets,
        machine, rb.te_mlir_commit(), date)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "layer_ops.json").write_text(json.dumps(rec, indent=2) + "\n")
    met = sum(t["met"] for t in targets.values())
    print(f"{met} of {len(targets)} targets met; wrote "
          f"{out / 'layer_ops.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
