"""te_mlir.torch: the custom ops pass torch.library.opcheck (schema,
autograd registration, fake tensors, AOT dispatch), attention and its
gradients match torch's own SDPA, torch.compile traces the ops, and the
example block trains.

scripts/bootstrap.sh installs torch; without it this module is skipped,
and pytest's summary says so."""

import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="torch is not installed (scripts/bootstrap.sh installs "
    "it): te_mlir.torch is untested")
import torch.nn.functional as F  # noqa: E402

import te_mlir  # noqa: E402
import te_mlir.torch as tet  # noqa: E402
from te_mlir.torch._common import host  # noqa: E402
from te_mlir.torch.ops import attention as attention_ops  # noqa: E402
from te_mlir import ops  # noqa: E402

ROOT = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir)


@pytest.fixture(autouse=True)
def seeded():
    torch.manual_seed(0)


def qkv(b=2, s=16, h=4, g=2, d=16, dtype=torch.float32, grad=True):
    q = torch.randn(b, s, h, d, dtype=dtype, requires_grad=grad)
    k = torch.randn(b, s, g, d, dtype=dtype, requires_grad=grad)
    v = torch.randn(b, s, g, d, dtype=dtype, requires_grad=grad)
    return q, k, v


def attention_args(q, k, v, **over):
    """The te_mlir::attention op's positional arguments: its optional
    tensors and attributes by name (_OPTIONAL and _ATTRIBUTES of
    te_mlir.torch.ops.attention)."""
    kw = dict.fromkeys(attention_ops._OPTIONAL)
    kw.update(layout="bshd", mask="causal", window=None,
              bottom_right_diagonal=None, scale=None, bias_type="no_bias",
              softmax="vanilla", dropout=0.0, seed=0)
    assert set(over) <= set(kw), set(over) - set(kw)
    kw.update(over)
    return (q, k, v, *(kw[n] for n in attention_ops._OPTIONAL + attention_ops._ATTRIBUTES))


# --- opcheck ---------------------------------------------------------------


def test_opcheck_attention():
    q, k, v = qkv()
    torch.library.opcheck(torch.ops.te_mlir.attention, attention_args(q, k, v))
    # A post-scale bias and the learnable softmax: their gradients too.
    bias = torch.randn(1, 4, 16, 16, requires_grad=True)
    offset = torch.randn(1, 4, 1, 1, requires_grad=True)
    torch.library.opcheck(torch.ops.te_mlir.attention, attention_args(
        q, k, v, bias=bias, softmax_offset=offset, bias_type="post_scale",
        softmax="learnable", mask="no_mask", window=[3, 2]))
    # thd with cu_seqlens and padded offsets, and dropout with its seed.
    qt, kt, vt = (x.detach()[0].requires_grad_() for x in (q, k, v))
    cu = torch.tensor([0, 5, 12], dtype=torch.int32)
    offsets = torch.tensor([0, 7, 16], dtype=torch.int32)
    torch.library.opcheck(torch.ops.te_mlir.attention, attention_args(
        qt, kt, vt, cu_seqlens_q=cu, cu_seqlens_kv=cu, seq_offsets_q=offsets,
        seq_offsets_kv=offsets, layout="thd", mask="padding_causal",
        dropout=0.2, seed=11))


def test_opcheck_attention_backward():
    q, k, v = qkv(grad=False)
    o, lse = torch.ops.te_mlir.attention(*attention_args(q, k, v))
    args = attention_args(q, k, v)
    torch.library.opcheck(torch.ops.te_mlir.attention_backward,
                          (q, k, v, o, torch.randn_like(o), lse) + args[3:])


