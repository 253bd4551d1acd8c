"""te.cross_entropy and te.cross_entropy_backward through te_mlir.ops,
against float64 references written from TE's pytorch/triton/
cross_entropy.py (the op's description), against torch's cross_entropy
where the two agree, and with the reference's gradient checked by finite
differences.

Tolerances: the loss is f32 arithmetic over a row of V logits (the sum d
of V exponentials, each within a few ulp): |error| <= (V + 8) 2^-24 of
the magnitudes it combines (|m| + |log d| + |x_y|, and the smoothing sum's
sum of |eps x_i|). The gradient is exp(x - m) / d, relative error
(V + 8) 2^-24 through d, then rounded to the logits' type (half an ulp:
bf16 2^-8, f16 2^-11, f32 2^-24; below the normal range half the
subnormals' spacing, f16 2^-25), the target's entry twice."""

import os
import shutil
import socket
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
import torch

from te_mlir import ops
from te_mlir.errors import DeviceError, DTypeError, ShapeError

DTYPES = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "f16": np.float16}
HALF_ULP = {"f32": 2.0 ** -24, "bf16": 2.0 ** -8, "f16": 2.0 ** -11}
# Half the spacing of the subnormals: the absolute error of rounding a
# value below the normal range (gradients of unlikely classes in f16).
HALF_SUBNORMAL = {"f32": 2.0 ** -150, "bf16": 2.0 ** -134, "f16": 2.0 ** -25}


def reference(x, target, smoothing, reduce, ignore=-100):
    """(loss, grad, loss bound magnitude, grad magnitude) in float64."""
    shape = x.shape
    x = x.reshape(-1, shape[-1]).astype(np.float64)
    t = target.reshape(-1).astype(np.int64)
    rows, vocab = x.shape
    m = x.max(axis=1)
    d = np.exp(x - m[:, None]).sum(axis=1)
    lse = m + np.log(d)
    ignored = t == ignore
    y = np.clip(t, 0, vocab - 1)
    xy = x[np.arange(rows), y]
    eps = smoothing / vocab
    loss = lse - xy
    magnitude = np.abs(m) + np.abs(np.log(d)) + np.abs(xy)
    if smoothing > 0:
        loss = (1 - smoothing) * loss + (-eps * x.sum(axis=1) + smoothing * lse)
        magnitude = magnitude + np.abs(eps * x).sum(axis=1)
    loss = np.where(ignored, 0.0, loss)
    # TE's n_non_ignore: the rows not ignored, at least 1.
    n = max(int((~ignored).sum()), 1) if reduce else 1
    p = np.exp(x - lse[:, None])
    grad = (p - eps) / n
    grad[np.arange(rows), y] -= (1 - smoothing) / n
    grad[ignored] = 0.0
    gmag = (p + eps) / n
    gmag[np.arange(rows), y] += (1 - smoothing) / n
    if reduce:
        return loss.sum() / n, grad.reshape(shape), magnitude.sum() / n, \
            gmag.reshape(shape)
    return (loss.reshape(shape[:-1]), grad.reshape(shape),
            magnitude.reshape(shape[:-1]), gmag.reshape(shape))


def test_reference_gradient_matches_finite_differences():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 6))
    t = np.array([1, -100, 4])
    for smoothing in (0.0, 0.2):
        _, grad, _, _ = reference(x, t, smoothing, True)
        numeric = np.zeros_like(x)
        for i in np.ndindex(x.shape):
            step = np.zeros_like(x)
            step[i] = 1e-6
            numeric[i] = (reference(x + step, t, smoothing, True)[0]
                          - reference(x - step, t, smoothing, True)[0]) / 2e-6
        np.testing.assert_allclose(numeric, grad, rtol=1e-6, atol=1e-8)


CASES = {
    # shape, dtype, label smoothing, reduce_loss, target dtype, ignore index
    "bf16-3d": ((2, 7, 1000), "bf16", 0.0, False, np.int64, -100),
    "f32-smoothing-reduce": ((9, 333), "f32", 0.1, True, np.int64, -100),
    "f16-one-row-i32": ((1, 64), "f16", 0.0, True, np.int32, -100),
    "bf16-smoothing-ignore-1": ((4, 3, 130), "bf16", 0.25, False, np.int32,
                                -1),
    # Vocabularies of whole vectors of 16 (the rows' maxima in vectors,
    # four, two and one accumulators; 64 above too).
    "bf16-vectors-smoothing-reduce": ((5, 1024), "bf16", 0.1, True, np.int64,
                                      -100),
    "f32-vectors-two": ((3, 2, 96), "f32", 0.0, False, np.int32, -100),
    "f16-vectors-one": ((6, 48), "f16", 0.0, False, np.int64, -100),
}


