"""Transformer Engine's FP8 recipes, with TE's names and defaults
(transformer_engine/common/recipe), the state they keep across steps, and
an fp8_autocast context.

    from te_mlir import recipe
    r = recipe.DelayedScaling(amax_history_len=16, margin=1)
    x_quantizer = r.quantizer("input")       # keeps amax history and scale
    q = x_quantizer(x)                       # a te_mlir.ops.Float8Tensor
    with recipe.fp8_autocast(fp8_recipe=r):  # te_mlir.torch.Linear: FP8
        y = linear(x)

A recipe is configuration, as in TE; a Quantizer is one tensor's share of
it (TE's per-tensor FP8 metadata): DelayedScaling's quantizer quantizes
with its current scale and then folds the tensor's amax into its history
and computes the next step's scale (te.update_delayed_scaling), so step
n+1 uses what step n saw. Float8CurrentScaling, MXFP8BlockScaling and
Float8BlockScaling keep no state: their scales come from the tensor
itself. HYBRID quantizes forward tensors ("input", "weight") as E4M3 and
gradients ("grad") as E5M2.
"""

import contextlib
import os
import threading
from dataclasses import dataclass
from enum import Enum

import numpy as np

from . import ops

__all__ = ["DelayedScaling", "Float8BlockScaling", "Float8CurrentScaling",
           "Format", "MMParams", "MXFP8BlockScaling", "QParams", "Quantizer",
           "Recipe",
           "autocast", "fp8_autocast", "get_fp8_group", "get_fp8_recipe",
           "is_fp8_calibrating", "is_fp8_enabled"]

ROLES = ("input", "weight", "grad")


class Format(Enum):
    """FP8 formats of a recipe: the forward tensors' and the gradients'."""
    E4M3 = ("f8E4M3FN", "f8E4M3FN")
    E5M2 = ("f8E5M2", "f8E5M2")
    HYBRID = ("f8E4M3FN", "f8E5M2")

    @property
    def fwd(self):
        """te type of forward tensors (inputs and weights)."""
        return self.value[0]

    @property
    def bwd(self):
        """te type of gradients."""
        return self.value[1]


@dataclass(frozen=True)
class QParams:
    """Current and block scaling's scale parameters (TE's QParams)."""
    power_2_scale: bool = False
    amax_epsilon: float = 0.0


@dataclass(frozen=True)
class MMParams:
    """TE's GEMM parameters. te.scaled_matmul always accumulates in f32
    (what TE's split accumulator asks for), whatever this says."""
    use_split_accumulator: bool = True


_BACKWARD_OVERRIDES = (None, "high_precision", "dequantized")
# As in TE, the environment is read once, when the recipes are defined.
_ENV_BACKWARD_OVERRIDE = os.getenv("NVTE_BACKWARD_OVERRIDE", None)


def _env_flag(name):
    return os.getenv(name, "0") == "1"


def _check_common(recipe):
    if recipe.fp8_format == Format.E5M2:
        raise ValueError("Pure E5M2 training is not supported (as in "
                         "Transformer Engine): use Format.HYBRID or E4M3")
    if recipe.backward_override not in _BACKWARD_OVERRIDES:
        raise ValueError("backward_override (NVTE_BACKWARD_OVERRIDE) must be "
                         "unset or one of: 'high_precision', 'dequantized'")


class Recipe:
    """Base of the recipes: which one it is (classmethods, as in TE), and
    its quantizers."""

    @classmethod
    def delayed(cls):
        return issubclass(cls, DelayedScaling)

    @classmethod
    def float8_current_scaling(cls):
        return issubclass(cls, Float8CurrentScaling)

    @classmethod
    def float8_per_tensor_scaling(cls):
        return issubclass(cls, (DelayedScaling, Float8CurrentScaling))

    @classmethod
    def mxfp8(cls):
        return issubclass(cls, MXFP8BlockScaling)

    @classmethod
    def float8_block_scaling(cls):
        return issubclass(cls, Float8BlockScaling)

    def fp8_type(self, role):
        """The te FP8 type of tensors of `role` ("input", "weight",
        "grad")."""
        ops._choice("role", role, ROLES)
        return self.fp8_format.bwd if role == "grad" else self.fp8_format.fwd

    def qparams(self, role):
        """The QParams of tensors of `role` (current and block scaling)."""
        return {"input": self.fp8_quant_fwd_inp,
                "weight": self.fp8_quant_fwd_weight,
                "grad": self.fp8_quant_bwd_grad}[role]

    def quantizer(self, role="input"):
        """A Quantizer of one tensor of `role` under this recipe."""
        return Quantizer(self, role)