def test_opcheck_fp8_ops():
    x = torch.randn(64, 128, dtype=torch.bfloat16)
    for mode, usage, scale in (("per_tensor", "both", None),
                               ("per_tensor", "columnwise",
                                torch.tensor(2.0)),
                               ("mxfp8_1x32", "both", None),
                               ("block_128x128", "rowwise", None)):
        torch.library.opcheck(torch.ops.te_mlir.quantize,
                              (x, scale, "f8E4M3FN", mode, usage, None, 0.0))
    bits = lambda t: t.view(torch.uint8)
    q = tet.quantize(x, transpose=True)
    torch.library.opcheck(torch.ops.te_mlir.dequantize, (
        bits(q.data), q.scale_inv, "f8E4M3FN", "per_tensor", False, "f32"))
    m = tet.quantize(x, mode="mxfp8_1x32", usage="columnwise")
    torch.library.opcheck(torch.ops.te_mlir.dequantize, (
        bits(m.columnwise_data), bits(m.columnwise_scale_inv), "f8E4M3FN",
        "mxfp8_1x32", True, "bf16"))
    w = tet.quantize(torch.randn(32, 128), "e5m2")
    for out, out_scale in (("bf16", None), ("f8E4M3FN", torch.tensor(4.0))):
        torch.library.opcheck(torch.ops.te_mlir.scaled_matmul, (
            bits(q.data), bits(w.data), q.scale_inv, w.scale_inv, None,
            out_scale, "f8E4M3FN", "f8E5M2", "per_tensor", "per_tensor",
            False, True, False, out))
    mx = tet.quantize(x, mode="mxfp8_1x32")
    mw = tet.quantize(torch.randn(32, 128), mode="mxfp8_1x32")
    torch.library.opcheck(torch.ops.te_mlir.scaled_matmul, (
        bits(mx.data), bits(mw.data), bits(mx.scale_inv), bits(mw.scale_inv),
        None, None, "f8E4M3FN", "f8E4M3FN", "mxfp8_1x32", "mxfp8_1x32",
        False, True, False, "f32"))


# --- Numerics against torch ------------------------------------------------


def sdpa(q, k, v, **kw):
    """torch's SDPA in TE's bshd layout."""
    out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                         v.transpose(1, 2), enable_gqa=True,
                                         **kw)
    return out.transpose(1, 2)


@pytest.mark.parametrize("mask,torch_kw", [("causal", dict(is_causal=True)),
                                           ("no_mask", {})])
def test_attention_and_gradients_match_torch_sdpa(mask, torch_kw):
    q, k, v = qkv()
    q2, k2, v2 = (x.detach().clone().requires_grad_() for x in (q, k, v))
    o = tet.attention(q, k, v, mask=mask, scale=0.2)
    want = sdpa(q2, k2, v2, scale=0.2, **torch_kw)
    # f32 both ways, summed in different orders: a few ulps.
    torch.testing.assert_close(o, want, rtol=1e-5, atol=1e-5)
    d_o = torch.randn_like(o)
    o.backward(d_o)
    want.backward(d_o)
    for ours, theirs in ((q, q2), (k, k2), (v, v2)):
        torch.testing.assert_close(ours.grad, theirs.grad, rtol=1e-4,
                                   atol=1e-5)


def test_bias_and_learnable_offset_get_gradients():
    q, k, v = qkv(h=2, g=2)
    bias = torch.randn(1, 2, 16, 16, requires_grad=True)
    o = tet.attention(q, k, v, mask="no_mask", bias=bias)
    o.sum().backward()
    # A post-scale bias adds to the scores that SDPA's attn_mask adds to.
    b2 = bias.detach().clone().requires_grad_()
    q2, k2, v2 = (x.detach().clone().requires_grad_() for x in (q, k, v))
    sdpa(q2, k2, v2, attn_mask=b2).sum().backward()
    torch.testing.assert_close(bias.grad, b2.grad, rtol=1e-4, atol=1e-5)
    attn = tet.DotProductAttention(2, 16, qkv_format="bshd",
                                   attn_mask_type="no_mask",
                                   softmax_type="off-by-one")
    assert attn.softmax_offset is None
    attn = tet.DotProductAttention(2, 16, qkv_format="bshd",
                                   attn_mask_type="no_mask",
                                   softmax_type="learnable")
    attn(q.detach(), k.detach(), v.detach()).sum().backward()
    assert attn.softmax_offset.shape == (2,)  # TE's parameter shape
    assert attn.softmax_offset.grad.shape == (2,)
    assert attn.softmax_offset.grad.abs().sum() > 0


