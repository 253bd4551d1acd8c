"""te.rope and te.rope_backward through te_mlir.ops against float64
references written from TE's fused_rope.cu (the op's description): the
positions of every token (start positions, thd's cu_seqlens, context
parallelism's dual-chunk order), the rotation of the first d2 channels
(halves or interleaved pairs), the rest copied.

Tolerances: the output is rounded once to its type (half an ulp: bf16
2^-8, f16 2^-11, f32 2^-24, of itself); before that, cos and sin are f32
values within an ulp of the angle's (te computes them in f64), and
x c + r s is two f32 products and a sum: 2^-22 of |x c| + |r s| bounds
both."""

import os

import ml_dtypes
import numpy as np
import pytest

from te_mlir import ops
from te_mlir.errors import CompileError, DeviceError, ShapeError

DTYPES = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "f16": np.float16}
HALF_ULP = {"f32": 2.0 ** -24, "bf16": 2.0 ** -8, "f16": 2.0 ** -11}


def rope_freqs(positions, d2, base=10000.0):
    """TE's RotaryPositionEmbedding: [positions, 1, 1, d2] f32 angles."""
    inv = 1.0 / base ** (np.arange(0, d2, 2, dtype=np.float64) / d2)
    angles = np.outer(np.arange(positions), inv)
    return np.concatenate([angles, angles], -1)[:, None, None, :].astype(
        np.float32)


def token_positions(format, shape, cu_seqlens, start, cp_size, cp_rank):
    """TE's s_id_for_freqs per token: [b, s] (sbhd/bshd) or [t] (thd; -1
    past the last sequence)."""
    def offset(s_id, n):
        if cp_size == 1:
            return 0
        if s_id < n // 2:
            return cp_rank * n // 2
        return n * cp_size - (cp_rank + 1) * n // 2 - n // 2
    if format == "thd":
        out = np.full(shape[0], -1)
        for i in range(len(cu_seqlens) - 1):
            begin, end = cu_seqlens[i] // cp_size, cu_seqlens[i + 1] // cp_size
            for t in range(begin, end):
                s_id = t - begin
                out[t] = s_id + (start[i] if start is not None else 0) + \
                    offset(s_id, end - begin)
        return out
    b, s = (shape[1], shape[0]) if format == "sbhd" else shape[:2]
    return np.array([[s_id + (start[i] if start is not None else 0)
                      + offset(s_id, s) for s_id in range(s)]
                     for i in range(b)])


def rope_reference(x, freqs, format, interleaved, positions, backward=False):
    """(output, magnitude of its terms), float64."""
    x = x.astype(np.float64)
    d2 = freqs.shape[-1]
    angles = freqs[:, 0, 0, :].astype(np.float64)
    if format == "thd":
        rows = positions
    elif format == "sbhd":
        rows = positions.T  # [s, b]
    else:
        rows = positions
    valid = rows >= 0
    theta = angles[np.where(valid, rows, 0)][..., None, :]  # [.., 1, d2]
    c, s = np.cos(theta), np.sin(theta)
    xr = x[..., :d2]
    if interleaved:
        pair = np.empty_like(xr)
        pair[..., 0::2], pair[..., 1::2] = xr[..., 1::2], xr[..., 0::2]
        sign = np.where(np.arange(d2) % 2 == 0, -1.0, 1.0)
        if backward:
            s_pair = np.empty_like(s)
            s_pair[..., 0::2], s_pair[..., 1::2] = s[..., 1::2], s[..., 0::2]
            rotated = pair * s_pair * -sign
        else:
            rotated = pair * sign * s
    else:
        h = d2 // 2
        pair = np.concatenate([xr[..., h:], xr[..., :h]], -1)
        sign = np.where(np.arange(d2) < h, -1.0, 1.0)
        if backward:
            s_pair = np.concatenate([s[..., h:], s[..., :h]], -1)
            rotated = pair * s_pair * -sign
        else:
            rotated = pair * sign * s
    y = x.copy()
    y[..., :d2] = np.where(valid[..., None, None], xr * c + rotated, xr)
    magnitude = np.abs(x).copy()
    magnitude[..., :d2] = np.abs(xr * c) + np.abs(rotated)
    return y, magnitude