@dataclass
class DelayedScaling(Recipe):
    """Per-tensor scales from the amax history of earlier steps.

    scale = (fp8_max / amax) / 2^margin with amax the max over the last
    amax_history_len steps ("max") or the latest ("most_recent"); with
    reduce_amax the amax is all-reduced (MAX) over the fp8_autocast's
    group first. TE's scaling_factor_compute_algo (a Python callable) has
    no te equivalent and must stay None."""
    margin: int = 0
    fp8_format: Format = Format.HYBRID
    amax_history_len: int = 1024
    amax_compute_algo: str = "max"
    scaling_factor_compute_algo: object = None
    reduce_amax: bool = True
    fp8_dpa: bool = False
    fp8_mha: bool = False
    backward_override: str = _ENV_BACKWARD_OVERRIDE

    def __post_init__(self):
        _check_common(self)
        ops._choice("amax_compute_algo", self.amax_compute_algo,
                    ops.AMAX_ALGOS)
        if self.scaling_factor_compute_algo is not None:
            raise ValueError("scaling_factor_compute_algo: te computes the "
                             "scale as te.update_delayed_scaling defines it; "
                             "a custom function is not supported")
        if self.margin < 0 or self.amax_history_len < 1:
            raise ValueError("DelayedScaling needs margin >= 0 and "
                             "amax_history_len >= 1")


@dataclass
class Float8CurrentScaling(Recipe):
    """Per-tensor scales from each tensor's own amax (fp8_max / amax,
    floored at the QParams' amax_epsilon, a power of two with
    power_2_scale).

    As in TE, fp8_quant_fwd_inp / _fwd_weight / _bwd_grad are class
    attributes fixed when the module is imported (from
    NVTE_FP8_CURRENT_SCALING_POWER_2_SCALES): use_power_2_scales given to
    the constructor does not reach them; assign recipe.fp8_quant_fwd_inp =
    QParams(...) to change one."""
    use_power_2_scales: bool = _env_flag(
        "NVTE_FP8_CURRENT_SCALING_POWER_2_SCALES")
    fp8_format: Format = Format.HYBRID
    fp8_quant_fwd_inp = QParams(power_2_scale=use_power_2_scales)
    fp8_quant_fwd_weight = QParams(power_2_scale=use_power_2_scales)
    fp8_quant_bwd_grad = QParams(power_2_scale=use_power_2_scales)
    fp8_gemm_fprop: MMParams = MMParams(use_split_accumulator=False)
    fp8_gemm_dgrad: MMParams = MMParams(use_split_accumulator=True)
    fp8_gemm_wgrad: MMParams = MMParams(use_split_accumulator=True)
    fp8_dpa: bool = False
    fp8_mha: bool = False
    backward_override: str = _ENV_BACKWARD_OVERRIDE

    def __post_init__(self):
        _check_common(self)


@dataclass
class MXFP8BlockScaling(Recipe):
    """One E8M0 scale per 32 consecutive values (te mode mxfp8_1x32).
    TE's enable_2d_quantization (32x32 weight blocks) has no te mode."""
    margin: int = 0
    fp8_format: Format = Format.E4M3
    fp8_dpa: bool = False
    fp8_mha: bool = False
    backward_override: str = _ENV_BACKWARD_OVERRIDE
    enable_2d_quantization: bool = False

    def __post_init__(self):
        _check_common(self)
        if self.enable_2d_quantization:
            raise NotImplementedError(
                "MXFP8BlockScaling(enable_2d_quantization=True): te has no "
                "2-D MXFP8 scaling mode")