def test_dot_product_attention_formats_and_padding():
    q, k, v = qkv(grad=False)
    sbhd = tet.DotProductAttention(4, 16, num_gqa_groups=2)  # TE: sbhd, causal
    out = sbhd(q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1))
    assert out.shape == (16, 2, 64)
    want = sdpa(q, k, v, is_causal=True).transpose(0, 1).flatten(2)
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
    # Padding: TE's bool masks, True where a position is padding.
    lengths = torch.tensor([16, 9])
    pad = torch.arange(16)[None, :] >= lengths[:, None]  # [b, s]
    attn = tet.DotProductAttention(4, 16, num_gqa_groups=2, qkv_format="bshd",
                                   attn_mask_type="padding")
    out = attn(q, k, v, attention_mask=pad[:, None, None, :])
    keep = ~pad[:, None, None, :]  # SDPA: True = attend
    want = sdpa(q, k, v, attn_mask=keep.expand(2, 4, 16, 16))
    valid = ~pad  # padded query rows are 0 in te, undefined-ish in SDPA
    torch.testing.assert_close(out.reshape(2, 16, 4, 16)[valid], want[valid],
                               rtol=1e-5, atol=1e-5)
    assert (out.reshape(2, 16, 4, 16)[pad] == 0).all()


def test_dropout_seeds_come_from_torch():
    q, k, v = qkv(grad=False)
    attn = tet.DotProductAttention(4, 16, num_gqa_groups=2, qkv_format="bshd",
                                   attention_dropout=0.3)
    torch.manual_seed(5)
    a = attn(q, k, v)
    torch.manual_seed(5)
    b = attn(q, k, v)
    c = attn(q, k, v)
    torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert not torch.equal(a, c)
    attn.eval()  # no dropout outside training, as in TE
    torch.testing.assert_close(attn(q, k, v),
                               sdpa(q, k, v, is_causal=True).flatten(2),
                               rtol=1e-5, atol=1e-5)


def test_bf16_tensors_in_and_out_without_copies():
    q, k, v = qkv(dtype=torch.bfloat16, grad=False)
    o = tet.attention(q, k, v)
    assert o.dtype == torch.bfloat16
    want = sdpa(q.float(), k.float(), v.float(), is_causal=True)
    torch.testing.assert_close(o.float(), want, rtol=2**-7, atol=2**-7)
    # The torch outputs are the arrays the kernel wrote, not copies: record
    # what the runtime returns for the op's program.
    x = torch.randn(32, 64, dtype=torch.bfloat16)
    ops._forget_programs()  # other tests' quantize programs of this shape
    ops.quantize(x)
    (program,) = [p for key, p in ops._PROGRAMS.items()
                  if key[0][0] == "quantize" and key[1][0] == ("bf16",
                                                               (32, 64))]
    returned = []
    run = program.run
    program.run = lambda *a: returned.extend(run(*a)) or returned
    try:
        q = ops.quantize(x)
    finally:
        program.run = run
    assert q.data.dtype == torch.float8_e4m3fn
    assert q.data.data_ptr() == returned[0].ctypes.data
    assert q.amax.data_ptr() == returned[-1].ctypes.data


def test_fp8_ops_roundtrip():
    x = torch.randn(64, 128)
    for mode in ("per_tensor", "mxfp8_1x32", "block_1x128"):
        q = tet.quantize(x, mode=mode, usage="both")
        back = tet.dequantize(q, torch.float32)
        ref = ops.quantize(x.numpy(), mode=mode, usage="both").dequantize(
            "f32")
        np.testing.assert_array_equal(back.numpy(), ref)
        col = tet.dequantize(q, torch.float32, columnwise=True)
        assert col.shape == (x.shape if mode == "mxfp8_1x32" else
                             x.shape[::-1])
    a, w = tet.quantize(x), tet.quantize(torch.randn(32, 128))
    y = tet.scaled_matmul(a, w, transpose_b=True)
    want = (a.data.float() * a.scale_inv) @ (w.data.float() * w.scale_inv).T
    torch.testing.assert_close(y.float(), want, rtol=2**-8, atol=1e-3)


