#!/usr/bin/env python3
"""te-plugin-check: the conformance kit for te-mlir plugins.

    te-plugin-check PLUGIN [--filter REGEX] [--extra FILE]... [--te-run PATH]
                    [--keep DIR] [--backend DEVICE --runtime-plugin LIB]
    te-plugin-check --list [--filter REGEX] [--extra FILE]...

Runs a corpus of te op configurations through PLUGIN (a path, or a name
found like NVTE_PLUGIN's entries) and through the CPU reference, and prints
one line per configuration:

    passed   the plugin lowers it; every output is within tolerance of the
             reference (max abs / rel error shown)
    failed   the plugin lowers it, and an output is outside the tolerance,
             or the plugin's lowering did not compile or run (the error shown)
    declined the plugin does not take it (its reason shown); the native
             backend would lower it
    skipped  the plugin takes it, but the reference pipeline has no
             decomposition for it (te-run's reason shown)

The corpus covers every compute op: te.attention and te.attention_backward
(layouts, types, masks, windows, GQA, bias and softmax kinds, dropout),
te.scaled_matmul, te.grouped_matmul, te.amax, te.compute_scale,
te.update_delayed_scaling, te.quantize in every scaling mode and usage,
te.dequantize, te.norm (with its quantized outputs) and te.norm_backward
(LayerNorm and RMSNorm), te.activation and te.activation_backward (every
kind, dbias, quantized outputs), te.rope and te.rope_backward,
te.qkv_rope and te.qkv_rope_backward, and te.cross_entropy and
te.cross_entropy_backward.
--list prints it (no plugin needed).

--extra FILE adds a vendor's own configurations: MLIR programs separated by
lines `// -----` (as te-opt --split-input-file splits), each with one line
`// name: NAME` naming it. NAME must be new (not a corpus name, not used
twice); each program must parse and verify in te-opt and contain a te op;
its te ops get random inputs as te-run --random-inputs makes them. A file
that breaks a rule is an error (exit 2) naming the file, the entry and the
line. For example:

    // name: vendor attention bshd bf16 causal s=512
    func.func @main(%q: tensor<1x512x8x64xbf16>, ...) -> ... {
      ...
    }
    // -----
    // name: vendor amax f32 1x4096
    func.func @main(%x: tensor<1x4096xf32>) -> tensor<f32> { ... }

The comparison is te-run --check: the program compiled with the plugin
(NVTE_PLUGIN=PLUGIN, NVTE_PLUGIN_STRICT=1, so a fallback is a failure) and
with te-lower-cpu-reference (no plugins: te.attention and
te.attention_backward as dense decompositions written independently of the
native kernels, the other ops through their bit-exact host lowering), on the
same random inputs. The tolerance per output type is te-run's:
abs = 1e-5 * max(1, max |ref|) and rel = 0 (f32), 2^-7 (bf16), 2^-10 (f16);
FP8 and integer outputs exact.

A plugin that brings its own device (a target and a runtime plugin, see
docs/PluginAPI.md) is checked on that device with --backend DEVICE and
--runtime-plugin LIB: every configuration is compiled for the plugin's
target and run on its device, whoever lowers each op (the plugin's
providers, or the target's own pipeline), and compared with the CPU
reference; so there is nothing to decline, and a configuration the target
cannot compile fails. The detail names who lowered the op.

Exit status: 0 when nothing failed, 1 when a configuration failed, 2 for
usage errors (unknown plugin, te-run missing, a bad --extra file). Needs
only Python 3, te-run (looked up next to this script, then on PATH) and the
te-opt beside it.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

# ---------------------------------------------------------------------------
# The corpus
# ---------------------------------------------------------------------------


def tensor(shape, elem):
    return "tensor<" + "".join(f"{n}x" for n in shape) + elem + ">"


def qkv_shape(layout, b, s, h, d):
    return {"bshd": (b, s, h, d), "sbhd": (s, b, h, d),
            "bhsd": (b, h, s, d)}[layout]


def attention(name, layout="bshd", elem="bf16", mask="no_mask", b=2, s_q=48,
              s_kv=None, h_q=4, h_kv=None, d_qk=32, d_v=None, window=None,
              softmax=None, bias=None, lse=False, scale=None, dropout=None,
              bottom_right=None, backward=False):
    """One te.attention program, or with `backward` one te.attention_backward
    program of the same configuration; returns (name, text)."""
    s_kv = s_q if s_kv is None else s_kv
    h_kv = h_q if h_kv is None else h_kv
    d_v = d_qk if d_v is None else d_v
    o_type = tensor(qkv_shape(layout, b, s_q, h_q, d_v), elem)
    lse_type = tensor((b, h_q, s_q, 1), "f32")
    args = [("q", tensor(qkv_shape(layout, b, s_q, h_q, d_qk), elem)),
            ("k", tensor(qkv_shape(layout, b, s_kv, h_kv, d_qk), elem)),
            ("v", tensor(qkv_shape(layout, b, s_kv, h_kv, d_v), elem))]
    if backward:
        args += [("o", o_type), ("d_o", o_type), ("lse", lse_type)]
    results = [t for _, t in args[:3]] if backward else [o_type]
    config = [f"layout {layout}", f"mask {mask}"]
    if window:
        config.append(f"window [{window[0]}, {window[1]}]")
    if bottom_right is not None:
        config.append(f"bottom_right_diagonal {str(bottom_right).lower()}")
    if scale is not None:
        config.append(f"scale {scale}")
    if bias:
        config.append(f"bias {bias}")
    if softmax:
        config.append(f"softmax {softmax}")
    if dropout:
        config.append(f"dropout {dropout}")
    if mask.startswith("padding"):
        args += [("lq", tensor((b,), "i32")), ("lkv", tensor((b,), "i32"))]
        config.append("seqlens(%lq, %lkv)")
    if mask == "arbitrary":
        args.append(("m", tensor((1, 1, s_q, s_kv), "i1")))
        config.append("mask_tensor(%m)")
    if bias in ("pre_scale", "post_scale"):
        bias_type = tensor((1, h_q, s_q, s_kv), "f32")
        args.append(("bias", bias_type))
        config.append("bias_tensor(%bias)")
        if backward:
            results.append(bias_type)
    if bias == "alibi":
        args.append(("slopes", tensor((h_q,), "f32")))
        config.append("alibi_slopes(%slopes)")
    if dropout:
        args.append(("rng", tensor((2,), "i64")))
        config.append("rng_state(%rng)")
    if softmax == "learnable":
        offset_type = tensor((1, h_q, 1, 1), "f32")
        args.append(("offset", offset_type))
        config.append("softmax_offset(%offset)")
        if backward:
            results.append(offset_type)
    if lse:
        config.append("{return_lse}")
        results.append(lse_type)
    op = "te.attention_backward" if backward else "te.attention"
    operands = ", ".join(f"%{n}" for n, _ in args[:6 if backward else 3])
    signature = ", ".join(f"%{n}: {t}" for n, t in args)
    values = ", ".join(f"%r{i}" for i in range(len(results)))
    result_list = ", ".join(results)
    text = f"""func.func @main({signature}) -> ({result_list}) {{
  {values} = {op} {operands} {" ".join(config)}
      : ({", ".join(t for _, t in args)}) -> ({result_list})
  return {values} : {result_list}
}}
"""
    return name, text


def attention_backward(name, **config):
    return attention(name, backward=True, **config)


def gemm_scale_type(mode, stored, k_dim):
    """The scale tensor type of an FP8 operand stored as `stored` whose
    dimension `k_dim` is K, in `mode` (te.scaled_matmul's rule)."""
    if mode == "per_tensor":
        return "tensor<f32>"
    shape = list(stored)
    if mode == "mxfp8_1x32":
        shape[k_dim] //= 32
        return tensor(tuple(shape), "f8E8M0FNU")
    if mode == "block_1x128":
        shape[k_dim] = -(-shape[k_dim] // 128)
    else:
        shape = [-(-size // 128) for size in shape]
    return tensor(tuple(shape), "f32")


def scaled_matmul(name, out="bf16", m=64, n=48, k=96, fp8="f8E4M3FN",
                  b_type=None, modes=("per_tensor", "per_tensor"),
                  transpose_a=False, transpose_b=True, bias=None, gelu=False,
                  pre_gelu=None, dgelu=None, accumulate=False,
                  bias_grad=None):
    """te.scaled_matmul with operands of type `fp8` (and `b_type`): FP8
    with scales in `modes`, or f32, f16 or bf16 without."""
    b_type = b_type or fp8
    a_shape = (k, m) if transpose_a else (m, k)
    b_shape = (n, k) if transpose_b else (k, n)
    args = [("a", tensor(a_shape, fp8)), ("b", tensor(b_shape, b_type))]
    operands = "%a, %b"
    if fp8.startswith("f8"):
        args += [("sa", gemm_scale_type(modes[0], a_shape,
                                        0 if transpose_a else 1)),
                 ("sb", gemm_scale_type(modes[1], b_shape,
                                        1 if transpose_b else 0))]
        operands += " scales(%sa, %sb)"
        if modes != ("per_tensor", "per_tensor"):
            operands += f" scaling {modes[0]}, {modes[1]}"
    if bias:
        args.append(("bias", tensor((n,), bias)))
        operands += " bias(%bias)"
    if dgelu:
        args.append(("pre", tensor((m, n), dgelu)))
        operands += " dgelu(%pre)"
    if accumulate:
        args.append(("c", tensor((m, n), out)))
        operands += " accumulate(%c)"
    fp8_out = out.startswith("f8")
    if fp8_out:
        args.append(("so", "tensor<f32>"))
        operands += " out_scale(%so)"
    flags = "".join(f" {flag}" for flag, on in (
        ("transpose_a", transpose_a), ("transpose_b", transpose_b),
        ("gelu", gelu), ("pre_gelu", pre_gelu), ("bias_grad", bias_grad))
        if on)
    results = [tensor((m, n), out)] + (["tensor<f32>"] if fp8_out else [])
    if pre_gelu:
        results.append(tensor((m, n), pre_gelu))
    if bias_grad:
        results.append(tensor((n,) if dgelu else (m,), bias_grad))
    values = ", ".join(f"%r{i}" for i in range(len(results)))
    text = f"""func.func @main({", ".join(f"%{n}: {t}" for n, t in args)}) -> ({", ".join(results)}) {{
  {values} = te.scaled_matmul {operands}{flags}
      : {", ".join(t for _, t in args)} -> {", ".join(results)}
  return {values} : {", ".join(results)}
}}
"""
    return name, text


def grouped_matmul(name, out="bf16", tokens=80, groups=4, n=48, k=96,
                   elem="f8E4M3FN", modes=("per_tensor", "per_tensor"),
                   transpose_b=True, bias=None, accumulate=False):
    """te.grouped_matmul of `groups` groups over `tokens` rows (random
    splits summing to them, as te-run --random-inputs draws them)."""
    b_shape = (groups, n, k) if transpose_b else (groups, k, n)
    args = [("a", tensor((tokens, k), elem)), ("b", tensor(b_shape, elem)),
            ("m", tensor((groups,), "i64"))]
    operands = "%a, %b splits(%m)"
    if elem.startswith("f8"):
        if modes[0] == "per_tensor":
            scale_types = [tensor((groups,), "f32")] * 2
        else:
            b_scale = gemm_scale_type(modes[1], b_shape[1:],
                                      1 if transpose_b else 0)
            scale_types = [gemm_scale_type(modes[0], (tokens, k), 1),
                           b_scale.replace("tensor<", f"tensor<{groups}x")]
        args += [("sa", scale_types[0]), ("sb", scale_types[1])]
        operands += " scales(%sa, %sb)"
        if modes != ("per_tensor", "per_tensor"):
            operands += f" scaling {modes[0]}, {modes[1]}"
    if bias:
        args.append(("bias", tensor((groups, n), bias)))
        operands += " bias(%bias)"
    if accumulate:
        args.append(("c", tensor((tokens, n), out)))
        operands += " accumulate(%c)"
    if transpose_b:
        operands += " transpose_b"
    result = tensor((tokens, n), out)
    body = (f"  %r = te.grouped_matmul {operands}\n"
            f"      : {', '.join(t for _, t in args)} -> {result}\n"
            f"  return %r : {result}")
    return simple(name, body, args, [result])


def simple(name, body, args, results):
    text = f"""func.func @main({", ".join(f"%{n}: {t}" for n, t in args)}) -> ({", ".join(results)}) {{
{body}
}}
"""
    return name, text


def op_case(name, op, operands, args, results):
    """One te op whose assembly ends in `: operand types -> result types`
    (amax, compute_scale, update_delayed_scaling, quantize, dequantize)."""
    values = ", ".join(f"%r{i}" for i in range(len(results)))
    body = (f"  {values} = te.{op} {operands}\n"
            f"      : {', '.join(t for _, t in args)} -> {', '.join(results)}\n"
            f"  return {values} : {', '.join(results)}")
    return simple(name, body, args, results)


def corpus():
    cases = []
    # te.attention: every layout and wide type, every mask kind, and one
    # option at a time on top of a causal bf16 bshd base.
    for layout in ("bshd", "sbhd", "bhsd"):
        for elem in ("f32", "bf16", "f16"):
            cases.append(attention(f"attention {layout} {elem} no_mask",
                                   layout=layout, elem=elem))
    for mask in ("causal", "causal_bottom_right", "padding", "padding_causal",
                 "padding_causal_bottom_right", "arbitrary"):
        cases.append(attention(f"attention bshd bf16 {mask}", mask=mask))
    cases += [
        attention("attention bshd bf16 causal s_q<s_kv", mask="causal",
                  s_q=32, s_kv=80),
        attention("attention bshd bf16 causal_bottom_right s_q<s_kv",
                  mask="causal_bottom_right", s_q=32, s_kv=80),
        attention("attention bshd bf16 causal_bottom_right s_q>s_kv",
                  mask="causal_bottom_right", s_q=80, s_kv=32),
        attention("attention bshd bf16 causal gqa 8:2", mask="causal",
                  h_q=8, h_kv=2),
        attention("attention bshd bf16 causal mqa 4:1", mask="causal",
                  h_q=4, h_kv=1),
        attention("attention bshd bf16 causal d_qk=64 d_v=32", mask="causal",
                  d_qk=64, d_v=32),
        attention("attention bshd bf16 causal d=128", mask="causal", d_qk=128,
                  s_q=64),
        attention("attention bshd bf16 causal scale 0.3", mask="causal",
                  scale=0.3),
        attention("attention bshd bf16 causal window [16, 0]", mask="causal",
                  window=(16, 0)),
        attention("attention bshd bf16 no_mask window [8, 8]", window=(8, 8)),
        # The diagonal windows and ALiBi align to: bottom-right by default
        # for no_mask, padding and arbitrary, top-left on request.
        attention("attention bshd bf16 no_mask window [8, 4] s_q<s_kv",
                  window=(8, 4), s_q=32, s_kv=80),
        attention("attention bshd bf16 no_mask window [8, 4] s_q<s_kv "
                  "bottom_right_diagonal false", window=(8, 4), s_q=32,
                  s_kv=80, bottom_right=False),
        attention("attention bshd bf16 padding window [4, 4]",
                  mask="padding", window=(4, 4)),
        attention("attention bshd bf16 arbitrary window [6, 2] s_q>s_kv "
                  "bottom_right_diagonal false", mask="arbitrary",
                  window=(6, 2), s_q=64, s_kv=40, bottom_right=False),
        attention("attention bshd bf16 no_mask bias alibi s_q<s_kv",
                  bias="alibi", s_q=32, s_kv=80),
        attention("attention bshd bf16 no_mask bias alibi s_q<s_kv "
                  "bottom_right_diagonal false", bias="alibi", s_q=32,
                  s_kv=80, bottom_right=False),
        attention("attention bshd bf16 causal softmax off_by_one",
                  mask="causal", softmax="off_by_one"),
        attention("attention bshd bf16 causal softmax learnable",
                  mask="causal", softmax="learnable"),
        attention("attention bshd bf16 causal bias post_scale",
                  mask="causal", bias="post_scale"),
        attention("attention bshd bf16 causal bias alibi", mask="causal",
                  bias="alibi"),
        attention("attention bshd f32 causal return_lse", elem="f32",
                  mask="causal", lse=True),
        attention("attention bshd f32 s=1 d=8", elem="f32", s_q=1, d_qk=8),
        attention("attention bshd bf16 causal dropout 0.1", mask="causal",
                  dropout=0.1),
    ]
    # te.attention_backward: the layouts, the mask kinds, GQA, and each
    # option with a gradient of its own (dbias, d_softmax_offset).
    for layout, elem in (("bshd", "bf16"), ("sbhd", "f32"), ("bhsd", "f16")):
        cases.append(attention_backward(
            f"attention_backward {layout} {elem} causal", layout=layout,
            elem=elem, mask="causal"))
    cases += [
        attention_backward("attention_backward bshd f32 no_mask", elem="f32"),
        attention_backward("attention_backward bshd bf16 padding_causal",
                           mask="padding_causal"),
        attention_backward("attention_backward bshd bf16 arbitrary",
                           mask="arbitrary"),
        attention_backward("attention_backward bshd bf16 causal_bottom_right "
                           "s_q<s_kv", mask="causal_bottom_right", s_q=32,
                           s_kv=80),
        attention_backward("attention_backward bshd bf16 causal gqa 8:2",
                           mask="causal", h_q=8, h_kv=2),
        attention_backward("attention_backward bshd bf16 causal mqa 4:1",
                           mask="causal", h_q=4, h_kv=1),
        attention_backward("attention_backward bshd bf16 causal "
                           "d_qk=64 d_v=32", mask="causal", d_qk=64, d_v=32),
        attention_backward("attention_backward bshd bf16 causal window "
                           "[16, 0]", mask="causal", window=(16, 0)),
        attention_backward("attention_backward bshd f32 causal bias "
                           "post_scale", elem="f32", mask="causal",
                           bias="post_scale"),
        attention_backward("attention_backward bshd bf16 no_mask bias "
                           "pre_scale", bias="pre_scale"),
        attention_backward("attention_backward bshd bf16 causal bias alibi",
                           mask="causal", bias="alibi"),
        attention_backward("attention_backward bshd f32 causal softmax "
                           "learnable", elem="f32", mask="causal",
                           softmax="learnable"),
        attention_backward("attention_backward bshd bf16 causal softmax "
                           "off_by_one", mask="causal", softmax="off_by_one"),
        attention_backward("attention_backward bshd bf16 causal dropout 0.1",
                           mask="causal", dropout=0.1),
    ]
    # te.scaled_matmul: output types, transposes, bias, GELU; then TE's
    # other precisions, scaling modes and epilogues.
    for out in ("f32", "bf16", "f16", "f8E4M3FN"):
        cases.append(scaled_matmul(f"scaled_matmul NT -> {out}", out=out))
    cases += [
        scaled_matmul("scaled_matmul NN -> f32", out="f32", transpose_b=False),
        scaled_matmul("scaled_matmul TN -> f32", out="f32", transpose_a=True),
        scaled_matmul("scaled_matmul NT e5m2 x e4m3 -> bf16", fp8="f8E5M2",
                      b_type="f8E4M3FN"),
        scaled_matmul("scaled_matmul NT bias bf16 -> bf16", bias="bf16"),
        scaled_matmul("scaled_matmul NT bias f32 gelu -> f32", out="f32",
                      bias="f32", gelu=True),
        scaled_matmul("scaled_matmul NT m=1 -> bf16", m=1),
        scaled_matmul("scaled_matmul NT bf16 -> bf16", fp8="bf16"),
        scaled_matmul("scaled_matmul NN f16 -> f16", fp8="f16", out="f16",
                      transpose_b=False),
        scaled_matmul("scaled_matmul TN f32 -> f32", fp8="f32", out="f32",
                      transpose_a=True),
        scaled_matmul("scaled_matmul NT mxfp8 -> bf16",
                      modes=("mxfp8_1x32", "mxfp8_1x32")),
        scaled_matmul("scaled_matmul NT block 1x128 x 128x128 -> f32",
                      out="f32", k=200, n=130,
                      modes=("block_1x128", "block_128x128")),
        scaled_matmul("scaled_matmul NT bf16 bias gelu pre_gelu -> bf16",
                      fp8="bf16", bias="bf16", gelu=True, pre_gelu="bf16"),
        scaled_matmul("scaled_matmul NN bf16 dgelu bias_grad -> bf16",
                      fp8="bf16", transpose_b=False, dgelu="bf16",
                      bias_grad="f32"),
        scaled_matmul("scaled_matmul TN bf16 accumulate bias_grad -> f32",
                      fp8="bf16", out="f32", transpose_a=True,
                      transpose_b=False, accumulate=True, bias_grad="f32"),
    ]
    # te.grouped_matmul: GroupedLinear's forward and input gradient.
    cases += [
        grouped_matmul("grouped_matmul NT per_tensor -> bf16"),
        grouped_matmul("grouped_matmul NN per_tensor -> f32", out="f32",
                       transpose_b=False),
        grouped_matmul("grouped_matmul NT bf16 bias -> bf16", elem="bf16",
                       bias="bf16"),
        grouped_matmul("grouped_matmul NT f32 accumulate -> f32", elem="f32",
                       out="f32", accumulate=True),
        grouped_matmul("grouped_matmul NT mxfp8 -> bf16",
                       modes=("mxfp8_1x32", "mxfp8_1x32")),
        grouped_matmul("grouped_matmul NT block 1x128 x 128x128 -> f32",
                       out="f32", k=200, n=130,
                       modes=("block_1x128", "block_128x128")),
    ]
    # FP8 quantization and friends.
    x = "tensor<64x128xbf16>"
    cases += [
        simple("amax bf16", "  %a = te.amax %x : tensor<64x128xbf16> -> tensor<f32>\n"
               "  return %a : tensor<f32>", [("x", x)], ["tensor<f32>"]),
        simple("amax f32", "  %a = te.amax %x : tensor<4x96xf32> -> tensor<f32>\n"
               "  return %a : tensor<f32>", [("x", "tensor<4x96xf32>")],
               ["tensor<f32>"]),
        simple("quantize per_tensor bf16 -> e4m3",
               "  %d, %si, %am = te.quantize %x scale(%s) mode per_tensor\n"
               "      : tensor<64x128xbf16>, tensor<f32> -> tensor<64x128xf8E4M3FN>, tensor<f32>, tensor<f32>\n"
               "  return %d, %si, %am : tensor<64x128xf8E4M3FN>, tensor<f32>, tensor<f32>",
               [("x", x), ("s", "tensor<f32>")],
               ["tensor<64x128xf8E4M3FN>", "tensor<f32>", "tensor<f32>"]),
        simple("quantize mxfp8_1x32 bf16 -> e4m3",
               "  %d, %s = te.quantize %x mode mxfp8_1x32\n"
               "      : tensor<64x128xbf16> -> tensor<64x128xf8E4M3FN>, tensor<64x4xf8E8M0FNU>\n"
               "  return %d, %s : tensor<64x128xf8E4M3FN>, tensor<64x4xf8E8M0FNU>",
               [("x", x)], ["tensor<64x128xf8E4M3FN>", "tensor<64x4xf8E8M0FNU>"]),
        simple("dequantize per_tensor e4m3 -> bf16",
               "  %y = te.dequantize %d, %si mode per_tensor\n"
               "      : tensor<64x128xf8E4M3FN>, tensor<f32> -> tensor<64x128xbf16>\n"
               "  return %y : tensor<64x128xbf16>",
               [("d", "tensor<64x128xf8E4M3FN>"), ("si", "tensor<f32>")],
               ["tensor<64x128xbf16>"]),
    ]
    # Scaling factors: current scaling (per tensor and per block) and one
    # delayed-scaling update.
    cases += [
        op_case("compute_scale e4m3", "compute_scale", "%a fp8_type f8E4M3FN",
                [("a", "tensor<f32>")], ["tensor<f32>"]),
        op_case("compute_scale e5m2 epsilon pow2_scales 4x8",
                "compute_scale",
                "%a fp8_type f8E5M2 epsilon 1.0e-06 pow2_scales",
                [("a", "tensor<4x8xf32>")], ["tensor<4x8xf32>"]),
        op_case("update_delayed_scaling e4m3 max", "update_delayed_scaling",
                "%h, %a, %s fp8_type f8E4M3FN",
                [("h", "tensor<16x3xf32>"), ("a", "tensor<3xf32>"),
                 ("s", "tensor<3xf32>")],
                ["tensor<16x3xf32>", "tensor<3xf32>"]),
        op_case("update_delayed_scaling e5m2 most_recent margin 2",
                "update_delayed_scaling",
                "%h, %a, %s fp8_type f8E5M2 amax_algo most_recent margin 2",
                [("h", "tensor<16x3xf32>"), ("a", "tensor<3xf32>"),
                 ("s", "tensor<3xf32>")],
                ["tensor<16x3xf32>", "tensor<3xf32>"]),
    ]
    # Quantization in every mode and usage: MXFP8 column-wise and both,
    # Float8BlockScaling's 1x128 and 128x128 blocks (f32 scales; 96x200 has
    # partial blocks at both edges), and the dequantization of each.
    mx = "tensor<64x96xf16>"
    blocks = "tensor<96x200xbf16>"
    blocks32 = "tensor<96x200xf32>"
    cases += [
        op_case("quantize per_tensor bf16 -> e4m3 both", "quantize",
                "%x scale(%s) mode per_tensor usage both",
                [("x", x), ("s", "tensor<f32>")],
                ["tensor<64x128xf8E4M3FN>", "tensor<128x64xf8E4M3FN>",
                 "tensor<f32>", "tensor<f32>"]),
        op_case("quantize mxfp8_1x32 bf16 -> e4m3 columnwise", "quantize",
                "%x mode mxfp8_1x32 usage columnwise", [("x", x)],
                ["tensor<64x128xf8E4M3FN>", "tensor<2x128xf8E8M0FNU>"]),
        op_case("quantize mxfp8_1x32 f16 -> e5m2 both", "quantize",
                "%x mode mxfp8_1x32 usage both", [("x", mx)],
                ["tensor<64x96xf8E5M2>", "tensor<64x3xf8E8M0FNU>",
                 "tensor<64x96xf8E5M2>", "tensor<2x96xf8E8M0FNU>"]),
        op_case("quantize block_1x128 bf16 -> e4m3", "quantize",
                "%x mode block_1x128", [("x", blocks)],
                ["tensor<96x200xf8E4M3FN>", "tensor<96x2xf32>"]),
        op_case("quantize block_1x128 bf16 -> e4m3 columnwise", "quantize",
                "%x mode block_1x128 usage columnwise", [("x", blocks)],
                ["tensor<200x96xf8E4M3FN>", "tensor<200x1xf32>"]),
        op_case("quantize block_1x128 f32 -> e4m3 both pow2_scales false",
                "quantize",
                "%x mode block_1x128 usage both pow2_scales false",
                [("x", blocks32)],
                ["tensor<96x200xf8E4M3FN>", "tensor<96x2xf32>",
                 "tensor<200x96xf8E4M3FN>", "tensor<200x1xf32>"]),
        op_case("quantize block_128x128 bf16 -> e4m3", "quantize",
                "%x mode block_128x128", [("x", blocks)],
                ["tensor<96x200xf8E4M3FN>", "tensor<1x2xf32>"]),
        op_case("quantize block_128x128 f32 -> e5m2 both epsilon",
                "quantize", "%x mode block_128x128 usage both epsilon 1.0e-04",
                [("x", blocks32)],
                ["tensor<96x200xf8E5M2>", "tensor<1x2xf32>",
                 "tensor<200x96xf8E5M2>", "tensor<2x1xf32>"]),
        op_case("dequantize mxfp8_1x32 e4m3 -> bf16", "dequantize",
                "%d, %si mode mxfp8_1x32",
                [("d", "tensor<64x128xf8E4M3FN>"),
                 ("si", "tensor<64x4xf8E8M0FNU>")],
                ["tensor<64x128xbf16>"]),
        op_case("dequantize mxfp8_1x32 columnwise e5m2 -> f32", "dequantize",
                "%d, %si mode mxfp8_1x32 columnwise",
                [("d", "tensor<64x96xf8E5M2>"),
                 ("si", "tensor<2x96xf8E8M0FNU>")],
                ["tensor<64x96xf32>"]),
        op_case("dequantize block_1x128 e4m3 -> bf16", "dequantize",
                "%d, %si mode block_1x128",
                [("d", "tensor<96x200xf8E4M3FN>"), ("si", "tensor<96x2xf32>")],
                ["tensor<96x200xbf16>"]),
        op_case("dequantize block_128x128 e5m2 -> f32", "dequantize",
                "%d, %si mode block_128x128",
                [("d", "tensor<96x200xf8E5M2>"), ("si", "tensor<1x2xf32>")],
                ["tensor<96x200xf32>"]),
    ]
    # Normalization: LayerNorm and RMSNorm, forward (TE's dtype pairs, a
    # hidden size that is no multiple of a vector) and backward (with the
    # statistics of a forward, and RMSNorm's added gradient).
    rows, hidden = "tensor<2x24xf32>", "tensor<2x24x200xbf16>"
    weight = "tensor<200xbf16>"
    cases += [
        op_case("norm layernorm bf16 beta", "norm",
                "%x, %g, %b kind layernorm epsilon 1.0e-05",
                [("x", hidden), ("g", weight), ("b", weight)],
                [hidden, rows, rows]),
        op_case("norm layernorm f32 -> bf16 zero_centered_gamma", "norm",
                "%x, %g kind layernorm epsilon 1.0e-05 zero_centered_gamma",
                [("x", "tensor<48x200xf32>"), ("g", "tensor<200xf32>")],
                ["tensor<48x200xbf16>", "tensor<48xf32>", "tensor<48xf32>"]),
        op_case("norm rmsnorm f16", "norm", "%x, %g kind rmsnorm epsilon 1.0e-06",
                [("x", "tensor<48x200xf16>"), ("g", "tensor<200xf16>")],
                ["tensor<48x200xf16>", "tensor<48xf32>"]),
        # The quantized outputs: delayed scaling's fused cast, the
        # high-precision z with its amax (current scaling), MXFP8 and
        # block scaling of z.
        op_case("norm rmsnorm bf16 quantize per_tensor e4m3", "norm",
                "%x, %g scale(%s) kind rmsnorm epsilon 1.0e-05 "
                "quantize per_tensor",
                [("x", "tensor<48x200xbf16>"), ("g", weight),
                 ("s", "tensor<f32>")],
                ["tensor<48x200xf8E4M3FN>", "tensor<f32>", "tensor<f32>",
                 "tensor<48xf32>"]),
        op_case("norm layernorm bf16 keep z quantize per_tensor e5m2 both",
                "norm",
                "%x, %g, %b scale(%s) kind layernorm epsilon 1.0e-05 "
                "quantize per_tensor usage both",
                [("x", "tensor<48x200xbf16>"), ("g", weight), ("b", weight),
                 ("s", "tensor<f32>")],
                ["tensor<48x200xbf16>", "tensor<48x200xf8E5M2>",
                 "tensor<200x48xf8E5M2>", "tensor<f32>", "tensor<f32>",
                 "tensor<48xf32>", "tensor<48xf32>"]),
        op_case("norm layernorm bf16 amax", "norm",
                "%x, %g, %b kind layernorm epsilon 1.0e-05 amax",
                [("x", hidden), ("g", weight), ("b", weight)],
                [hidden, "tensor<f32>", rows, rows]),
        op_case("norm rmsnorm f16 quantize mxfp8_1x32 both", "norm",
                "%x, %g kind rmsnorm epsilon 1.0e-05 quantize mxfp8_1x32 "
                "usage both",
                [("x", "tensor<64x96xf16>"), ("g", "tensor<96xf16>")],
                ["tensor<64x96xf8E4M3FN>", "tensor<64x3xf8E8M0FNU>",
                 "tensor<64x96xf8E4M3FN>", "tensor<2x96xf8E8M0FNU>",
                 "tensor<64xf32>"]),
        op_case("norm layernorm f32 quantize block_1x128 both", "norm",
                "%x, %g kind layernorm epsilon 1.0e-05 zero_centered_gamma "
                "quantize block_1x128 usage both",
                [("x", "tensor<96x200xf32>"), ("g", "tensor<200xf32>")],
                ["tensor<96x200xf8E4M3FN>", "tensor<96x2xf32>",
                 "tensor<200x96xf8E4M3FN>", "tensor<200x1xf32>",
                 "tensor<96xf32>", "tensor<96xf32>"]),
        op_case("norm_backward layernorm bf16", "norm_backward",
                "%dz, %x, %rs, %g mean(%mu) kind layernorm",
                [("dz", hidden), ("x", hidden), ("rs", rows), ("g", weight),
                 ("mu", rows)],
                [hidden, weight, weight]),
        op_case("norm_backward layernorm f32 input bf16 gamma", "norm_backward",
                "%dz, %x, %rs, %g mean(%mu) kind layernorm zero_centered_gamma",
                [("dz", "tensor<48x200xbf16>"), ("x", "tensor<48x200xf32>"),
                 ("rs", "tensor<48xf32>"), ("g", weight),
                 ("mu", "tensor<48xf32>")],
                ["tensor<48x200xf32>", weight, weight]),
        op_case("norm_backward rmsnorm f32 add zero_centered_gamma",
                "norm_backward",
                "%dz, %x, %rs, %g add(%a) kind rmsnorm zero_centered_gamma",
                [("dz", "tensor<48x200xf32>"), ("x", "tensor<48x200xf32>"),
                 ("rs", "tensor<48xf32>"), ("g", "tensor<200xf32>"),
                 ("a", "tensor<48x200xf32>")],
                ["tensor<48x200xf32>", "tensor<200xf32>"]),
    ]
    # Activations: every kind forward, the backward with dbias and the
    # gated backward, and the quantized outputs TE fuses (delayed scaling's
    # cast, MXFP8 of a gated output, cast_transpose_dbias_dgelu).
    act_in, act_half = "tensor<2x24x200xbf16>", "tensor<2x24x100xbf16>"
    for kind in ("gelu", "qgelu", "relu", "srelu", "silu"):
        cases.append(op_case(f"activation {kind} bf16", "activation",
                             f"%x kind {kind}", [("x", act_in)], [act_in]))
    for kind in ("geglu", "qgeglu", "reglu", "sreglu", "swiglu", "glu"):
        cases.append(op_case(f"activation {kind} bf16", "activation",
                             f"%x kind {kind}", [("x", act_in)], [act_half]))
    cases += [
        op_case("activation clamped_swiglu f32 limit 7", "activation",
                "%x kind clamped_swiglu limit 7.0",
                [("x", "tensor<48x200xf32>")], ["tensor<48x100xf32>"]),
        op_case("activation swiglu bf16 quantize mxfp8_1x32 both",
                "activation", "%x kind swiglu quantize mxfp8_1x32 usage both",
                [("x", "tensor<64x192xbf16>")],
                ["tensor<64x96xf8E4M3FN>", "tensor<64x3xf8E8M0FNU>",
                 "tensor<64x96xf8E4M3FN>", "tensor<2x96xf8E8M0FNU>"]),
        op_case("activation gelu f16 quantize per_tensor e4m3", "activation",
                "%x scale(%s) kind gelu quantize per_tensor",
                [("x", "tensor<48x200xf16>"), ("s", "tensor<f32>")],
                ["tensor<48x200xf8E4M3FN>", "tensor<f32>", "tensor<f32>"]),
        op_case("activation_backward gelu bf16 dbias", "activation_backward",
                "%g, %x kind gelu dbias", [("g", act_in), ("x", act_in)],
                [act_in, "tensor<200xbf16>"]),
        op_case("activation_backward silu f32", "activation_backward",
                "%g, %x kind silu",
                [("g", "tensor<48x200xf32>"), ("x", "tensor<48x200xf32>")],
                ["tensor<48x200xf32>"]),
        op_case("activation_backward swiglu bf16", "activation_backward",
                "%g, %x kind swiglu", [("g", act_half), ("x", act_in)],
                [act_in]),
        op_case("activation_backward clamped_swiglu f32 limit 7",
                "activation_backward", "%g, %x kind clamped_swiglu limit 7.0",
                [("g", "tensor<48x100xf32>"), ("x", "tensor<48x200xf32>")],
                ["tensor<48x200xf32>"]),
        op_case("activation_backward gelu bf16 dbias quantize per_tensor "
                "e5m2 both", "activation_backward",
                "%g, %x scale(%s) kind gelu dbias quantize per_tensor "
                "usage both",
                [("g", "tensor<48x200xbf16>"), ("x", "tensor<48x200xbf16>"),
                 ("s", "tensor<f32>")],
                ["tensor<48x200xf8E5M2>", "tensor<200x48xf8E5M2>",
                 "tensor<f32>", "tensor<f32>", "tensor<200xbf16>"]),
    ]
    # RoPE: every format, interleaved, a rotary fraction, start positions,
    # context parallelism, and the backward.
    freqs = "tensor<64x1x1x32xf32>"
    cases += [
        op_case("rope sbhd bf16", "rope", "%x, %f format sbhd",
                [("x", "tensor<24x2x4x32xbf16>"), ("f", freqs)],
                ["tensor<24x2x4x32xbf16>"]),
        op_case("rope bshd f32 interleaved fraction", "rope",
                "%x, %f format bshd interleaved",
                [("x", "tensor<2x24x4x48xf32>"), ("f", freqs)],
                ["tensor<2x24x4x48xf32>"]),
        op_case("rope sbhd f16 start_positions cp_size 2 cp_rank 1", "rope",
                "%x, %f start_positions(%sp) format sbhd cp_size 2 cp_rank 1",
                [("x", "tensor<12x2x4x32xf16>"), ("f", freqs),
                 ("sp", "tensor<2xi32>")],
                ["tensor<12x2x4x32xf16>"]),
        op_case("rope thd bf16", "rope", "%x, %f cu_seqlens(%cu) format thd",
                [("x", "tensor<40x4x32xbf16>"), ("f", freqs),
                 ("cu", "tensor<4xi32>")],
                ["tensor<40x4x32xbf16>"]),
        op_case("rope_backward bshd bf16 interleaved", "rope_backward",
                "%x, %f format bshd interleaved",
                [("x", "tensor<2x24x4x32xbf16>"), ("f", freqs)],
                ["tensor<2x24x4x32xbf16>"]),
        # TE's fused QKV RoPE: 4 groups of 2 query heads, one key and one
        # value head of 32 channels.
        op_case("qkv_rope sbhd bf16 gqa", "qkv_rope",
                "%x, %qf, %kf format sbhd split [64, 32, 32]",
                [("x", "tensor<24x2x4x128xbf16>"), ("qf", freqs),
                 ("kf", freqs)],
                ["tensor<24x2x8x32xbf16>", "tensor<24x2x4x32xbf16>",
                 "tensor<24x2x4x32xbf16>"]),
        op_case("qkv_rope_backward bshd f32 interleaved", "qkv_rope_backward",
                "%q, %k, %v, %qf, %kf format bshd split [64, 32, 32] "
                "interleaved",
                [("q", "tensor<2x24x8x32xf32>"), ("k", "tensor<2x24x4x32xf32>"),
                 ("v", "tensor<2x24x4x32xf32>"), ("qf", freqs),
                 ("kf", freqs)],
                ["tensor<2x24x4x128xf32>"]),
    ]
    # Cross-entropy: per-row and reduced losses, label smoothing, and the
    # backward's scaling (random targets are classes of the vocabulary).
    cases += [
        op_case("cross_entropy bf16 i64", "cross_entropy", "%x, %t",
                [("x", "tensor<2x16x1000xbf16>"), ("t", "tensor<2x16xi64>")],
                ["tensor<2x16xf32>", "tensor<2x16x1000xbf16>"]),
        op_case("cross_entropy f32 i32 label_smoothing reduce_loss",
                "cross_entropy", "%x, %t label_smoothing 1.0e-01 reduce_loss",
                [("x", "tensor<32x500xf32>"), ("t", "tensor<32xi32>")],
                ["tensor<f32>", "tensor<32x500xf32>"]),
        op_case("cross_entropy bf16 i64 f32 grad ignore_index reduce_loss",
                "cross_entropy", "%x, %t ignore_index 7 reduce_loss",
                [("x", "tensor<4x8x100xbf16>"), ("t", "tensor<4x8xi64>")],
                ["tensor<f32>", "tensor<4x8x100xf32>"]),
        op_case("cross_entropy_backward f32 grad to bf16",
                "cross_entropy_backward", "%g, %d",
                [("g", "tensor<2x16x1000xf32>"), ("d", "tensor<f32>")],
                ["tensor<2x16x1000xbf16>"]),
        op_case("cross_entropy_backward bf16 per row",
                "cross_entropy_backward", "%g, %d",
                [("g", "tensor<2x16x1000xbf16>"), ("d", "tensor<2x16xf32>")],
                ["tensor<2x16x1000xbf16>"]),
    ]
    return cases


# ---------------------------------------------------------------------------
# A vendor's own configurations (--extra)
# ---------------------------------------------------------------------------

SPLIT_MARKER = re.compile(r"^// -----\s*$")
NAME_LINE = re.compile(r"^\s*//\s*name:(.*)$")
TE_OP = re.compile(r"(?<![\w.])te\.[a-z_]+\b")


class ExtraError(Exception):
    """A configuration file that breaks the --extra format."""


def read_extra(path):
    """[(name, text, first line)] of the entries of an --extra file."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise ExtraError(f"{path}: cannot read: {e.strerror}")
    entries, chunk, start = [], [], 1
    for number, line in enumerate(lines + ["// -----"], start=1):
        if not SPLIT_MARKER.match(line):
            chunk.append(line)
            continue
        index = len(entries) + 1
        where = f"{path}: entry {index} (line {start})"
        names = [(start + i, m.group(1).strip())
                 for i, l in enumerate(chunk) if (m := NAME_LINE.match(l))]
        code = [l for l in chunk if l.strip() and not l.strip().startswith("//")]
        if not code:
            raise ExtraError(f"{where}: has no program (a '// -----' with "
                             "nothing after it, or an empty file?)")
        if len(names) != 1 or not names[0][1]:
            found = ("none" if not names else
                     ", ".join(f"line {n}" for n, _ in names))
            raise ExtraError(f"{where}: needs exactly one non-empty "
                             f"'// name: NAME' line (found: {found})")
        if not any(TE_OP.search(l) for l in code):
            raise ExtraError(f"{where} '{names[0][1]}': has no te op, so "
                             "there is nothing to check")
        entries.append((names[0][1], "\n".join(chunk) + "\n", start))
        chunk, start = [], number + 1
    return entries


def verify_extra(te_opt, path, entries):
    """Parses and verifies each entry with te-opt; errors point into `path`."""
    with tempfile.TemporaryDirectory(prefix="te-plugin-check-") as scratch:
        program = os.path.join(scratch, "entry.mlir")
        for index, (name, text, start) in enumerate(entries, start=1):
            # Blank lines in front keep te-opt's line numbers those of FILE.
            with open(program, "w") as f:
                f.write("\n" * (start - 1) + text)
            result = subprocess.run([te_opt, program, "-o", os.devnull],
                                    capture_output=True, text=True)
            if result.returncode != 0:
                message = failure_of(result).replace(program, path)
                if died(result):
                    message = "te-opt " + message
                raise ExtraError(f"{path}: entry {index} (line {start}) "
                                 f"'{name}': does not verify: {message}")


def load_extras(paths, builtin, te_opt):
    """The configurations of the --extra files, checked."""
    cases, seen = [], {name for name, _ in builtin}
    for path in paths:
        entries = read_extra(path)
        for index, (name, _, start) in enumerate(entries, start=1):
            if name in seen:
                raise ExtraError(f"{path}: entry {index} (line {start}): "
                                 f"the name '{name}' is already taken (names "
                                 "must differ from the corpus and each other)")
            seen.add(name)
        if te_opt:
            verify_extra(te_opt, path, entries)
        cases += [(name, text) for name, text, _ in entries]
    return cases


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------

CHECK_LINE = re.compile(
    r"check out(\d+): max abs err (\S+), max rel err (\S+) \(tolerance[^)]*\): (ok|FAILED)")


def find_te_run(explicit):
    if explicit:
        return explicit
    here = os.path.dirname(os.path.realpath(__file__))
    beside = os.path.join(here, "te-run")
    if os.access(beside, os.X_OK):
        return beside
    return shutil.which("te-run")


def one_line(text):
    lines = [l.strip() for l in text.strip().splitlines() if l.strip()]
    errors = [l for l in lines if "error" in l]
    return (errors or lines or ["(no output)"])[0]


def died(result):
    """'died with SIGSEGV' when the process of `result` ended by a signal
    (usually a crash in the plugin it loaded), else None."""
    if result.returncode >= 0:
        return None
    number = -result.returncode
    try:
        name = signal.Signals(number).name
    except ValueError:
        name = f"signal {number}"
    return f"died with {name}"


def failure_of(result):
    """One line saying why the process of `result` failed: the signal that
    killed it (with its last error line, if any), or its first error
    line."""
    crash = died(result)
    message = one_line(result.stderr)
    if not crash:
        return message
    return crash + ("" if message == "(no output)" else f" ({message})")


def run_case(te_run, env, plugin_name, path, seed, backend):
    """Returns (status, detail)."""
    device = ["--backend", backend] if backend else []
    # --explain alone runs nothing: the table, and exit status 2 when an op
    # has no lowering at all.
    explain = subprocess.run(
        [te_run, path, "--explain"] + device,
        capture_output=True, text=True, env=env, timeout=600)
    rows = [l for l in explain.stdout.splitlines() if l.startswith("te.")]
    if not rows:
        return "failed", "te-run --explain: " + failure_of(explain)
    ours = [r for r in rows if re.search(r"\bplugin " + re.escape(plugin_name) + "/", r)]
    # On the plugin's own device everything is the plugin's: its providers'
    # lowerings and its target's.
    lowered_by = ""
    if backend:
        lowered_by = " [" + re.split(r"\s{2,}", rows[0])[2] + "]"
    elif not ours:
        reasons = re.findall(re.escape(plugin_name) + r"/\S+: ([^;]*)", rows[0])
        if explain.returncode != 0 and "none:" in rows[0]:
            return "declined", "no backend lowers it: " + rows[0].split("none:")[1].strip()
        if reasons:
            return "declined", reasons[0].strip()
        return "declined", f"{plugin_name} has no provider for {rows[0].split()[0]}"
    check = subprocess.run(
        [te_run, path, "--random-inputs", "--seed", str(seed), "--check",
         "--output-dir", path + ".out"] + device,
        capture_output=True, text=True, env=env, timeout=600)
    text = check.stdout + check.stderr
    if "has no reference" in text or "no reference decomposition" in text:
        return "skipped", "no reference: " + one_line(check.stderr)
    results = CHECK_LINE.findall(text)
    if died(check):
        return "failed", "te-run --check: " + failure_of(check)
    if check.returncode == 2 or not results:
        return "failed", one_line(check.stderr or check.stdout)
    worst_abs = max(float(r[1]) for r in results)
    worst_rel = max(float(r[2]) for r in results)
    detail = (f"max abs err {worst_abs:.3g}, max rel err {worst_rel:.3g}"
              + lowered_by)
    bad = [f"out{r[0]}" for r in results if r[3] == "FAILED"]
    if bad or check.returncode != 0:
        return "failed", detail + " (outside tolerance: " + ", ".join(bad) + ")"
    return "passed", detail


def te_opt_beside(te_run):
    """The te-opt next to `te_run`, or None."""
    te_opt = os.path.join(os.path.dirname(te_run), "te-opt")
    return te_opt if os.access(te_opt, os.X_OK) else None


def plugin_name_of(te_run, env):
    """(name, version, plugin table) of the plugin from te-opt's plugin
    table, or (None, why not, None)."""
    te_opt = te_opt_beside(te_run)
    if not te_opt:
        return (None, "cannot query the plugin (te-opt not found next to "
                "te-run)", None)
    info = subprocess.run([te_opt, "--te-print-plugin-info"],
                          capture_output=True, text=True, env=env)
    if died(info):
        # The plugin's own code (a constructor, te_plugin_query, register)
        # crashed the process that loaded it.
        return (None, f"te-opt {failure_of(info)} while loading the plugin "
                f"({te_opt} --te-print-plugin-info)", None)
    match = re.search(r"^\s+plugin: (\S+) (\S+)", info.stdout, re.M)
    failed = re.search(r"failed at (\S+): (.*)", info.stdout)
    if failed:
        return (None, f"failed at {failed.group(1)}: {failed.group(2)}",
                None)
    if match:
        return match.group(1), match.group(2).rstrip(","), info.stdout
    return (None, "cannot query the plugin: te-opt --te-print-plugin-info "
            f"exited with status {info.returncode} and listed no plugin: "
            f"{one_line(info.stderr)}", None)


def provided_ops(info):
    """The te ops the plugin's providers take, from te-opt's plugin table
    ('provider P/x: te.a, te.b' lines)."""
    ops = set()
    for line in re.findall(r"^\s+provider \S+: (.*)$", info, re.M):
        ops.update(op.strip() for op in line.split(","))
    return ops


def unprovided_op(text, ops):
    """The first te op of program `text` when no provider of the plugin
    takes any of its te ops (so the case is declined without running
    anything), else None."""
    used = [op for op in re.findall(r"\b(te\.[a-z_]+)\b", text)
            if op not in ("te.process_group", "te.check")]
    if used and not any(op in ops for op in used):
        return used[0]
    return None


def target_of(info, device):
    """The 'device <- target (origin)' entry that serves `device` in te-opt's
    plugin table, or None."""
    line = re.search(r"^targets \(device <- target\): (.*)$", info, re.M)
    for entry in (line.group(1).split(", ") if line else []):
        if entry.startswith(device + " <- "):
            return entry
    return None


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("plugin", nargs="?",
                        help="plugin library path or name (not needed with "
                        "--list)")
    parser.add_argument("--filter", default="", metavar="REGEX",
                        help="only configurations whose name REGEX matches "
                        "(re.search)")
    parser.add_argument("--list", action="store_true",
                        help="print the configurations' names and exit")
    parser.add_argument("--extra", action="append", default=[],
                        metavar="FILE",
                        help="add the configurations of FILE (repeatable)")
    parser.add_argument("--te-run", help="te-run binary")
    parser.add_argument("--keep", help="keep programs and outputs in DIR")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--backend", metavar="DEVICE",
                        help="run on the plugin's own device DEVICE")
    parser.add_argument("--runtime-plugin", metavar="LIB",
                        help="the runtime plugin that provides DEVICE")
    args = parser.parse_args()
    if args.runtime_plugin and not args.backend:
        parser.error("--runtime-plugin needs --backend DEVICE")
    if not args.plugin and not args.list:
        parser.error("a PLUGIN to check is needed (or --list)")

    te_run = find_te_run(args.te_run)
    if not te_run and not args.list:
        print("te-plugin-check: error: te-run not found (give --te-run)",
              file=sys.stderr)
        return 2
    builtin = corpus()
    try:
        extras = load_extras(args.extra, builtin,
                             te_opt_beside(te_run) if te_run else None)
    except ExtraError as e:
        print(f"te-plugin-check: error: --extra {e}", file=sys.stderr)
        return 2
    cases = [c for c in builtin + extras if re.search(args.filter, c[0])]
    if args.list:
        for name, _ in cases:
            print(name)
        return 0
    env = dict(os.environ)
    for var in ("NVTE_PLUGIN_POLICY", "NVTE_PLUGIN_DENY", "TE_RUNTIME_PLUGIN"):
        env.pop(var, None)
    env.update(NVTE_PLUGIN=args.plugin, NVTE_PLUGIN_STRICT="1",
               TE_CACHE_DISABLE="1")
    if args.runtime_plugin:
        env["TE_RUNTIME_PLUGIN"] = args.runtime_plugin
    work = args.keep or tempfile.mkdtemp(prefix="te-plugin-check-")
    os.makedirs(work, exist_ok=True)
    try:
        name, version, info = plugin_name_of(te_run, env)
        if name is None:
            print(f"te-plugin-check: error: plugin '{args.plugin}': {version}",
                  file=sys.stderr)
            return 2
        # On a device, everything is checked as the plugin's: only if its
        # target is the one that serves the device.
        if args.backend:
            entry = target_of(info, args.backend)
            if not entry or f"(plugin {name} " not in entry:
                print(f"te-plugin-check: error: plugin {name} has no target "
                      f"serving device '{args.backend}' (it is served by "
                      f"{entry or 'no target'})", file=sys.stderr)
                return 2
        where = f" on device {args.backend}" if args.backend else ""
        print(f"te-plugin-check: plugin {name} {version} ({args.plugin}){where}: "
              f"{len(cases)} configurations")
        counts = {"passed": 0, "failed": 0, "declined": 0, "skipped": 0}
        width = max((len(n) for n, _ in cases), default=0)
        ops = provided_ops(info)
        for index, (case, text) in enumerate(cases):
            # An op no provider of the plugin takes is declined at once
            # (on the plugin's own device, its target lowers everything).
            missing = None if args.backend else unprovided_op(text, ops)
            if missing:
                status, detail = "declined", f"{name} has no provider for {missing}"
                counts[status] += 1
                print(f"  {case:<{width}}  {status:<8}  {detail}", flush=True)
                continue
            path = os.path.join(work, f"case{index:03d}.mlir")
            with open(path, "w") as f:
                f.write(text)
            status, detail = run_case(te_run, env, name, path, args.seed,
                                      args.backend)
            counts[status] += 1
            print(f"  {case:<{width}}  {status:<8}  {detail}", flush=True)
        print("te-plugin-check: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
        return 1 if counts["failed"] else 0
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