@pytest.mark.parametrize("vocab", [64, 96, 48])
def test_the_max_is_found_in_every_column(vocab):
    """Row r's largest logit, 500, at column r: a max that missed it would
    overflow exp(x - m) to inf. Every column, so every accumulator and
    lane of the vector maxima."""
    x = np.zeros((vocab, vocab), np.float32)
    x[np.arange(vocab), np.arange(vocab)] = 500.0
    t = (np.arange(vocab) * 7 + 3) % vocab
    loss, grad = ops.cross_entropy(x, t)
    want, want_grad, magnitude, gmag = reference(x, t, 0.0, False)
    assert np.isfinite(np.asarray(loss)).all()
    assert (np.abs(np.asarray(loss) - want)
            <= (vocab + 8) * 2.0 ** -24 * magnitude).all()
    assert_gradient_close(grad, want_grad, gmag, vocab, "f32")


@pytest.mark.parametrize("vocab", [64, 70])
def test_a_nan_logit_stays_in_its_row(vocab):
    rng = np.random.default_rng(vocab)
    x = (rng.standard_normal((4, vocab)) * 4).astype(np.float32)
    x[1, 9] = np.nan
    t = rng.integers(0, vocab, 4)
    loss, grad = ops.cross_entropy(x, t)
    loss, grad = np.asarray(loss), np.asarray(grad)
    assert np.isnan(loss[1]) and np.isnan(grad[1]).all()
    rows = [0, 2, 3]
    want, want_grad, magnitude, gmag = reference(x[rows], t[rows], 0.0,
                                                 False)
    assert (np.abs(loss[rows] - want)
            <= (vocab + 8) * 2.0 ** -24 * magnitude).all()
    assert_gradient_close(grad[rows], want_grad, gmag, vocab, "f32")


def assert_gradient_close(grad, want, gmag, vocab, dtype):
    """The gradient within the bound of the module's docstring."""
    bound = (HALF_ULP[dtype] * np.abs(want) + HALF_SUBNORMAL[dtype]
             + (vocab + 8) * 2.0 ** -24 * gmag)
    error = np.abs(np.asarray(grad).astype(np.float64) - want)
    assert (error <= bound).all(), (
        f"{(error > bound).sum()} of {error.size} outside the bound")


@pytest.mark.parametrize("grad_dtype", [None, "f32"])
@pytest.mark.parametrize("name", CASES)
def test_forward_and_backward(name, grad_dtype):
    """The gradient is computed in f32 and rounded once: to the logits'
    dtype (half an ulp of it beyond f32's error), or kept in f32 as TE
    keeps it; the backward scales it and rounds once to the logits'
    dtype."""
    shape, dtype, smoothing, reduce, target_dtype, ignore = CASES[name]
    rng = np.random.default_rng(len(name))
    x = (rng.standard_normal(shape) * 4).astype(DTYPES[dtype])
    t = rng.integers(0, shape[-1], shape[:-1]).astype(target_dtype)
    t.reshape(-1)[::5] = ignore
    loss, grad = ops.cross_entropy(x, t, label_smoothing=smoothing,
                                   reduce_loss=reduce, ignore_index=ignore,
                                   grad_dtype=grad_dtype)
    want, want_grad, magnitude, gmag = reference(x, t, smoothing, reduce,
                                                 ignore)
    vocab = shape[-1]
    loss = np.asarray(loss)
    assert loss.dtype == np.float32 and loss.shape == np.shape(want)
    assert (np.abs(loss - want) <= (vocab + 8) * 2.0 ** -24 * magnitude
            + 1e-30).all()
    grad = np.asarray(grad)
    gtype = grad_dtype or dtype
    assert grad.dtype == DTYPES[gtype] and grad.shape == shape
    assert_gradient_close(grad, want_grad, gmag, vocab, gtype)
    ignored = (t == ignore).reshape(-1)
    assert (grad.reshape(-1, vocab)[ignored] == 0).all()

    dloss = (np.float32(0.75) if reduce
             else rng.standard_normal(shape[:-1]).astype(np.float32))
    dx = np.asarray(ops.cross_entropy_backward(grad, dloss, dtype=dtype))
    scale = dloss if reduce else dloss[..., None]
    exact = grad.astype(np.float64) * scale
    assert dx.dtype == DTYPES[dtype]
    assert (np.abs(dx.astype(np.float64) - exact)
            <= HALF_ULP[dtype] * np.abs(exact) + 2.0 ** -24 * np.abs(exact)
            + HALF_SUBNORMAL[dtype] + 1e-30).all()