@dataclass
class Float8BlockScaling(Recipe):
    """f32 scales per 1x128 block (1-D, dim 1) or 128x128 block (2-D,
    dim 2): inputs and gradients 1-D, weights 2-D by default; power-of-two
    scales unless NVTE_FP8_BLOCK_SCALING_FP32_SCALES=1 when the module is
    imported (fp8_quant_* are class attributes, as in TE)."""
    use_f32_scales: bool = _env_flag("NVTE_FP8_BLOCK_SCALING_FP32_SCALES")
    fp8_format: Format = Format.E4M3
    fp8_quant_fwd_inp = QParams(power_2_scale=not use_f32_scales)
    fp8_quant_fwd_weight = QParams(power_2_scale=not use_f32_scales)
    fp8_quant_bwd_grad = QParams(power_2_scale=not use_f32_scales)
    x_block_scaling_dim: int = 1
    w_block_scaling_dim: int = 2
    grad_block_scaling_dim: int = 1
    fp8_gemm_fprop: MMParams = MMParams(use_split_accumulator=True)
    fp8_gemm_dgrad: MMParams = MMParams(use_split_accumulator=True)
    fp8_gemm_wgrad: MMParams = MMParams(use_split_accumulator=True)
    fp8_dpa: bool = False
    fp8_mha: bool = False
    backward_override: str = _ENV_BACKWARD_OVERRIDE

    def __post_init__(self):
        dims = {"x": self.x_block_scaling_dim, "w": self.w_block_scaling_dim,
                "grad": self.grad_block_scaling_dim}
        for name, dim in dims.items():
            if dim not in (1, 2):
                raise ValueError(f"Only 1D or 2D blocks supported for {name}")
        for first, second in (("x", "w"), ("x", "grad"), ("w", "grad")):
            if dims[first] == 2 and dims[second] == 2:
                raise ValueError("2D by 2D block gemm not supported.")
        if self.fp8_dpa or self.fp8_mha:
            raise ValueError("FP8 attention is not supported for "
                             "Float8BlockScaling.")
        _check_common(self)

    def mode(self, role):
        """The te scaling mode of tensors of `role`."""
        dim = {"input": self.x_block_scaling_dim,
               "weight": self.w_block_scaling_dim,
               "grad": self.grad_block_scaling_dim}[role]
        return "block_1x128" if dim == 1 else "block_128x128"