def test_reference_backward_is_the_transpose():
    """The backward formula is the adjoint of the forward: <R x, g> =
    <x, R^T g> for every x and g."""
    rng = np.random.default_rng(1)
    for interleaved in (False, True):
        freqs = rope_freqs(8, 6)
        pos = token_positions("bshd", (2, 5, 3, 10), None, None, 1, 0)
        x = rng.standard_normal((2, 5, 3, 10))
        g = rng.standard_normal((2, 5, 3, 10))
        y, _ = rope_reference(x, freqs, "bshd", interleaved, pos)
        dx, _ = rope_reference(g, freqs, "bshd", interleaved, pos,
                               backward=True)
        np.testing.assert_allclose((y * g).sum(), (x * dx).sum(), rtol=1e-12)


def assert_close(got, want, magnitude, dtype, what):
    got = np.asarray(got).astype(np.float64)
    assert got.shape == want.shape, what
    bound = HALF_ULP[dtype] * np.abs(want) + 2.0 ** -22 * magnitude + 1e-30
    bad = ~(np.abs(got - want) <= bound)
    assert not bad.any(), f"{what}: {bad.sum()} of {bad.size} outside"


CASES = {
    # format, shape, dtype, d2, interleaved, start positions, cp
    "sbhd-bf16": ("sbhd", (12, 2, 3, 64), "bf16", 64, False, None, (1, 0)),
    "bshd-f32-fraction-interleaved": ("bshd", (2, 9, 4, 40), "f32", 16, True,
                                      None, (1, 0)),
    "sbhd-f16-start": ("sbhd", (7, 3, 2, 32), "f16", 32, False, [0, 5, 100],
                       (1, 0)),
    "bshd-bf16-cp-rank1": ("bshd", (2, 8, 2, 32), "bf16", 24, False, None,
                           (2, 1)),
    "sbhd-f32-cp4-rank2-start": ("sbhd", (6, 2, 1, 16), "f32", 16, True,
                                 [3, 0], (4, 2)),
    "thd-bf16": ("thd", (20, 3, 64), "bf16", 32, False, None, (1, 0)),
    "thd-f32-start-interleaved": ("thd", (20, 2, 16), "f32", 16, True,
                                  [4, 0, 9, 1], (1, 0)),
    "thd-f32-cp2-rank1": ("thd", (10, 2, 32), "f32", 32, False, None, (2, 1)),
}
CU_SEQLENS = {1: [0, 5, 5, 12, 17], 2: [0, 8, 12, 20, 20]}


@pytest.mark.parametrize("backward", [False, True])
@pytest.mark.parametrize("name", CASES)
def test_rope(name, backward):
    format, shape, dtype, d2, interleaved, start, (cp_size, cp_rank) = \
        CASES[name]
    rng = np.random.default_rng(abs(hash(name)) % 1000)
    x = (rng.standard_normal(shape) * 2).astype(DTYPES[dtype])
    freqs = rope_freqs(256, d2)
    cu = (np.array(CU_SEQLENS[cp_size], np.int32) if format == "thd"
          else None)
    start_arr = np.array(start, np.int32) if start is not None else None
    fn = ops.rope_backward if backward else ops.rope
    got = fn(x, freqs, format, interleaved=interleaved, cu_seqlens=cu,
             start_positions=start_arr, cp_size=cp_size, cp_rank=cp_rank)
    positions = token_positions(format, shape, cu, start, cp_size, cp_rank)
    want, magnitude = rope_reference(x, freqs, format, interleaved,
                                     positions, backward)
    assert np.asarray(got).dtype == DTYPES[dtype]
    assert_close(got, want, magnitude, dtype, name)


def test_large_angles_keep_their_accuracy():
    """Positions up to 32767 with base 10000: angles of 3e4 radians, whose
    cos and sin te computes in f64 (TE: the GPU's sincosf, within 2 ulp)."""
    freqs = rope_freqs(32768, 8)
    x = np.ones((4, 1, 1, 8), np.float32)
    start = np.array([32764], np.int32)
    got = ops.rope(x, freqs, "sbhd", start_positions=start)
    positions = token_positions("sbhd", x.shape, None, [32764], 1, 0)
    want, magnitude = rope_reference(x, freqs, "sbhd", False, positions)
    assert_close(got, want, magnitude, "f32", "large angles")