def test_reduced_over_ignored_rows_only():
    """Every row ignored: N is clamped to 1, the loss and gradient are 0."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    loss, grad = ops.cross_entropy(x, np.full(3, -100), reduce_loss=True)
    assert float(np.asarray(loss)) == 0.0
    assert not np.asarray(grad).any()


def test_gradient_dtypes_are_checked():
    x = np.zeros((2, 8), np.float32).astype(ml_dtypes.bfloat16)
    with pytest.raises(DTypeError, match="grad_dtype must be f32 or the "
                       r"logits' dtype \(bf16\), got f16"):
        ops.cross_entropy(x, np.zeros(2, np.int64), grad_dtype="f16")
    with pytest.raises(DTypeError, match=r"dtype must be grad's \(bf16\), "
                       "got f16"):
        ops.cross_entropy_backward(x, np.float32(1.0), dtype="f16")


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_per_row_loss_is_torchs(smoothing):
    """Per row, TE's loss is torch's (label smoothing included); reduced,
    both divide by the rows not ignored."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((12, 50)).astype(np.float32) * 3
    t = rng.integers(0, 50, 12)
    t[[2, 7]] = -100
    loss, _ = ops.cross_entropy(x, t, label_smoothing=smoothing)
    want = torch.nn.functional.cross_entropy(
        torch.from_numpy(x), torch.from_numpy(t), reduction="none",
        label_smoothing=smoothing).numpy()
    np.testing.assert_allclose(np.asarray(loss), want, rtol=2e-6, atol=2e-6)
    mean, _ = ops.cross_entropy(x, t, label_smoothing=smoothing,
                                reduce_loss=True)
    torch_mean = torch.nn.functional.cross_entropy(
        torch.from_numpy(x), torch.from_numpy(t),
        label_smoothing=smoothing).item()
    np.testing.assert_allclose(float(np.asarray(mean)), torch_mean,
                               rtol=2e-6)


def test_bad_targets_stop_the_launch():
    x = np.zeros((4, 10), np.float32)
    with pytest.raises(DeviceError, match=r"target\[2\] = 10 is outside "
                       r"\[0, 10\) \(the vocabulary\) and is not the ignore "
                       r"index -100"):
        ops.cross_entropy(x, np.array([0, 1, 10, 3]))
    with pytest.raises(DeviceError, match=r"target\[0\] = -100"):
        ops.cross_entropy(x, np.array([-100, 1, 2, 3]), ignore_index=-1)


def test_bad_shapes_say_what_to_change():
    with pytest.raises(ShapeError, match=r"target must have shape \[4\]"):
        ops.cross_entropy(np.zeros((4, 10), np.float32), np.zeros(5, np.int64))
    with pytest.raises(ValueError, match="label_smoothing"):
        ops.cross_entropy(np.zeros((4, 10), np.float32),
                          np.zeros(4, np.int64), label_smoothing=1.0)
    with pytest.raises(ShapeError, match="dloss"):
        ops.cross_entropy_backward(np.zeros((4, 10), np.float32),
                                   np.zeros(3, np.float32))


def parallel_reference(x, target, smoothing, reduce, ignore, rank, world):
    """TE's parallel_cross_entropy on rank `rank` of `world`, x the whole
    vocabulary's logits: the whole vocabulary's loss except that the
    smoothing sum covers the rank's own columns only (TE sums -eps x_i per
    rank), and the rank's columns of the gradient. (loss, grad, loss
    magnitude, grad magnitude) as reference() gives them."""
    loss, grad, magnitude, gmag = reference(x, target, smoothing, reduce,
                                            ignore)
    vocab = x.shape[-1] // world
    own = slice(rank * vocab, (rank + 1) * vocab)
    x64 = x.astype(np.float64)
    eps = smoothing / x.shape[-1]
    # Remove the other ranks' share of the smoothing sum.
    others = -eps * (x64.sum(axis=-1) - x64[..., own].sum(axis=-1))
    others = np.where(target == ignore, 0.0, others)
    if reduce:
        n = max(int((target != ignore).sum()), 1)
        loss = loss - others.sum() / n
    else:
        loss = loss - others
    return loss, grad[..., own], magnitude, gmag[..., own]