class Quantizer:
    """Quantizes one tensor (of `role`) step after step under a recipe.

    Under DelayedScaling it keeps amax_history ([amax_history_len], f32)
    and scale (f32 scalar), both starting as TE starts them (zeros, 1.0);
    each call quantizes with the current scale and then updates both from
    the tensor's amax (all-reduced with MAX over the fp8_autocast's group
    when reduce_amax is on and the group has several ranks)."""

    def __init__(self, recipe, role="input"):
        self.recipe = recipe
        self.role = ops._choice("role", role, ROLES)
        self.fp8 = recipe.fp8_type(role)
        if recipe.delayed():
            self.amax_history = np.zeros(recipe.amax_history_len, np.float32)
            self.scale = np.array(1.0, np.float32)

    def __repr__(self):
        return (f"<te_mlir.recipe.Quantizer {type(self.recipe).__name__} "
                f"{self.role} {self.fp8}>")

    def mode(self):
        """The te scaling mode this quantizer uses."""
        r = self.recipe
        if r.float8_per_tensor_scaling():
            return "per_tensor"
        return "mxfp8_1x32" if r.mxfp8() else r.mode(self.role)

    def __call__(self, x, usage=None, transpose=False, device=None):
        """x quantized (a te_mlir.ops.Float8Tensor); `usage` and
        `transpose` as in ops.quantize. Where the mode needs a matrix (the
        block modes, and the transposed copy of per_tensor), an input of
        higher rank is seen as one, its leading dimensions flattened, as
        TE does."""
        r = self.recipe
        mode = self.mode()
        columnwise = transpose or usage in ("columnwise", "both")
        if len(x.shape) > 2 and mode != "mxfp8_1x32" and (
                columnwise or mode != "per_tensor"):
            x = x.reshape(-1, x.shape[-1])
        kw = dict(usage=usage, transpose=transpose, device=device)
        if r.delayed():
            q = ops.quantize(x, self.fp8, scale=self.scale, **kw)
            self.update(q.amax, device=device)
            return q
        if r.float8_current_scaling():
            p = r.qparams(self.role)
            return ops.quantize(x, self.fp8, pow2_scales=p.power_2_scale,
                                epsilon=p.amax_epsilon, **kw)
        if r.mxfp8():
            return ops.quantize(x, self.fp8, mode=mode, **kw)
        p = r.qparams(self.role)
        return ops.quantize(x, self.fp8, mode=mode,
                            pow2_scales=p.power_2_scale,
                            epsilon=p.amax_epsilon, **kw)

    def fused(self):
        """The keywords with which an op that quantizes its own output
        (ops.layer_norm, rms_norm, activation, activation_backward) casts
        it as this quantizer would: quantize=, fp8=, and scale= under
        DelayedScaling, pow2_scales= and amax_epsilon= under current and
        block scaling. record(q) then ends DelayedScaling's step."""
        r = self.recipe
        kw = dict(quantize=self.mode(), fp8=self.fp8)
        if r.delayed():
            kw["scale"] = self.scale
        elif not r.mxfp8():
            p = r.qparams(self.role)
            kw.update(pow2_scales=p.power_2_scale,
                      amax_epsilon=p.amax_epsilon or None)
        return kw

    def record(self, q, device=None):
        """After an op quantized with fused()'s keywords: DelayedScaling
        folds the output's amax (q.amax) into its history."""
        if self.recipe.delayed():
            self.update(q.amax, device=device)

    def update(self, amax, device=None):
        """DelayedScaling's step: folds `amax` (reduced over the group if
        the recipe says so) into the history and computes the next
        scale."""
        r = self.recipe
        amax = np.asarray(amax, np.float32)
        group = get_fp8_group()
        if r.reduce_amax and (group or ops.world(device)[1]) > 1:
            amax = ops.all_reduce(amax, "max", group_size=group,
                                  device=device)
        self.amax_history, self.scale = ops.update_delayed_scaling(
            self.amax_history, amax, self.scale, self.fp8,
            amax_algo=r.amax_compute_algo, margin=r.margin, device=device)


class _AutocastState(threading.local):
    def __init__(self):
        self.stack = []


_STATE = _AutocastState()


def _top():
    return _STATE.stack[-1] if _STATE.stack else (False, False, None, None)


def is_fp8_enabled():
    """Whether code runs inside fp8_autocast(enabled=True)."""
    return _top()[0]


def is_fp8_calibrating():
    """Whether fp8_autocast(calibrating=True) asks to collect amaxes while
    computing in high precision."""
    return _top()[1]


def get_fp8_recipe():
    """The recipe of the innermost fp8_autocast, else TE's default off
    Blackwell: DelayedScaling()."""
    recipe = _top()[2]
    return recipe if recipe is not None else DelayedScaling()


def get_fp8_group():
    """The group size amaxes are reduced over (None: the whole job)."""
    return _top()[3]


@contextlib.contextmanager
def fp8_autocast(enabled=True, calibrating=False, fp8_recipe=None,
                 fp8_group=None):
    """TE's fp8_autocast: inside it, te_mlir.torch.Linear runs its GEMMs in
    FP8 under `fp8_recipe` (default DelayedScaling()), and with
    calibrating=True (and enabled=False) records amaxes while computing in
    high precision; `fp8_group` is the group size DelayedScaling reduces
    amaxes over. Quantizers read the group too. Nested contexts stack; the
    state is per thread."""
    if fp8_recipe is not None and not isinstance(fp8_recipe, Recipe):
        raise TypeError(f"fp8_recipe must be a te_mlir.recipe.Recipe, got "
                        f"{type(fp8_recipe).__name__}")
    _STATE.stack.append((bool(enabled), bool(calibrating), fp8_recipe,
                         fp8_group))
    try:
        yield
    finally:
        _STATE.stack.pop()


def autocast(enabled=True, calibrating=False, recipe=None,
             amax_reduction_group=None):
    """TE's newer name of fp8_autocast, with its argument names."""
    return fp8_autocast(enabled, calibrating, recipe, amax_reduction_group)
