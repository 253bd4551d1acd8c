"""te_mlir.torch.LayerNorm and RMSNorm: TE's constructor, initialization and
forward, their custom ops through torch.library.opcheck (schema, autograd,
fake tensors), forward and backward against torch's own norms
(torch.nn.functional.layer_norm and rms_norm with weight + 1 for TE's
zero-centered gamma), and torch.compile.

f32 comparisons: te sums over the hidden size in f32 in another order
than torch, so they agree to a few ulps of the values' scale (1e-5)."""

import pytest

torch = pytest.importorskip(
    "torch", reason="torch is not installed (scripts/bootstrap.sh installs "
    "it): te_mlir.torch is untested")
import torch.nn.functional as F  # noqa: E402

import te_mlir  # noqa: E402
import te_mlir.torch as tet  # noqa: E402


@pytest.fixture(autouse=True)
def seeded():
    torch.manual_seed(0)


def test_opcheck_norm():
    x = torch.randn(6, 40, dtype=torch.float32)
    w = torch.randn(40, requires_grad=True)
    b = torch.randn(40, requires_grad=True)
    torch.library.opcheck(torch.ops.te_mlir.norm, (x.requires_grad_(), w, b,
                                         "layernorm", 1e-5, False))
    torch.library.opcheck(torch.ops.te_mlir.norm, (x, w, None, "rmsnorm", 1e-6, True))


def test_te_constructor_and_initialization():
    ln = tet.LayerNorm(64)
    assert ln.eps == 1e-5 and not ln.zero_centered_gamma
    assert torch.equal(ln.weight, torch.ones(64))
    assert torch.equal(ln.bias, torch.zeros(64))
    # TE's positional order: normalized_shape, eps, sequence_parallel,
    # params_dtype, zero_centered_gamma, hidden_size.
    rms = tet.RMSNorm(32, 1e-6, True, torch.bfloat16, True)
    assert rms.eps == 1e-6 and rms.zero_centered_gamma
    assert rms.weight.dtype == torch.bfloat16
    assert torch.equal(rms.weight, torch.zeros(32, dtype=torch.bfloat16))
    assert rms.bias is None and rms.weight.sequence_parallel
    assert tet.LayerNorm(hidden_size=16).normalized_shape == (16,)
    assert tet.LayerNorm((4, 8), dtype=torch.float64).weight.shape == (4, 8)
    with pytest.raises(ValueError, match="disagree"):
        tet.LayerNorm(16, hidden_size=32)
    with pytest.raises(TypeError, match="normalized_shape"):
        tet.RMSNorm()
    with pytest.raises(te_mlir.DeviceError, match="runs on the CPU"):
        tet.LayerNorm(16, device="cuda")


@pytest.mark.parametrize("zero_centered", [False, True])
def test_layer_norm_matches_torch(zero_centered):
    ln = tet.LayerNorm((4, 24), eps=1e-4, zero_centered_gamma=zero_centered)
    with torch.no_grad():
        ln.weight.add_(torch.randn(4, 24) * 0.3)
        ln.bias.add_(torch.randn(4, 24))
    x = (torch.randn(2, 3, 4, 24) * 2 + 1).requires_grad_()
    y = ln(x)
    g = ln.weight + (1 if zero_centered else 0)
    xr = x.detach().clone().requires_grad_()
    gr = g.detach().clone().requires_grad_()
    br = ln.bias.detach().clone().requires_grad_()
    want = F.layer_norm(xr, (4, 24), gr, br, 1e-4)
    torch.testing.assert_close(y, want, rtol=1e-5, atol=1e-5)
    dy = torch.randn_like(y)
    y.backward(dy)
    want.backward(dy)
    torch.testing.assert_close(x.grad, xr.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(ln.weight.grad, gr.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(ln.bias.grad, br.grad, rtol=1e-5, atol=1e-5)


def test_rms_norm_matches_torch_in_bf16():
    rms = tet.RMSNorm(96, eps=1e-6, params_dtype=torch.bfloat16)
    with torch.no_grad():
        rms.weight.mul_(torch.rand(96, dtype=torch.bfloat16) + 0.5)
    x = torch.randn(5, 7, 96, dtype=torch.bfloat16, requires_grad=True)
    y = rms(x)
    assert y.dtype == torch.bfloat16 and y.shape == x.shape
    xr = x.detach().double().requires_grad_()
    wr = rms.weight.detach().double().requires_grad_()
    want = F.rms_norm(xr, (96,), wr, 1e-6)
    # One rounding to bf16 (2^-8 of the value) of results below ~6.
    torch.testing.assert_close(y.double(), want, rtol=2 ** -8, atol=2 ** -8)
    dy = torch.randn_like(y)
    y.backward(dy)
    want.backward(dy.double())
    # Gradients in bf16: one rounding, plus f32 sums of bf16 products.
    torch.testing.assert_close(x.grad.double(), xr.grad, rtol=2 ** -7,
                               atol=2 ** -6)
    torch.testing.assert_close(rms.weight.grad.double(), wr.grad,
                               rtol=2 ** -7, atol=2 ** -6 * 35)


def test_autocast_runs_the_norm_in_the_autocast_dtype():
    ln = tet.LayerNorm(32)
    x = torch.randn(4, 32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = ln(x)
    assert y.dtype == torch.bfloat16
    want = F.layer_norm(x.bfloat16().double(), (32,))
    torch.testing.assert_close(y.double(), want, rtol=2 ** -8, atol=2 ** -8)


def test_bad_input_shape_is_a_clear_error():
    with pytest.raises(ValueError, match=r"do not end in normalized_shape "
                                         r"\[16\]"):
        tet.RMSNorm(16)(torch.randn(4, 8))


def test_compile_traces_the_norms():
    model = torch.nn.Sequential(tet.LayerNorm(48), torch.nn.Linear(48, 48),
                                tet.RMSNorm(48))
    x = torch.randn(3, 48)
    want = model(x)
    compiled = torch.compile(model, fullgraph=True)
    torch.testing.assert_close(compiled(x), want)