def run_ranks(tmp_path, ranks, script):
    """Runs `script` as `ranks` ranks of an mpirun job; each rank writes
    rank.py.<rank>.ok when it got through its checks."""
    mpirun = shutil.which("mpirun")
    assert mpirun, "mpirun is missing: scripts/bootstrap.sh installs OpenMPI"
    path = tmp_path / "rank.py"
    path.write_text(script)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    proc = subprocess.run([mpirun, "-np", str(ranks), "--oversubscribe",
                           "--bind-to", "none", sys.executable, str(path)],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for rank in range(ranks):
        assert (tmp_path / f"rank.py.{rank}.ok").exists(), rank


RANK_SCRIPT = """
import sys, numpy as np, ml_dtypes
sys.path.insert(0, {testdir!r})
from te_mlir import ops
from te_mlir.errors import DeviceError
from test_cross_entropy import DTYPES, HALF_ULP, parallel_reference
rank, world = ops.world()
assert world == 3, world
# The group lists the world's ranks out of order: world rank 2 holds the
# first classes, so a group rank is not the world rank, and the combine
# runs over three ranks' statistics.
order = [2, 0, 1]
me = order.index(rank)
rng = np.random.default_rng(5)
for shape, dtype, smoothing, reduce, tdtype in [
        ((6, 3 * 37), "bf16", 0.0, False, np.int64),
        ((3, 4, 3 * 50), "f32", 0.2, True, np.int32),
        ((5, 3 * 16), "f16", 0.1, False, np.int64)]:
    x = (rng.standard_normal(shape) * 4).astype(DTYPES[dtype])
    t = rng.integers(0, shape[-1], shape[:-1]).astype(tdtype)
    t.reshape(-1)[::4] = -100
    vocab = shape[-1] // 3
    shard = np.ascontiguousarray(x[..., me * vocab:(me + 1) * vocab])
    loss, grad = ops.cross_entropy(shard, t, label_smoothing=smoothing,
                                   reduce_loss=reduce, grad_dtype="f32",
                                   ranks=order)
    want, want_grad, magnitude, gmag = parallel_reference(
        x, t, smoothing, reduce, -100, me, 3)
    loss = np.asarray(loss)
    assert loss.shape == np.shape(want), (loss.shape, np.shape(want))
    err = np.abs(loss - want)
    assert (err <= (shape[-1] + 8) * 2.0 ** -24 * magnitude + 1e-30).all(), \\
        (shape, err.max())
    grad = np.asarray(grad).astype(np.float64)
    bound = HALF_ULP["f32"] * np.abs(want_grad) + \\
        (shape[-1] + 8) * 2.0 ** -24 * gmag
    assert (np.abs(grad - want_grad) <= bound).all(), (shape, rank)
# A class of no rank stops the launch on every rank.
try:
    ops.cross_entropy(np.zeros((2, 8), np.float32), np.array([3, 24]),
                      group_size=3)
    raise AssertionError("target 24 of 24 classes was accepted")
except DeviceError as e:
    assert "target[1] = 24 is outside [0, 24)" in str(e), e
open(__file__ + f".{{rank}}.ok", "w").close()
"""


def test_vocab_parallel_under_mpirun(tmp_path):
    """`mpirun -np 3`: each rank holds a third of the vocabulary (TE's
    parallel_cross_entropy with a three-rank dist_process_group, its
    ranks out of order); the loss and each rank's columns of the gradient
    match the whole vocabulary's reference, with TE's per-rank smoothing
    sum."""
    run_ranks(tmp_path, 3, RANK_SCRIPT.format(
        testdir=os.path.dirname(os.path.abspath(__file__))))


def test_group_of_one_rank_is_no_group():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 40)).astype(np.float32)
    t = rng.integers(0, 40, 5)
    plain = ops.cross_entropy(x, t, label_smoothing=0.1)
    grouped = ops.cross_entropy(x, t, label_smoothing=0.1, group_size=1)
    for a, b in zip(plain, grouped):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_a_group_needs_a_rank():
    x = np.zeros((2, 8), np.float32)
    with pytest.raises(ValueError, match="group_size must be >= 1, got 0"):
        ops.cross_entropy(x, np.zeros(2, np.int64), group_size=0)


