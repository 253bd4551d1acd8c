"""PyTorch on the same GPU work as bench/gpu/*.mlir: the peer te-gpu-check's
timings are read against.

    python3 bench/gpu/torch_peers.py [--json FILE] [--no-compile] [--only TEXT]

Runs where a CUDA GPU and PyTorch are (scripts/gpu-check.sh calls it after
te-gpu-check, so both are measured in one run on one GPU). Each peer does
what the te entry of the same name does, on tensors of the same shapes and
types, and is timed the way te-gpu-check times a launch: CUDA events around
`repeats` calls, the median over `rounds` of the mean per call, after
warm-up calls. GB/s counts the same
bytes te-gpu-check counts (every input and output once), so the two can be
divided. Two flavours: eager PyTorch, and torch.compile of the same
function (what a user who wants fused kernels would pick; TE's own kernels
are not installed there). The GEMM peers are torch._scaled_mm (cuBLASLt
FP8) and a bf16 matmul of the same shape; the attention peer is
scaled_dot_product_attention.
"""

import argparse
import json
import sys
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-compile", action="store_true",
                        help="eager PyTorch only")
    parser.add_argument("--only", metavar="TEXT",
                        help="only the cases whose name contains TEXT")
    args = parser.parse_args()
    try:
        import torch
    except ImportError as error:
        print(f"SKIPPED: PyTorch is not importable ({error})")
        return 0
    if not torch.cuda.is_available():
        print("SKIPPED: PyTorch sees no CUDA device")
        return 0
    dev = torch.device("cuda")
    e4m3, e5m2 = torch.float8_e4m3fn, torch.float8_e5m2
    fp8_max = torch.finfo(e4m3).max
    gen = torch.Generator(device=dev).manual_seed(1)

    def normal(shape, dtype):
        return torch.randn(shape, generator=gen, device=dev).to(dtype)

    def nbytes(*tensors):
        return sum(t.numel() * t.element_size() for t in tensors)

    def amax(x):
        return x.abs().amax().float()

    def quantize_rowwise(x, s):
        a = x.abs().amax().float()
        d = (x.float() * s).clamp(-fp8_max, fp8_max).to(e4m3)
        return d, s.reciprocal(), a

    def quantize_both(x, s):
        d, si, a = quantize_rowwise(x, s)
        return d, d.t().contiguous(), si, a

    def dequantize(d, si):
        return (d.float() * si).to(torch.bfloat16)

    def mxfp8_rowwise(x):
        # E8M0 scale per 1x32 block: 2^(floor(log2(amax)) - 8) for E4M3,
        # as TE's MXFP8 recipe computes it.
        rows, cols = x.shape
        blocks = x.float().reshape(rows, cols // 32, 32)
        block_amax = blocks.abs().amax(dim=-1, keepdim=True)
        exponent = torch.floor(torch.log2(block_amax.clamp_min(2.0**-127))) - 8
        d = (blocks * torch.exp2(-exponent)).clamp(-fp8_max, fp8_max).to(e4m3)
        return d.reshape(rows, cols), (exponent + 127).to(torch.uint8)

    def mxfp8_both(x):
        d, s = mxfp8_rowwise(x)
        dc, sc = mxfp8_rowwise(x.t().contiguous())
        return d, s, dc.t().contiguous(), sc

    x = normal((8192, 4096), torch.bfloat16)
    s = torch.tensor(0.5, device=dev)
    d8 = normal((8192, 4096), e4m3)
    si = torch.tensor(2.0, device=dev)
    a8 = normal((1024, 1024), e4m3)
    b8 = normal((1024, 1024), e4m3)
    a16, b16 = a8.to(torch.bfloat16), b8.to(torch.bfloat16)
    one = torch.tensor(1.0, device=dev)
    gemm_bytes = nbytes(a8, b8, one, one) + 1024 * 1024 * 2

    cases = [
        ("amax", amax, (x,), nbytes(x) + 4),
        ("quantize_rowwise", quantize_rowwise, (x, s),
         nbytes(x, s) + x.numel() + 8),
        ("quantize_both", quantize_both, (x, s),
         nbytes(x, s) + 2 * x.numel() + 8),
        ("dequantize", dequantize, (d8, si), nbytes(d8, si) + 2 * d8.numel()),
        ("mxfp8_both", mxfp8_both, (x,),
         nbytes(x) + 2 * x.numel() + 2 * x.numel() // 32),
        ("gemm_tn_bf16 (torch._scaled_mm, cuBLASLt FP8)",
         lambda a, b: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one,
                                       out_dtype=torch.bfloat16),
         (a8, b8), gemm_bytes),
        ("gemm_tn_bf16 (bf16 matmul)", lambda a, b: a @ b.t(), (a16, b16),
         gemm_bytes),
    ]
    # Attention: PyTorch's scaled_dot_product_attention (its flash kernel)
    # on [b, h, s, d] tensors, K and V already expanded to the query heads
    # (GQA without a copy is not every backend's), against
    # bench/gpu/attention.mlir's entries of the same shapes.
    sdpa = torch.nn.functional.scaled_dot_product_attention
    q = normal((2, 16, 1024, 64), torch.bfloat16)
    k = normal((2, 16, 1024, 64), torch.bfloat16)
    v = normal((2, 16, 1024, 64), torch.bfloat16)
    q2 = normal((1, 8, 1000, 128), torch.float16)
    k2 = normal((1, 8, 777, 128), torch.float16)
    v2 = normal((1, 8, 777, 128), torch.float16)
    cases += [
        ("gqa_causal_bf16 (torch SDPA)",
         lambda q, k, v: sdpa(q, k, v, is_causal=True), (q, k, v),
         # te's entry reads K and V of 4 heads and writes the LSE too.
         2 * nbytes(q) + nbytes(k, v) // 4 + 2 * 16 * 1024 * 4),
        ("bhsd_f16_d128 (torch SDPA)", lambda q, k, v: sdpa(q, k, v),
         (q2, k2, v2), nbytes(q2, k2, v2, q2) + 8 * 1000 * 4),
    ]
    # Forward and backward, as bench/gpu/attention_backward.mlir's entries
    # run them: SDPA, then the gradients of Q, K and V for a given dO.
    def sdpa_step(causal):
        def step(q, k, v, d_o):
            q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
            o = sdpa(q, k, v, is_causal=causal)
            return torch.autograd.grad(o, (q, k, v), d_o)
        return step

    d_o = normal((2, 16, 1024, 64), torch.bfloat16)
    d_o2 = normal((1, 8, 1000, 128), torch.float16)
    cases += [
        ("gqa_causal_bf16_backward (torch SDPA)", sdpa_step(True),
         (q, k, v, d_o), 4 * nbytes(q) + 2 * nbytes(k, v) // 4),
        ("bhsd_f16_d128_backward (torch SDPA)", sdpa_step(False),
         (q2, k2, v2, d_o2), 2 * nbytes(q2, k2, v2, d_o2)),
    ]
    # The transformer layer's row ops (bench/gpu/norms.mlir,
    # activations.mlir, cross_entropy.mlir, rope.mlir): torch's own
    # functions, forward and, for the *_backward-named te entries (d...),
    # the gradients of the same inputs for a given output gradient.
    F = torch.nn.functional
    h = normal((8192, 4096), torch.bfloat16)
    gamma = normal((4096,), torch.bfloat16)
    beta = normal((4096,), torch.bfloat16)
    dz = normal((8192, 4096), torch.bfloat16)
    wide = normal((8192, 8192), torch.bfloat16)

    def grads(fn, inputs, grad):
        inputs = [t.detach().requires_grad_() for t in inputs]
        return torch.autograd.grad(fn(*inputs), inputs, grad)

    def swiglu(x):
        a, g = x.chunk(2, dim=-1)
        return F.silu(a) * g

    logits = normal((4096, 32000), torch.bfloat16)
    labels = torch.randint(0, 32000, (4096,), generator=gen, device=dev)
    rope_x = normal((2048, 2, 32, 128), torch.bfloat16)
    angles = torch.rand((2048, 1, 1, 128), generator=gen, device=dev) * 100

    def rope(x, freqs):
        # TE's unfused apply_rotary_pos_emb: x * cos + rotate_half(x) * sin.
        x1, x2 = x.float().chunk(2, dim=-1)
        rotated = torch.cat((-x2, x1), dim=-1)
        return (x.float() * freqs.cos() + rotated * freqs.sin()).to(x.dtype)

    hb = nbytes(h)
    cases += [
        ("layernorm", lambda x, g, b: F.layer_norm(x, (4096,), g, b, 1e-5),
         (h, gamma, beta), 2 * hb + 2 * 8192 * 4),
        ("rmsnorm", lambda x, g: F.rms_norm(x, (4096,), g + 1, 1e-5),
         (h, gamma), 2 * hb + 8192 * 4),
        ("dlayernorm",
         lambda x, g, b, d: grads(
             lambda x, g, b: F.layer_norm(x, (4096,), g, b, 1e-5),
             (x, g, b), d),
         (h, gamma, beta, dz), 3 * hb + 4 * 8192 * 4),
        ("drmsnorm",
         lambda x, g, d: grads(
             lambda x, g: F.rms_norm(x, (4096,), g + 1, 1e-5), (x, g), d),
         (h, gamma, dz), 3 * hb + 8192 * 4),
        ("gelu", lambda x: F.gelu(x, approximate="tanh"), (h,), 2 * hb),
        ("swiglu", swiglu, (wide,), nbytes(wide) + hb),
        ("dgelu",
         lambda x, d: grads(lambda x: F.gelu(x, approximate="tanh"), (x,), d),
         (h, dz), 3 * hb),
        ("dswiglu", lambda x, d: grads(swiglu, (x,), d), (wide, dz),
         2 * nbytes(wide) + hb),
        ("cross_entropy",
         lambda x, y: grads(
             lambda x: F.cross_entropy(x.float(), y, label_smoothing=0.1),
             (x,), torch.ones((), device=dev)),
         # te's entry writes the f32 gradient, as TE's kernel does.
         (logits, labels), 3 * nbytes(logits) + nbytes(labels) + 4),
        ("rope_sbhd", rope, (rope_x, angles),
         2 * nbytes(rope_x) + nbytes(angles)),
    ]
    # The backward's five products against the forward's two: 3.5 times
    # the forward's operations for the whole step.
    flops = {"gqa_causal_bf16": 4 * 2 * 16 * 1024 * 1024 * 64 / 2,
             "bhsd_f16_d128": 4 * 8 * 1000 * 777 * 128,
             "gqa_causal_bf16_backward": 3.5 * 4 * 2 * 16 * 1024 * 1024 * 64 / 2,
             "bhsd_f16_d128_backward": 3.5 * 4 * 8 * 1000 * 777 * 128,
             "gemm_tn_bf16": 2 * 1024**3}

    def timed(fn, inputs):
        # As te-gpu-check times: warm-up calls (the first compiles), then
        # the median over rounds of the mean of `repeats` calls.
        for _ in range(3 if args.rounds > 1 else 1):
            fn(*inputs)
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        per_call = []
        for _ in range(args.rounds):
            start.record()
            for _ in range(args.repeats):
                fn(*inputs)
            end.record()
            end.synchronize()
            per_call.append(start.elapsed_time(end) / args.repeats)
        return sorted(per_call)[len(per_call) // 2]

    results = []
    for name, fn, inputs, moved in cases:
        if args.only and args.only not in name:
            continue
        flavours = [("eager", fn)]
        if not args.no_compile and "(" not in name:
            flavours.append(("compiled", torch.compile(fn)))
        for flavour, body in flavours:
            row = {"entry": name, "flavour": flavour}
            try:
                began = time.monotonic()
                ms = timed(body, inputs)
                row.update(ms=round(ms, 4), gb_per_s=round(moved / (ms * 1e6), 1),
                           wall_s=round(time.monotonic() - began, 1))
                if name.split(" ")[0] in flops:
                    row["tflop_per_s"] = round(
                        flops[name.split(" ")[0]] / (ms * 1e9), 1)
            except Exception as error:  # a peer that fails is reported, not fatal
                row["error"] = f"{type(error).__name__}: {error}"[:300]
            print(json.dumps(row), flush=True)
            results.append(row)
    report = {"torch": torch.__version__,
              "device": torch.cuda.get_device_name(),
              "repeats": args.repeats, "rounds": args.rounds,
              "results": results}
    if args.json:
        with open(args.json, "w") as out:
            json.dump(report, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