@pytest.mark.parametrize("mode", ["per_tensor", "mxfp8_1x32", "block_1x128",
                                  "block_128x128"])
@pytest.mark.parametrize("gemm", ["fprop", "dgrad", "wgrad"])
def test_scaled_matmul_op_every_mode(mode, gemm):
    """te_mlir::scaled_matmul takes every scaling mode, each operand on the
    copy whose scales run along K: bit-equal to te_mlir.ops.scaled_matmul on
    the numpy Float8Tensors of the same values, and traced whole by
    torch.compile."""
    x = torch.randn(64, 128)
    w = torch.randn(96, 128)
    dy = torch.randn(64, 96)
    # Float8BlockScaling: activations and gradients 1x128, weights 128x128.
    act = "block_1x128" if mode == "block_128x128" else mode
    xq = tet.quantize(x, mode=act, usage="both")
    wq = tet.quantize(w, mode=mode, usage="both")
    gq = tet.quantize(dy, "e5m2", mode=act, usage="both")
    npq = lambda t, m, fp8="e4m3": ops.quantize(t.numpy(), fp8, mode=m,
                                                usage="both")
    if gemm == "fprop":    # y = x W^T
        args, np_args, kw = (xq, wq), (npq(x, act), npq(w, mode)), {
            "transpose_b": True}
    elif gemm == "dgrad":  # dx = dy W
        args, np_args, kw = (gq, wq), (npq(dy, act, "e5m2"), npq(w, mode)), {}
    else:                  # dW = dy^T x (1x128 by 1x128 for the block recipe)
        args, np_args, kw = (gq, xq), (npq(dy, act, "e5m2"), npq(x, act)), {
            "transpose_a": True}
    y = tet.scaled_matmul(*args, out_dtype=torch.float32, **kw)
    want = ops.scaled_matmul(*np_args, out_dtype="f32", **kw)
    np.testing.assert_array_equal(y.numpy(), want)
    # Each case is a new graph of the same code: without a reset, dynamo's
    # recompile limit would end the tracing after eight.
    torch._dynamo.reset()
    compiled = torch.compile(
        lambda a, b: tet.scaled_matmul(a, b, out_dtype=torch.float32, **kw),
        fullgraph=True)
    np.testing.assert_array_equal(compiled(*args).numpy(), want)
    with pytest.raises(TypeError, match="b must be a Float8Tensor"):
        tet.scaled_matmul(args[0], torch.randn(96, 128), **kw)


NEGATE_SOURCE = """
func.func @q(%x: tensor<2x4xf32>, %s: tensor<f32>)
    -> (tensor<2x4xf8E4M3FN>, tensor<f32>, tensor<f32>) {
  %d, %si, %a = te.quantize %x scale(%s) mode per_tensor
      : tensor<2x4xf32>, tensor<f32>
      -> tensor<2x4xf8E4M3FN>, tensor<f32>, tensor<f32>
  return %d, %si, %a : tensor<2x4xf8E4M3FN>, tensor<f32>, tensor<f32>
}
"""