class FakeDist:
    """torch.distributed as _vocab_group sees it: a world and a group."""

    def __init__(self, rank, world, group_ranks, initialized=True):
        self.rank, self.world, self.ranks = rank, world, group_ranks
        self.initialized = initialized

    def get_world_size(self, group=None):
        if group is None:
            return self.world
        return len(self.ranks) if self.rank in self.ranks else -1

    def get_rank(self):
        return self.rank

    def is_initialized(self):
        return self.initialized

    def get_process_group_ranks(self, group):
        return self.ranks


@pytest.mark.parametrize("te_world,dist,message", [
    ((1, 4), FakeDist(1, 4, [0, 1], initialized=False),
     "torch.distributed is not initialized"),
    ((1, 4), FakeDist(0, 4, [0, 1]), "torch's is rank 0 of 4"),
    ((1, 4), FakeDist(1, 4, [1, 2]),
     r"holds ranks \[1, 2\].*for rank 1 is \[0, 1\]"),
    ((2, 4), FakeDist(2, 4, [3, 2]), r"holds ranks \[3, 2\]"),
    ((0, 4), FakeDist(0, 4, [1, 2]), "not a rank of dist_process_group"),
])
def test_torch_groups_te_cannot_honour_are_refused(monkeypatch, te_world,
                                                   dist, message):
    import torch.distributed
    from te_mlir.torch import cross_entropy as module
    for name in ("get_world_size", "get_rank", "is_initialized",
                 "get_process_group_ranks"):
        monkeypatch.setattr(torch.distributed, name, getattr(dist, name))
    monkeypatch.setattr(module._ops, "world", lambda: te_world)
    error = ValueError if "not a rank" in message else NotImplementedError
    with pytest.raises(error, match=message):
        module._vocab_group(object())


def test_torch_groups_te_honours_are_taken(monkeypatch):
    import torch.distributed
    from te_mlir.torch import cross_entropy as module
    dist = FakeDist(3, 4, [2, 3])
    for name in ("get_world_size", "get_rank", "is_initialized",
                 "get_process_group_ranks"):
        monkeypatch.setattr(torch.distributed, name, getattr(dist, name))
    monkeypatch.setattr(module._ops, "world", lambda: (3, 4))
    assert module._vocab_group(object()) == 2
    assert module._vocab_group(None) is None
    dist.ranks = [3]
    assert module._vocab_group(object()) is None


TORCH_RANK_SCRIPT = """
import os, torch, torch.distributed as dist
from te_mlir import ops
from te_mlir.torch.cross_entropy import parallel_cross_entropy
rank, world = ops.world()
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="{port}")
dist.init_process_group("gloo", rank=rank, world_size=world)
torch.manual_seed(0)
vocab = 24
x = torch.randn(2, 5, world * vocab) * 3
t = torch.randint(0, world * vocab, (2, 5))
t[0, 1] = -100
shard = x[..., rank * vocab:(rank + 1) * vocab].clone().requires_grad_()
full = x.clone().requires_grad_()
for reduce, smoothing in ((False, 0.0), (True, 0.0), (False, 0.1)):
    loss = parallel_cross_entropy(shard, t, smoothing, reduce,
                                  dist.group.WORLD)
    want = parallel_cross_entropy(full, t, smoothing, reduce)
    if smoothing:
        # TE's per-rank smoothing sum: the other rank's columns' share.
        eps = smoothing / (world * vocab)
        other = x.sum(-1) - x[..., rank * vocab:(rank + 1) * vocab].sum(-1)
        want = want - torch.where(t == -100, 0.0, -eps * other)
    torch.testing.assert_close(loss, want, rtol=1e-5, atol=1e-5)
    w = torch.randn(want.shape)
    (loss * w).sum().backward()
    (want * w).sum().backward()
    torch.testing.assert_close(
        shard.grad, full.grad[..., rank * vocab:(rank + 1) * vocab],
        rtol=1e-5, atol=1e-7)
    shard.grad = full.grad = None
dist.destroy_process_group()
open(__file__ + f".{{rank}}.ok", "w").close()
"""


def test_torch_vocab_parallel_under_mpirun(tmp_path):
    """te_mlir.torch's parallel_cross_entropy with a two-rank
    dist_process_group (torch.distributed's world, te's world under
    mpirun): each rank's loss and its columns' gradient are those of the
    whole vocabulary on one rank."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run_ranks(tmp_path, 2, TORCH_RANK_SCRIPT.format(port=port))
