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
from te_mlir import ops  # noqa: E402

ROOT = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir)


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TE_CACHE_DIR", str(tmp_path / "cache"))
    torch.manual_seed(0)


def qkv(b=2, s=16, h=4, g=2, d=16, dtype=torch.float32, grad=True):
    q = torch.randn(b, s, h, d, dtype=dtype, requires_grad=grad)
    k = torch.randn(b, s, g, d, dtype=dtype, requires_grad=grad)
    v = torch.randn(b, s, g, d, dtype=dtype, requires_grad=grad)
    return q, k, v


def attention_args(q, k, v, **over):
    """The te_mlir::attention op's positional arguments."""
    kw = dict(bias=None, alibi=None, offset=None, cu_q=None, cu_kv=None,
              len_q=None, len_kv=None, mask_t=None, layout="bshd",
              mask="causal", window=None, brd=None, scale=None,
              bias_type="no_bias", softmax="vanilla", dropout=0.0, seed=0)
    kw.update(over)
    return (q, k, v, *kw.values())


# --- opcheck ---------------------------------------------------------------


def test_opcheck_attention():
    q, k, v = qkv()
    torch.library.opcheck(tet._attention_op, attention_args(q, k, v))
    # A post-scale bias and the learnable softmax: their gradients too.
    bias = torch.randn(1, 4, 16, 16, requires_grad=True)
    offset = torch.randn(1, 4, 1, 1, requires_grad=True)
    torch.library.opcheck(tet._attention_op, attention_args(
        q, k, v, bias=bias, offset=offset, bias_type="post_scale",
        softmax="learnable", mask="no_mask", window=[3, 2]))
    # thd with cu_seqlens, and dropout with its seed.
    qt, kt, vt = (x.detach()[0].requires_grad_() for x in (q, k, v))
    cu = torch.tensor([0, 5, 16], dtype=torch.int32)
    torch.library.opcheck(tet._attention_op, attention_args(
        qt, kt, vt, cu_q=cu, cu_kv=cu, layout="thd", mask="padding_causal",
        dropout=0.2, seed=11))


def test_opcheck_attention_backward():
    q, k, v = qkv(grad=False)
    o, lse = tet._attention_op(*attention_args(q, k, v))
    args = attention_args(q, k, v)
    torch.library.opcheck(tet._attention_backward_op,
                          (q, k, v, o, torch.randn_like(o), lse) + args[3:])


def test_opcheck_fp8_ops():
    x = torch.randn(64, 128, dtype=torch.bfloat16)
    for mode, usage, scale in (("per_tensor", "both", None),
                               ("per_tensor", "columnwise",
                                torch.tensor(2.0)),
                               ("mxfp8_1x32", "both", None),
                               ("block_128x128", "rowwise", None)):
        torch.library.opcheck(tet._quantize_op,
                              (x, scale, "f8E4M3FN", mode, usage, None, 0.0))
    bits = lambda t: t.view(torch.uint8)
    q = tet.quantize(x, transpose=True)
    torch.library.opcheck(tet._dequantize_op, (
        bits(q.data), q.scale_inv, "f8E4M3FN", "per_tensor", False, "f32"))
    m = tet.quantize(x, mode="mxfp8_1x32", usage="columnwise")
    torch.library.opcheck(tet._dequantize_op, (
        bits(m.columnwise_data), bits(m.columnwise_scale_inv), "f8E4M3FN",
        "mxfp8_1x32", True, "bf16"))
    w = tet.quantize(torch.randn(32, 128), "e5m2")
    for out, out_scale in (("bf16", None), ("f8E4M3FN", torch.tensor(4.0))):
        torch.library.opcheck(tet._scaled_matmul_op, (
            bits(q.data), bits(w.data), q.scale_inv, w.scale_inv, None,
            out_scale, "f8E4M3FN", "f8E5M2", False, True, False, out))


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
    assert attn.softmax_offset.grad.shape == (1, 2, 1, 1)
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
    # An op's torch output is the array the kernel wrote, not a copy.
    x = torch.randn(32, 64, dtype=torch.bfloat16)
    data = ops.quantize(x).data
    assert data.dtype == torch.float8_e4m3fn
    array = ops.quantize(x.view(torch.int16).numpy().view(
        te_mlir.numpy_dtype("bf16"))).data
    wrapped = ops._to_torch(array, torch.device("cpu"))
    assert wrapped.data_ptr() == array.ctypes.data


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


def test_cuda_tensors_are_refused_with_a_device_error():
    class FakeCuda:
        device = torch.device("cuda")
    with pytest.raises(te_mlir.DeviceError, match="CPU tensors"):
        tet._host(FakeCuda())


def test_torch_compile_traces_the_ops():
    q, k, v = qkv()

    def step(q, k, v):
        return tet.attention(q, k, v).square().sum()
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