def test_negative_and_conjugate_views_are_resolved():
    """torch's negative views keep the sign in a flag that DLPack drops: a
    Module call, ops and te_mlir.torch all compute on -t, not on t."""
    t = torch.arange(1, 9, dtype=torch.float32).reshape(2, 4)
    neg = torch._neg_view(t)
    assert neg.is_neg()
    want = (-t).to(torch.float8_e4m3fn).view(torch.uint8).numpy()
    module = te_mlir.compile(NEGATE_SOURCE)
    data, _, _ = module(neg, torch.tensor(1.0))
    np.testing.assert_array_equal(data.view(np.uint8), want)
    # Numerically it is the input given as -t.
    data, _, _ = module(-t, torch.tensor(1.0))
    np.testing.assert_array_equal(data.view(np.uint8), want)
    # The same for a negative scale given as a view, and for the ops.
    data, _, _ = module(t, torch._neg_view(torch.tensor(1.0)))
    np.testing.assert_array_equal(data.view(np.uint8), want)
    q = ops.quantize(neg, scale=torch.tensor(1.0))
    np.testing.assert_array_equal(q.data.view(torch.uint8).numpy(), want)
    q = tet.quantize(torch._neg_view(t.to(torch.bfloat16)),
                     scale=torch.tensor(1.0))
    np.testing.assert_array_equal(q.data.view(torch.uint8).numpy(), want)
    # The input itself is left as it was.
    assert neg.is_neg() and t[0, 0] == 1
    # A conjugate view of a real tensor is the tensor; of a complex one,
    # refused by its dtype (te has no complex types).
    with pytest.raises(te_mlir.DTypeError):
        module(torch.ones(2, 4, dtype=torch.complex64).conj(),
               torch.tensor(1.0))


def test_tensors_off_the_cpu_are_refused_with_a_device_error():
    meta = torch.empty(4, 8, device="meta")  # not on the CPU, like CUDA's
    with pytest.raises(te_mlir.DeviceError, match="CPU tensors"):
        host(meta)
    with pytest.raises(te_mlir.DeviceError, match="meta.*cpu"):
        ops.amax(meta)


def test_dot_product_attention_te_arguments():
    q, k, v = qkv(grad=False)
    # kv_channels sets the default scale, 1/sqrt(kv_channels), as in TE.
    attn = tet.DotProductAttention(4, 4, num_gqa_groups=2, qkv_format="bshd",
                                   attn_mask_type="no_mask")
    torch.testing.assert_close(attn(q, k, v), sdpa(q, k, v, scale=0.5
                                                   ).flatten(2),
                               rtol=1e-5, atol=1e-5)
    # TE's spellings of the mask types.
    pad = torch.zeros(2, 1, 1, 16, dtype=torch.bool)
    pad[1, ..., 11:] = True
    a = tet.DotProductAttention(4, 16, num_gqa_groups=2, qkv_format="bshd",
                                attn_mask_type="causal,padding")
    b = tet.DotProductAttention(4, 16, num_gqa_groups=2, qkv_format="bshd",
                                attn_mask_type="padding_causal")
    assert a.attn_mask_type == "padding_causal"
    torch.testing.assert_close(a(q, k, v, attention_mask=pad),
                               b(q, k, v, attention_mask=pad), rtol=0, atol=0)
    # ALiBi without slopes: TE's default slopes (get_alibi).
    torch.testing.assert_close(tet.default_alibi_slopes(4),
                               torch.tensor([2.0**-2, 2.0**-4, 2.0**-6,
                                             2.0**-8]))
    torch.testing.assert_close(tet.default_alibi_slopes(6),
                               torch.tensor([2.0**-2, 2.0**-4, 2.0**-6,
                                             2.0**-8, 2.0**-1, 2.0**-3]))
    qm, km, vm = qkv(g=4, grad=False)
    alibi = tet.DotProductAttention(4, 16, qkv_format="bshd",
                                    attn_mask_type="no_mask")
    out = alibi(qm, km, vm, core_attention_bias_type="alibi")
    i = torch.arange(16)
    distance = (i[:, None] - i[None, :]).abs().float()
    bias = -tet.default_alibi_slopes(4)[:, None, None] * distance
    torch.testing.assert_close(out, sdpa(qm, km, vm, attn_mask=bias
                                         ).flatten(2), rtol=1e-5, atol=1e-5)
    # thd with sequences padded apart (cu_seqlens_*_padded).
    t = torch.randn(20, 4, 16), torch.randn(20, 2, 16), torch.randn(20, 2, 16)
    cu = torch.tensor([0, 5, 14], dtype=torch.int32)
    padded = torch.tensor([0, 8, 20], dtype=torch.int32)
    thd = tet.DotProductAttention(4, 16, num_gqa_groups=2, qkv_format="thd",
                                  attn_mask_type="padding_causal")
    out = thd(*t, cu_seqlens_q=cu, cu_seqlens_kv=cu, cu_seqlens_q_padded=padded,
              cu_seqlens_kv_padded=padded)
    for start, length in ((0, 5), (8, 9)):
        seq = [x[None, start:start + length] for x in t]
        want = sdpa(*seq, is_causal=True).flatten(2)[0]
        torch.testing.assert_close(out[start:start + length], want,
                                   rtol=1e-5, atol=1e-5)
    assert (out[5:8] == 0).all() and (out[17:] == 0).all()
    with pytest.raises(NotImplementedError, match="tp_size"):
        tet.DotProductAttention(4, 16, tp_size=2)