def test_bad_positions_stop_the_launch():
    freqs = rope_freqs(16, 8)
    x = np.ones((4, 2, 1, 8), np.float32)
    with pytest.raises(DeviceError, match=r"sequence 1 spans positions "
                       r"\[14, 18\) .*outside the 16 rows of freqs"):
        ops.rope(x, freqs, "sbhd", start_positions=np.array([0, 14], np.int32))
    xt = np.ones((6, 1, 8), np.float32)
    with pytest.raises(DeviceError, match=r"cu_seqlens\[2\] = 1 is less than "
                       r"the entry before it \(4\)"):
        ops.rope(xt, freqs, "thd", cu_seqlens=np.array([0, 4, 1], np.int32))
    with pytest.raises(DeviceError, match=r"cu_seqlens\[2\] = 9 is past the 6 "
                       r"tokens"):
        ops.rope(xt, freqs, "thd", cu_seqlens=np.array([0, 4, 9], np.int32))
    with pytest.raises(DeviceError, match="not a multiple of 2 \\* cp_size"):
        ops.rope(xt, freqs, "thd", cu_seqlens=np.array([0, 6, 12], np.int32),
                 cp_size=2, cp_rank=0)


def test_bad_shapes_say_what_to_change():
    freqs = rope_freqs(8, 8)
    with pytest.raises(ShapeError, match="rank-4"):
        ops.rope(np.ones((4, 8), np.float32), freqs)
    with pytest.raises(ShapeError, match="d2 = 8"):
        ops.rope(np.ones((4, 1, 1, 6), np.float32), freqs)
    with pytest.raises(ValueError, match="cu_seqlens"):
        ops.rope(np.ones((4, 1, 8), np.float32), freqs, "thd")
    with pytest.raises(CompileError, match="fewer than the 16"):
        ops.rope(np.ones((16, 1, 1, 8), np.float32), freqs)
    with pytest.raises(CompileError, match="sequence dimension must be even"):
        ops.rope(np.ones((3, 1, 1, 8), np.float32), rope_freqs(32, 8),
                 cp_size=2, cp_rank=1)


def test_channels_past_d2_are_copied_bit_for_bit():
    freqs = rope_freqs(8, 4)
    x = np.ones((2, 1, 1, 8), np.float32)
    bits = x.view(np.uint32)
    bits[..., 6] = 0x7FC01234  # a NaN with a payload
    bits[..., 7] = 0x80000000  # -0
    y = np.asarray(ops.rope(x, freqs)).view(np.uint32)
    assert (y[..., 4:] == bits[..., 4:]).all()


QKV_CASES = {
    # format, leading [s, b] or [b, s], h, split [q, k, v], dtype, d2,
    # interleaved, start positions, (cp_size, cp_rank)
    "sbhd-bf16-gqa": ("sbhd", (6, 2), 3, [32, 16, 16], "bf16", 12, False,
                      None, (1, 0)),
    "bshd-f32-interleaved-start": ("bshd", (2, 5), 2, [16, 8, 8], "f32", 8,
                                   True, [3, 0], (1, 0)),
    "sbhd-f16-cp2-rank1": ("sbhd", (8, 1), 2, [8, 8, 8], "f16", 8, False,
                           None, (2, 1)),
    # Key heads of two d-chunks each (k = 2 v), a rotary fraction.
    "bshd-f32-k-wider-than-v": ("bshd", (2, 3), 2, [64, 32, 16], "f32", 10,
                                False, [1, 4], (1, 0)),
}


