"""What te_mlir.torch's ops and modules share: moving torch tensors to the
ops of te_mlir.ops, FP8 data as raw bits, and the autocast dtype."""

import torch

from .. import ops as _ops
from ..errors import DeviceError

TORCH_DTYPES = {name: getattr(torch, attr)
                 for name, attr in _ops._TORCH_DTYPES.items()}


def host(t):
    """t as the ops take it: detached (DLPack refuses tensors that require
    grad), on the CPU."""
    if t is None:
        return None
    if t.device.type != "cpu":
        raise DeviceError(
            f"te_mlir.torch takes CPU tensors; got one on {t.device}. The "
            "runtime's cuda device cannot take torch's device memory yet: "
            "move the tensor with .cpu(), or compile a program for "
            "te_mlir.Device('cuda') with te_mlir.compile")
    return t.detach()


def empty(like):
    """The placeholder of an absent optional output."""
    return like.new_empty((0,), dtype=torch.float32)


# --- FP8 -----------------------------------------------------------------
#
# The ops carry FP8 data and E8M0 scales as their raw bits, uint8 tensors
# (as TE's Float8Tensor keeps its data), with the FP8 type named by a
# string: torch computes nothing on float8 tensors on the CPU, not even
# the comparisons opcheck makes. The Python functions view them as
# torch's float8 dtypes.

RAW = (torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e8m0fnu)


def bits(t):
    """An FP8 or E8M0 tensor's raw bits (a view); other tensors as they
    are."""
    return t.view(torch.uint8) if t is not None and t.dtype in RAW else t


def typed(t, te_dtype):
    """Raw bits viewed as `te_dtype` (a te FP8 or E8M0 type name)."""
    return t.view(TORCH_DTYPES[te_dtype]) if t.dtype == torch.uint8 else t


def scale_type(mode):
    """The te type of `mode`'s scale_inv."""
    return "f8E8M0FNU" if mode == "mxfp8_1x32" else "f32"


def fake(like, te_dtype, shape):
    dtype = TORCH_DTYPES[te_dtype]
    return like.new_empty(shape, dtype=torch.uint8 if dtype in RAW
                          else dtype)


def compute_dtype(default):
    """The dtype a module computes in: torch.autocast's CPU dtype where
    autocast is on, `default` (the parameters' dtype) elsewhere, as TE
    picks its activation dtype."""
    if torch.is_autocast_enabled("cpu"):
        return torch.get_autocast_dtype("cpu")
    return default


def cpu_device(name, device):
    """`device` (None: the CPU) checked to be the CPU, for module
    constructors."""
    device = torch.device(device) if device is not None else \
        torch.device("cpu")
    if device.type != "cpu":
        raise DeviceError(
            f"{name}: device={device}; te_mlir.torch runs on the CPU (the "
            "runtime's cuda device cannot take torch's device memory yet)")
    return device