def test_torch_compile_traces_the_ops():
    q, k, v = qkv()

    def step(q, k, v):
        # dot_product_attention: dynamo cannot call the package
        # te_mlir.torch.attention, the old spelling.
        return tet.dot_product_attention(q, k, v).square().sum()
    compiled = torch.compile(step, backend="aot_eager", fullgraph=True)
    loss = compiled(q, k, v)
    loss.backward()
    q2, k2, v2 = (x.detach().clone().requires_grad_() for x in (q, k, v))
    step(q2, k2, v2).backward()
    torch.testing.assert_close(q.grad, q2.grad, rtol=1e-6, atol=1e-6)


def test_example_block_trains_like_torch_sdpa():
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "python",
                                      "torch_transformer_block.py"),
         "--steps", "3"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "gradients match torch's SDPA" in proc.stdout


# --- Linear under fp8_autocast ----------------------------------------------


def linear_case():
    layer = tet.Linear(64, 32)
    x = torch.randn(2, 16, 64, requires_grad=True)  # 32 tokens: MXFP8 blocks
    dy = torch.randn(2, 16, 32)
    return layer, x, dy


def test_linear_outside_autocast_runs_te_gemms():
    # te's GEMM sums over K in f32 in another order than torch: f32's
    # tolerance, for values of order sqrt(K) * 0.023.
    layer, x, dy = linear_case()
    y = layer(x)
    torch.testing.assert_close(y, F.linear(x, layer.weight, layer.bias))
    y.backward(dy)
    w, b = layer.weight, layer.bias
    want = [torch.autograd.grad(F.linear(x, w, b), t, dy)[0]
            for t in (x, w, b)]
    torch.testing.assert_close([x.grad, w.grad, b.grad], want)


def test_linear_delayed_scaling_runs_te_fp8_gemms_step_after_step():
    layer, x, dy = linear_case()
    r = recipe_module().DelayedScaling(amax_history_len=4)
    x2, w = x.detach().reshape(32, 64), layer.weight.detach()
    g = dy.reshape(32, 32)
    scales = dict(input=1.0, weight=1.0, grad=1.0)  # TE's first scales
    for step in range(2):
        x.grad = None
        layer.zero_grad()
        with tet.fp8_autocast(fp8_recipe=r):
            y = layer(x)
        y.backward(dy)
        # The same GEMMs through te_mlir.ops: x and W in E4M3 with their
        # scales, dy in E5M2 (HYBRID), transposed copies for the backward.
        xq = ops.quantize(x2, "e4m3", scale=scales["input"], transpose=True)
        wq = ops.quantize(w, "e4m3", scale=scales["weight"], transpose=True)
        gq = ops.quantize(g, "e5m2", scale=scales["grad"], transpose=True)
        want_y = ops.scaled_matmul(xq, wq, transpose_b=True,
                                   bias=layer.bias.detach(), out_dtype="f32")
        want_dx = ops.scaled_matmul(gq.data, wq.columnwise_data,
                                    gq.scale_inv, wq.scale_inv,
                                    transpose_b=True, out_dtype="f32")
        want_dw = ops.scaled_matmul(gq.columnwise_data, xq.columnwise_data,
                                    gq.scale_inv, xq.scale_inv,
                                    transpose_b=True, out_dtype="f32")
        torch.testing.assert_close(y.reshape(32, 32), want_y, rtol=0, atol=0)
        torch.testing.assert_close(x.grad.reshape(32, 64), want_dx, rtol=0,
                                   atol=0)
        torch.testing.assert_close(layer.weight.grad, want_dw, rtol=0,
                                   atol=0)
        torch.testing.assert_close(layer.bias.grad, g.sum(0))
        # Each quantizer's history now starts with this step's amax, and
        # its scale is the next step's.
        for role, t in (("input", x2), ("weight", w), ("grad", g)):
            q = layer.quantizers[role]
            assert q.amax_history[0] == t.abs().max().item()
            scales[role] = float(q.scale)
        assert scales["input"] != 1.0
    # And FP8 is close to the high-precision layer (E4M3/E5M2 roundings).
    ref = F.linear(x, layer.weight, layer.bias)
    rel = (y - ref).norm() / ref.norm()
    assert rel < 0.1, rel