def qkv_rope_reference(x, q_freqs, k_freqs, split, format, interleaved,
                       start, cp):
    """TE's fused_qkv_rope_forward_kernel through rope_reference: every d
    (= v) channels of the q and k parts rotate as a head; v is copied.
    Returns [(output, magnitude)] for q [.., h q / k, k], k, v."""
    q, k, d = split
    lead, h = list(x.shape[:2]), x.shape[2]
    out = []
    for offset, size, freqs in ((0, q, q_freqs), (q, k, k_freqs),
                                (q + k, d, None)):
        part = x[..., offset:offset + size].astype(np.float64)
        heads = part.reshape(lead + [h * size // d, d])
        if freqs is None:
            y, magnitude = heads, np.abs(heads)
        else:
            positions = token_positions(format, heads.shape, None, start,
                                        *cp)
            y, magnitude = rope_reference(heads, freqs, format, interleaved,
                                          positions)
        shape = lead + ([h * q // k, k] if offset == 0 else [h, size])
        out.append((y.reshape(shape), magnitude.reshape(shape)))
    return out


@pytest.mark.parametrize("name", QKV_CASES)
def test_qkv_rope(name):
    """te.qkv_rope against TE's kernel (each part's heads of d rotated,
    v copied) and te.qkv_rope_backward against the transposed rotation
    at the unshifted positions (TE's fused backward takes no start
    positions)."""
    format, lead, h, split, dtype, d2, interleaved, start, cp = \
        QKV_CASES[name]
    rng = np.random.default_rng(len(name))
    x = (rng.standard_normal(list(lead) + [h, sum(split)]) * 2).astype(
        DTYPES[dtype])
    q_freqs = rope_freqs(32, d2)
    k_freqs = rope_freqs(32, d2, base=500.0)
    start_arr = np.array(start, np.int32) if start is not None else None
    got = ops.qkv_rope(x, q_freqs, k_freqs, split, format,
                       start_positions=start_arr, interleaved=interleaved,
                       cp_size=cp[0], cp_rank=cp[1])
    want = qkv_rope_reference(x, q_freqs, k_freqs, split, format,
                              interleaved, start, cp)
    for what, g, (w, magnitude) in zip("qkv", got, want):
        assert np.asarray(g).dtype == DTYPES[dtype]
        assert_close(g, w, magnitude, dtype, f"{name} {what}")
    # v is copied bit for bit.
    np.testing.assert_array_equal(
        np.asarray(got[2]).view(np.uint8),
        np.ascontiguousarray(x[..., split[0] + split[1]:]).view(np.uint8))

    grads = [(rng.standard_normal(np.shape(g)) * 2).astype(DTYPES[dtype])
             for g in got]
    dx = np.asarray(ops.qkv_rope_backward(
        *grads, q_freqs, k_freqs, split, format, interleaved=interleaved,
        cp_size=cp[0], cp_rank=cp[1]))
    q, k, d = split
    parts = []
    for grad, freqs, size in ((grads[0], q_freqs, q), (grads[1], k_freqs, k),
                              (grads[2], None, d)):
        heads = grad.astype(np.float64).reshape(
            list(lead) + [h * size // d, d])
        if freqs is None:
            y, magnitude = heads, np.abs(heads)
        else:
            positions = token_positions(format, heads.shape, None, None, *cp)
            y, magnitude = rope_reference(heads, freqs, format, interleaved,
                                          positions, backward=True)
        parts.append((y.reshape(list(lead) + [h, size]),
                      magnitude.reshape(list(lead) + [h, size])))
    want_dx = np.concatenate([p[0] for p in parts], -1)
    assert_close(dx, want_dx, np.concatenate([p[1] for p in parts], -1),
                 dtype, f"{name} backward")


def test_qkv_rope_bad_input_says_what_to_change():
    x = np.zeros((4, 2, 2, 32), np.float32)
    freqs = rope_freqs(8, 8)
    with pytest.raises(ShapeError, match="split must be three sizes"):
        ops.qkv_rope(x, freqs, freqs, [16, 8, 4])
    with pytest.raises(ValueError, match="'sbhd' or 'bshd'"):
        ops.qkv_rope(x, freqs, freqs, [16, 8, 8], "thd")
    with pytest.raises(CompileError, match="'q_freqs' and 'k_freqs' must "
                       "rotate as many channels"):
        ops.qkv_rope(x, freqs, rope_freqs(8, 4), [16, 8, 8])
    with pytest.raises(CompileError, match="'q_freqs' has 2 positions, "
                       "fewer than the 4"):
        ops.qkv_rope(x, rope_freqs(2, 8), freqs, [16, 8, 8])
    with pytest.raises(CompileError, match=r"the rotary dimension d2 \(the "
                       r"last of 'q_freqs', 16\) must be even, > 0 and <= "
                       r"the head dimension d \(the value size, 8\)"):
        ops.qkv_rope(x, rope_freqs(8, 16), rope_freqs(8, 16), [16, 8, 8])
    with pytest.raises(CompileError, match="'start_positions' must have one "
                       r"entry per sequence \(2\)"):
        ops.qkv_rope(x, freqs, freqs, [16, 8, 8],
                     start_positions=np.zeros(3, np.int32))
    # A start position past freqs stops the launch.
    with pytest.raises(DeviceError, match=r"te.qkv_rope at .*: sequence 1 "
                       r"spans positions \[6, 10\) \(start position and "
                       r"length\), outside the 8 rows of freqs"):
        ops.qkv_rope(x, freqs, freqs, [16, 8, 8],
                     start_positions=np.array([0, 6], np.int32))