def test_linear_block_recipes_and_backward_overrides():
    rec = recipe_module()
    layer, x, dy = linear_case()
    x2, w = x.detach().reshape(32, 64), layer.weight.detach()
    with tet.fp8_autocast(fp8_recipe=rec.MXFP8BlockScaling()):
        y = layer(x)
        y.backward(dy)
    # Each GEMM runs on te.scaled_matmul's MXFP8 operands; the reference is
    # the product of the dequantized copies TE uses (the row-wise ones
    # along K of forward, the column-wise ones for dgrad's W and wgrad's
    # dy and x), which the block scales make exact up to the f32 sums.
    mx = lambda t: ops.quantize(t, mode="mxfp8_1x32", usage="both")
    xq, wq, gq = mx(x2), mx(w), mx(dy.reshape(32, 32))
    row = lambda q: q.dequantize("f32")
    col = lambda q: q.dequantize("f32", columnwise=True)
    torch.testing.assert_close(y.reshape(32, 32), row(xq) @ row(wq).T +
                               layer.bias.detach())
    torch.testing.assert_close(x.grad.reshape(32, 64), row(gq) @ col(wq))
    torch.testing.assert_close(layer.weight.grad, col(gq).T @ col(xq))
    x.grad = None
    layer.zero_grad()
    with tet.fp8_autocast(fp8_recipe=rec.Float8BlockScaling()):
        y = layer(x)
        y.backward(dy)
    # Float8BlockScaling: 1x128 blocks for x and dy, 128x128 for W; the
    # column-wise copies are stored transposed.
    b1 = lambda t: ops.quantize(t, mode="block_1x128", usage="both")
    xq, gq = b1(x2), b1(dy.reshape(32, 32))
    wq = ops.quantize(w, mode="block_128x128", usage="both")
    torch.testing.assert_close(y.reshape(32, 32), row(xq) @ row(wq).T +
                               layer.bias.detach())
    torch.testing.assert_close(x.grad.reshape(32, 64), row(gq) @ col(wq).T)
    torch.testing.assert_close(layer.weight.grad, col(gq) @ col(xq).T)
    # high_precision: the backward GEMMs on the unquantized tensors.
    x.grad = None
    layer.zero_grad()
    hp = rec.Float8CurrentScaling(backward_override="high_precision")
    with tet.fp8_autocast(fp8_recipe=hp):
        layer(x).backward(dy)
    g = dy.reshape(32, 32)
    torch.testing.assert_close(x.grad.reshape(32, 64), g @ w)
    torch.testing.assert_close(layer.weight.grad, g.T @ x2)


def test_linear_calibration_records_amaxes_in_high_precision():
    rec = recipe_module()
    layer, x, dy = linear_case()
    r = rec.DelayedScaling(amax_history_len=2)
    with tet.fp8_autocast(enabled=False, calibrating=True, fp8_recipe=r):
        y = layer(x)
    torch.testing.assert_close(y, F.linear(x, layer.weight, layer.bias),
                               rtol=0, atol=0)
    assert layer.quantizers["input"].amax_history[0] == x.abs().max().item()
    assert layer.quantizers["weight"].scale != 1.0


def recipe_module():
    from te_mlir import recipe
    return recipe
