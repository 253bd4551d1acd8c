"""TE's operations as Python functions over arrays.

    from te_mlir import ops
    o, lse = ops.attention(q, k, v, layout="bshd", mask="causal",
                           return_lse=True)
    x8 = ops.quantize(x, fp8="e4m3")          # current scaling
    y = ops.scaled_matmul(x8, w8, transpose_b=True, out_dtype="bf16")

Each function writes the te program of one op for the arrays' dtypes and
shapes and the attributes given, compiles it on the shared Jit
(te_mlir.default_jit(): memory and disk caches) the first time that
configuration is seen, and keeps the loaded module: a later call with the
same configuration runs it at once. The attributes are the dialect's
(docs/TEDialect.md), whose verifier checks them; a configuration it
rejects raises CompileError with its diagnostic.

Arrays are numpy arrays (ml_dtypes for bf16 and FP8) or CPU torch
tensors. On the cpu device inputs are read in place and outputs are the
buffers the kernel wrote; torch inputs give torch outputs (over the same
memory). device= (a te_mlir.Device or a device name) runs the program on
another device, copying host arrays to it and the results back; torch
tensors on a GPU are refused with DeviceError (the runtime does not take
torch's device memory yet).

The collectives (all_reduce, all_gather, reduce_scatter, all_to_all,
permute) run over groups of the job's ranks: under mpirun -np N python
..., the cpu device's MPI world (see world()).
"""

import operator
import threading

import numpy as np

from . import (_DTYPES, _RAW_BITS, Device, _from_raw_bits, _resolve_views,
               default_jit)
from .errors import DeviceError, DTypeError, ShapeError

__all__ = ["Float8Tensor", "all_gather", "all_reduce", "all_to_all", "amax",
           "attention", "attention_backward", "compute_scale", "dequantize",
           "dtype_name", "layer_norm", "layer_norm_backward", "matmul",
           "permute", "qkv_rope", "qkv_rope_backward", "quantize",
           "reduce_scatter", "rms_norm",
           "rms_norm_backward", "scaled_matmul", "update_delayed_scaling",
           "world"]

_FP8_ALIASES = {"e4m3": "f8E4M3FN", "e5m2": "f8E5M2",
                "float8_e4m3fn": "f8E4M3FN", "float8_e5m2": "f8E5M2"}
_NAME_ALIASES = {"float32": "f32", "float64": "f64", "float16": "f16",
                 "bfloat16": "bf16", "float8_e8m0fnu": "f8E8M0FNU",
                 "bool": "i1", "int8": "i8", "int32": "i32", "int64": "i64",
                 **_FP8_ALIASES}
_NUMPY_NAMES = {dtype: name for name, dtype in _DTYPES.items()}
_SEEN = dict(_NUMPY_NAMES)  # dtype objects already named


class _TorchBits(dict):
    """torch's integer dtype of each raw-bit width (torch imported at first
    use)."""

    def __missing__(self, size):
        import torch
        self.update({1: torch.uint8, 2: torch.int16})
        return self[size]


_TORCH_BITS = _TorchBits()
_TORCH_DTYPES = {"f32": "float32", "f64": "float64", "f16": "float16",
                 "bf16": "bfloat16", "f8E4M3FN": "float8_e4m3fn",
                 "f8E5M2": "float8_e5m2", "f8E8M0FNU": "float8_e8m0fnu",
                 "i1": "bool", "i8": "int8", "i32": "int32", "i64": "int64"}

LAYOUTS = ("bshd", "sbhd", "bhsd", "thd")
MASKS = ("no_mask", "padding", "causal", "causal_bottom_right",
         "padding_causal", "padding_causal_bottom_right", "arbitrary")
BIAS_KINDS = ("no_bias", "pre_scale", "post_scale", "alibi")
SOFTMAX_KINDS = ("vanilla", "off_by_one", "learnable")
SCALING_MODES = ("per_tensor", "mxfp8_1x32", "block_1x128", "block_128x128")
USAGES = ("rowwise", "columnwise", "both")
AMAX_ALGOS = ("max", "most_recent")


def dtype_name(dtype):
    """The te element type name of a dtype spelled as te spells it ("bf16",
    "f8E4M3FN"), as TE does ("e4m3", "e5m2"), or as a numpy, ml_dtypes or
    torch dtype."""
    name = _SEEN.get(dtype) if not isinstance(dtype, str) else None
    if name:
        return name
    if isinstance(dtype, np.dtype):
        name = _NUMPY_NAMES.get(dtype)
        if name:
            return name
    elif isinstance(dtype, str):
        name = _NAME_ALIASES.get(dtype, dtype)
        if name in _DTYPES:
            return name
    text = str(dtype)
    if text.startswith("torch."):
        name = _NAME_ALIASES.get(text[len("torch."):])
        if name:
            _SEEN[dtype] = name  # torch's dtypes: str() is slow
            return name
    else:
        try:
            name = _NUMPY_NAMES.get(np.dtype(dtype))
        except TypeError:
            name = None
        if name:
            return name
    raise DTypeError(f"{dtype!r} is not an element type te knows (f32, f64, "
                     "f16, bf16, f8E4M3FN / e4m3, f8E5M2 / e5m2, f8E8M0FNU, "
                     "i1, i8, i32, i64)")


def _fp8_name(fp8):
    name = dtype_name(fp8)
    if name not in ("f8E4M3FN", "f8E5M2"):
        raise DTypeError(f"fp8={fp8!r}: expected e4m3 (f8E4M3FN) or e5m2 "
                         "(f8E5M2)")
    return name


def _choice(what, value, allowed):
    if value not in allowed:
        raise ValueError(f"{what}={value!r}: expected one of "
                         f"{', '.join(allowed)}")
    return value


def _is_torch(x):
    return type(x).__module__.split(".")[0] == "torch"


class _Arg:
    """One array argument: its te dtype, shape, and the object handed to
    the module (a contiguous array)."""

    __slots__ = ("value", "dtype", "shape", "torch_device")

    def __init__(self, value, what):
        if _is_torch(value):
            self.torch_device = value.device
            if value.device.type != "cpu":
                raise DeviceError(
                    f"{what}: a torch tensor on {value.device}; te_mlir takes "
                    "CPU tensors (the runtime's cuda device does not take "
                    "torch's device memory yet): move it with .cpu()")
            # A negative or conjugate view's sign lives in a flag that
            # .numpy() would refuse and DLPack would drop.
            value = _resolve_views(value)
            if not value.is_contiguous():
                value = value.contiguous()
            self.dtype = dtype_name(value.dtype)
            # A numpy view of the same memory: cheaper to hand over than
            # torch's DLPack export (bf16 and FP8 through their bits).
            value = value.detach()
            raw = _RAW_BITS.get(self.dtype)
            if raw is None:
                value = value.numpy()
            else:
                bits = _TORCH_BITS[raw.itemsize]
                value = value.view(bits).numpy().view(_DTYPES[self.dtype])
        else:
            self.torch_device = None
            if isinstance(value, (float, int)) and not isinstance(value,
                                                                  bool):
                value = np.asarray(value, np.float32)
            value = np.asarray(value)
            if not value.flags.c_contiguous:  # (keeps 0-d arrays 0-d)
                value = np.ascontiguousarray(value)
            try:
                self.dtype = dtype_name(value.dtype)
            except DTypeError:
                raise DTypeError(f"{what}: element type {value.dtype} is "
                                 "not one te takes") from None
        self.value = value
        self.shape = tuple(value.shape)

    @property
    def type(self):
        return _tensor_type(self.dtype, self.shape)


def _arg(value, what, dtypes=None, rank=None):
    if value is None:
        return None
    a = value if isinstance(value, _Arg) else _Arg(value, what)
    if dtypes is not None and a.dtype not in dtypes:
        raise DTypeError(f"{what}: expected {' or '.join(dtypes)}, got "
                         f"{a.dtype}")
    if rank is not None and len(a.shape) != rank:
        raise ShapeError(f"{what}: expected rank {rank}, got shape "
                         f"{list(a.shape)}")
    return a


def _tensor_type(dtype, shape):
    dims = "".join(f"{d}x" for d in shape)
    return f"tensor<{dims}{dtype}>"


def _float(what, value):
    """The f32 attribute `what` of value `value`, spelled so that it parses
    back exactly. NaN and infinities (and values beyond f32's range) have
    no spelling in the IR and no meaning as a scale, epsilon or
    probability: ValueError."""
    with np.errstate(over="ignore"):
        single = np.float32(value)
    if not np.isfinite(single):
        reason = ("is beyond the range of f32" if np.isfinite(float(value))
                  else "is not finite")
        raise ValueError(f"{what}={value!r} {reason}; expected a finite "
                         "number")
    return repr(float(single))


def _integer(what, value):
    """`value` as an int: Python and numpy integers (anything with
    __index__); floats, even integral ones, are refused rather than
    truncated."""
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what}={value!r}: expected an integer, got "
                        f"{type(value).__name__}") from None


def _dim(what, name, dim, shape):
    """Dimension `dim` of an array of `shape` for argument `name` of op
    `what`, negative ones counted from the end as numpy does; ShapeError
    when the array has no such dimension."""
    dim = _integer(name, dim)
    rank = len(shape)
    if not -rank <= dim < rank:
        raise ShapeError(f"{what}: {name}={dim} is out of range for x of "
                         f"rank {rank} (shape {list(shape)}); expected "
                         f"{-rank} <= {name} < {rank}")
    return dim % rank


def _function(args, op, results):
    """The source of @op over `args` (_Arg list, bound to %a0...) whose body
    is `op`, a te op writing %r (one result) or %r:N."""
    params = ", ".join(f"%a{i}: {a.type}" for i, a in enumerate(args))
    types = ", ".join(results)
    values = ("%r" if len(results) == 1 else
              ", ".join(f"%r#{i}" for i in range(len(results))))
    return (f"func.func @op({params}) -> ({types}) {{\n"
            f"  {op}\n"
            f"  return {values} : {types}\n"
            "}\n")


def _result_name(count):
    return "%r" if count == 1 else f"%r:{count}"


_DEVICES = {}
#: Loaded programs kept, one per configuration; beyond this many, the
#: oldest is dropped (and compiled again, from the JIT's caches, if seen
#: again).
MAX_PROGRAMS = 512
_PROGRAMS = {}
_PROGRAMS_LOCK = threading.Lock()


def _device(device):
    """The Device of `device` (a Device, a device name, or None: cpu)."""
    if isinstance(device, Device):
        return device
    device = device or "cpu"
    with _PROGRAMS_LOCK:
        if device not in _DEVICES:
            _DEVICES[device] = Device(device)
        return _DEVICES[device]


class _Program:
    """A compiled op: its module's run function, with what its arguments
    need (numpy's ml_dtypes arrays cross as their raw bits) and what its
    results are. ops checked the arguments' dtypes and shapes already: they
    are the configuration the program was compiled for."""

    __slots__ = ("module", "run", "entry", "raw_inputs", "outputs")

    def __init__(self, module):
        self.module = module
        self.run = module._core.run
        (self.entry,) = module.kernels
        signature = module.signature()
        self.raw_inputs = [_RAW_BITS.get(dtype)
                           for out, dtype, _ in signature if not out]
        self.outputs = [dtype for out, dtype, _ in signature if out]


def _run(key, args, source, device=None):
    """Runs the program `source()` writes for configuration `key` on `args`
    (None entries are left out), compiling it once per configuration and
    device. Returns its outputs, as torch tensors when an input was one."""
    args = [a for a in args if a is not None]
    device = _device(device)
    jit = default_jit()
    full_key = (key, tuple((a.dtype, a.shape) for a in args), device.name,
                device.index, id(jit))
    program = _PROGRAMS.get(full_key)
    if program is None:
        program = _Program(jit.compile(source(args), device=device,
                                       name=f"<te_mlir.ops.{key[0]}>"))
        with _PROGRAMS_LOCK:
            program = _PROGRAMS.setdefault(full_key, program)
            while len(_PROGRAMS) > MAX_PROGRAMS:  # the oldest first
                del _PROGRAMS[next(iter(_PROGRAMS))]
    torch_device = None
    values = []
    for a, raw in zip(args, program.raw_inputs):
        if a.torch_device is not None:
            torch_device = torch_device or a.torch_device
        if raw is not None and isinstance(a.value, np.ndarray):
            values.append(a.value.view(raw))
        else:
            values.append(a.value)
    outputs = program.run(program.entry, values)
    if torch_device is None:
        return _from_raw_bits(outputs, program.outputs)
    return tuple(_raw_to_torch(out, dtype)
                 for out, dtype in zip(outputs, program.outputs))


def _raw_to_torch(array, dtype):
    """A CPU torch tensor over `array` (raw bits for bf16 and FP8), without
    a copy."""
    import torch
    tensor = torch.from_numpy(array)
    if dtype in _RAW_BITS:
        tensor = tensor.view(getattr(torch, _TORCH_DTYPES[dtype]))
    return tensor


def _forget_programs():
    """Drops the loaded modules (clearing the shared Jit's cache calls
    this)."""
    with _PROGRAMS_LOCK:
        _PROGRAMS.clear()


# --- FP8 ---------------------------------------------------------------


def amax(x, *, device=None):
    """max |x| over the elements of x (f32, f16 or bf16), NaN skipped, as an
    f32 scalar array (te.amax)."""
    x = _arg(x, "x", ("f32", "f16", "bf16"))
    src = lambda a: _function(
        a, f"%r = te.amax %a0 : {a[0].type} -> tensor<f32>", ["tensor<f32>"])
    return _run(("amax",), [x], src, device)[0]


def compute_scale(amax, fp8="e4m3", *, epsilon=0.0, pow2_scales=False,
                  device=None):
    """Float8CurrentScaling's scale from an f32 amax (any shape): fp8_max /
    max(amax, epsilon), 1 for 0/inf/NaN, optionally rounded down to a power
    of two (te.compute_scale)."""
    fp8 = _fp8_name(fp8)
    a = _arg(amax, "amax", ("f32",))
    attrs = f"fp8_type {fp8}"
    if epsilon:
        attrs += f" epsilon {_float('epsilon', epsilon)}"
    if pow2_scales:
        attrs += " pow2_scales"
    src = lambda args: _function(
        args, f"%r = te.compute_scale %a0 {attrs} : {args[0].type} -> "
        f"{args[0].type}", [args[0].type])
    return _run(("compute_scale", fp8, attrs), [a], src, device)[0]


def update_delayed_scaling(amax_history, amax, scale, fp8="e4m3", *,
                           amax_algo="max", margin=0, device=None):
    """One DelayedScaling step: the history [L, ...] with `amax` rolled in
    front, and the new scale (te.update_delayed_scaling). Returns
    (new_history, new_scale)."""
    fp8 = _fp8_name(fp8)
    _choice("amax_algo", amax_algo, AMAX_ALGOS)
    margin = _integer("margin", margin)
    args = [_arg(amax_history, "amax_history", ("f32",)),
            _arg(amax, "amax", ("f32",)), _arg(scale, "scale", ("f32",))]
    attrs = f"fp8_type {fp8} amax_algo {amax_algo} margin {margin}"

    def src(a):
        types = f"{a[0].type}, {a[1].type}, {a[2].type}"
        return _function(
            a, f"%r:2 = te.update_delayed_scaling %a0, %a1, %a2 {attrs} : "
            f"{types} -> {a[0].type}, {a[2].type}", [a[0].type, a[2].type])
    return _run(("update_delayed_scaling", attrs), args, src, device)


class Float8Tensor:
    """What ops.quantize returns: FP8 data with its scales, in one of TE's
    scaling modes.

    data, scale_inv: the row-wise copy (None without it);
    columnwise_data, columnwise_scale_inv: the column-wise copy (None
    without it), stored transposed for per_tensor and the block modes
    (TE's cast_transpose) and in the input's layout for mxfp8_1x32; for
    per_tensor both copies share scale_inv; amax: max |x| (per_tensor
    only); mode, fp8 (te type name), dtype (the input's element type,
    dequantize's default) and shape (the input's)."""

    __slots__ = ("data", "scale_inv", "columnwise_data",
                 "columnwise_scale_inv", "amax", "mode", "fp8", "dtype",
                 "shape")

    def __init__(self, data, scale_inv, columnwise_data, columnwise_scale_inv,
                 amax, mode, fp8, dtype, shape):
        self.data = data
        self.scale_inv = scale_inv
        self.columnwise_data = columnwise_data
        self.columnwise_scale_inv = columnwise_scale_inv
        self.amax = amax
        self.mode = mode
        self.fp8 = fp8
        self.dtype = dtype
        self.shape = tuple(shape)

    def __repr__(self):
        copies = [c for c, d in (("rowwise", self.data),
                                 ("columnwise", self.columnwise_data))
                  if d is not None]
        return (f"<te_mlir.ops.Float8Tensor {self.fp8} "
                f"{'x'.join(map(str, self.shape))} {self.mode} "
                f"({' and '.join(copies)}) of {self.dtype}>")

    def dequantize(self, dtype=None, *, columnwise=False):
        """ops.dequantize(self, ...)."""
        return dequantize(self, dtype, columnwise=columnwise)


def quantize_results(shape, fp8, mode, usage):
    """[(te dtype, shape)] of te.quantize's results for an input of `shape`
    (see its verifier); raises ShapeError where the mode cannot take it."""
    shape = list(shape)
    rowwise, columnwise = usage != "columnwise", usage != "rowwise"
    if mode != "mxfp8_1x32" and columnwise and len(shape) != 2:
        raise ShapeError(f"quantize: the column-wise copy of mode {mode} is "
                         f"stored transposed and needs a 2-D input, got "
                         f"shape {shape}")
    if mode in ("block_1x128", "block_128x128") and len(shape) != 2:
        raise ShapeError(f"quantize: mode {mode} needs a 2-D input, got "
                         f"shape {shape}")

    def scales(data_shape, axis_from_end):
        if mode == "mxfp8_1x32":
            s = list(data_shape)
            axis = len(s) - axis_from_end
            if axis < 0 or s[axis] % 32:
                raise ShapeError(
                    f"quantize: mode mxfp8_1x32 needs dimension {axis} of "
                    f"shape {list(data_shape)} to be a multiple of 32")
            s[axis] //= 32
            return ("f8E8M0FNU", s)
        rows, cols = data_shape
        ceil = lambda n: -(-n // 128)
        return ("f32", [ceil(rows) if mode == "block_128x128" else rows,
                        ceil(cols)])

    transposed = shape[::-1] if len(shape) == 2 else shape
    results = []
    if mode == "per_tensor":
        if rowwise:
            results.append((fp8, shape))
        if columnwise:
            results.append((fp8, transposed))
        return results + [("f32", []), ("f32", [])]
    if rowwise:
        results += [(fp8, shape), scales(shape, 1)]
    if columnwise:
        col = shape if mode == "mxfp8_1x32" else transposed
        results += [(fp8, col),
                    scales(col, 2 if mode == "mxfp8_1x32" else 1)]
    return results


def _usage(usage, transpose):
    """te.quantize's usage from quantize's `usage` and `transpose`."""
    if usage is None:
        return "both" if transpose else "rowwise"
    _choice("usage", usage, USAGES)
    if transpose and usage != "both":
        raise ValueError(f"quantize: transpose=True asks for both copies, "
                         f"but usage={usage!r}")
    return usage


def quantize(x, fp8="e4m3", mode="per_tensor", *, scale=None, usage=None,
             transpose=False, pow2_scales=None, epsilon=None, device=None):
    """x (f32, f16 or bf16) cast to FP8 in one of TE's scaling modes
    (te.quantize); returns a Float8Tensor.

    mode: per_tensor, mxfp8_1x32, block_1x128 or block_128x128.
    per_tensor takes `scale` (an f32 scalar: delayed scaling); without it
    the scale is this tensor's current scale, computed in the same program
    (te.amax, te.compute_scale with `epsilon` and `pow2_scales`: TE's
    Float8CurrentScaling). The block modes take `epsilon` and
    `pow2_scales` (default True) for their own block scales.
    usage: rowwise (default), columnwise or both; transpose=True is
    usage both (TE's cast_transpose)."""
    fp8 = _fp8_name(fp8)
    _choice("mode", mode, SCALING_MODES)
    usage = _usage(usage, transpose)
    x = _arg(x, "x", ("f32", "f16", "bf16"))
    scale = _arg(scale, "scale", ("f32",), rank=0)
    types = [_tensor_type(*r) for r in
             quantize_results(x.shape, fp8, mode, usage)]
    current = mode == "per_tensor" and scale is None
    attrs = f"mode {mode} usage {usage}"
    scale_attrs = f"fp8_type {fp8}"
    if mode in ("block_1x128", "block_128x128"):
        if pow2_scales is False:
            attrs += " pow2_scales false"
        if epsilon:
            attrs += f" epsilon {_float('epsilon', epsilon)}"
    elif current:
        if epsilon:
            scale_attrs += f" epsilon {_float('epsilon', epsilon)}"
        if pow2_scales:
            scale_attrs += " pow2_scales"
    elif pow2_scales or epsilon:
        raise ValueError(f"quantize: pow2_scales and epsilon shape the "
                         f"scales that mode {mode} computes itself; "
                         + ("a given scale is used as it is"
                            if mode == "per_tensor" else
                            "MXFP8's scales are fixed by its format"))

    def src(a):
        head = f"{_result_name(len(types))} = te.quantize %a0"
        if current:
            body = (f"%amax = te.amax %a0 : {a[0].type} -> tensor<f32>\n"
                    f"  %scale = te.compute_scale %amax {scale_attrs} : "
                    f"tensor<f32> -> tensor<f32>\n"
                    f"  {head} scale(%scale) {attrs} : {a[0].type}, "
                    "tensor<f32>")
        elif scale is not None:
            body = f"{head} scale(%a1) {attrs} : {a[0].type}, tensor<f32>"
        else:
            body = f"{head} {attrs} : {a[0].type}"
        return _function(a, f"{body} -> {', '.join(types)}", types)
    key = ("quantize", fp8, attrs, scale_attrs if current else None)
    out = _run(key, [x, scale], src, device)
    return Float8Tensor(*split_quantize_results(out, mode, usage), mode, fp8,
                        x.dtype, x.shape)


def split_quantize_results(results, mode, usage):
    """te.quantize's results, in its order, as (data, scale_inv,
    columnwise_data, columnwise_scale_inv, amax), None where `mode` and
    `usage` have none; per_tensor's two copies share scale_inv."""
    out = list(results)
    rowwise, columnwise = usage != "columnwise", usage != "rowwise"
    if mode == "per_tensor":
        data = out.pop(0) if rowwise else None
        data_t = out.pop(0) if columnwise else None
        scale_inv, amax = out
        return (data, scale_inv, data_t, scale_inv if columnwise else None,
                amax)
    data, scale_inv = (out.pop(0), out.pop(0)) if rowwise else (None, None)
    col, col_scale = (out.pop(0), out.pop(0)) if columnwise else (None, None)
    return data, scale_inv, col, col_scale, None


def dequantize(data, dtype=None, *, scale_inv=None, mode=None,
               columnwise=False, device=None):
    """FP8 data times its scales (te.dequantize), as f32, f16 or bf16.

    `data` is a Float8Tensor (its row-wise copy, or with columnwise=True
    its column-wise one; dtype defaults to the quantized input's), or raw
    FP8 data with `scale_inv` and `mode` (dtype defaults to f32; for
    mxfp8_1x32, columnwise=True says the scales run along the
    second-to-last dimension)."""
    if isinstance(data, Float8Tensor):
        q = data
        if scale_inv is not None or mode is not None:
            raise ValueError("dequantize: a Float8Tensor carries its scales "
                             "and mode; pass scale_inv and mode only with "
                             "raw data")
        data, scale_inv = ((q.columnwise_data, q.columnwise_scale_inv)
                           if columnwise else (q.data, q.scale_inv))
        if data is None:
            raise ValueError(f"dequantize: {q!r} has no "
                             f"{'column' if columnwise else 'row'}-wise copy")
        mode, dtype = q.mode, dtype or q.dtype
        columnwise = columnwise and mode == "mxfp8_1x32"
    elif scale_inv is None or mode is None:
        raise ValueError("dequantize: raw FP8 data needs scale_inv= and "
                         "mode= (or pass the Float8Tensor quantize returned)")
    _choice("mode", mode, SCALING_MODES)
    out = dtype_name(dtype or "f32")
    data = _arg(data, "data", ("f8E4M3FN", "f8E5M2"))
    scale_inv = _arg(scale_inv, "scale_inv", ("f32", "f8E8M0FNU"))
    attrs = f"mode {mode}" + (" columnwise" if columnwise else "")
    result = _tensor_type(out, data.shape)
    src = lambda a: _function(
        a, f"%r = te.dequantize %a0, %a1 {attrs} : {a[0].type}, {a[1].type} "
        f"-> {result}", [result])
    return _run(("dequantize", attrs, out), [data, scale_inv], src,
                device)[0]


def gemm_copy(x, k_is_last, transposed, name):
    """(data, scale_inv, transposed) of the Float8Tensor x as a GEMM
    operand whose op is x^T when `transposed`, so that K is x's last
    dimension when k_is_last: the copy whose scales run along K, as TE's
    GEMM picks it (cublaslt_gemm.cu's CanonicalizeGemmInput). per_tensor
    takes either copy (the column-wise one is stored transposed); MXFP8's
    row-wise copy scales along the last dimension and its column-wise copy
    (same layout) along the first; the block modes' column-wise copy is
    stored transposed with its scales along its last dimension."""
    def need(data, which):
        if data is None:
            raise ValueError(
                f"scaled_matmul: {name} needs its {which} copy here (K is "
                f"its {'last' if k_is_last else 'first'} dimension); "
                f"quantize it with usage='{which}' or 'both', got {x!r}")
        return data
    if x.mode == "per_tensor":
        if x.data is not None:
            return x.data, x.scale_inv, transposed
        return (need(x.columnwise_data, "rowwise"), x.scale_inv,
                not transposed)
    if k_is_last:
        return need(x.data, "rowwise"), x.scale_inv, transposed
    if x.mode == "mxfp8_1x32":
        return (need(x.columnwise_data, "columnwise"),
                x.columnwise_scale_inv, transposed)
    return (need(x.columnwise_data, "columnwise"), x.columnwise_scale_inv,
            not transposed)


def matmul_shape(a_shape, b_shape, transpose_a, transpose_b):
    """(M, N) of te.scaled_matmul's result for stored shapes a_shape and
    b_shape; raises ShapeError when op(A) and op(B) do not chain."""
    m, k_a = (a_shape[1], a_shape[0]) if transpose_a else a_shape
    k_b, n = (b_shape[1], b_shape[0]) if transpose_b else b_shape
    if k_a != k_b:
        raise ShapeError(f"scaled_matmul: op(A) is {m}x{k_a} but op(B) is "
                         f"{k_b}x{n}: the inner dimensions differ")
    return m, n


HIGH_PRECISION = ("f32", "f16", "bf16")
FP8 = ("f8E4M3FN", "f8E5M2")


def _scaling_modes(what, scaling):
    """(a mode, b mode) of a GEMM's `scaling` argument: one mode for both,
    an (a, b) pair, or None for per_tensor."""
    modes = (scaling, scaling) if isinstance(scaling, str) else tuple(
        scaling or ("per_tensor", "per_tensor"))
    if len(modes) != 2:
        raise ValueError(f"{what}: scaling={scaling!r}; give one mode or an "
                         "(a, b) pair")
    for mode in modes:
        _choice("scaling", mode, SCALING_MODES)
    return modes


def scaled_matmul(a, b, a_scale_inv=None, b_scale_inv=None, *, bias=None,
                  out_scale=None, transpose_a=False, transpose_b=False,
                  gelu=False, pre_gelu=None, dgelu_input=None,
                  accumulate=None, bias_grad=None, scaling=None,
                  out_dtype="bf16", device=None):
    """TE's GEMM (te.scaled_matmul): P = alpha op(A) op(B) [+ accumulate],
    accumulated in f32, then TE's epilogue.

    a, b: FP8 Float8Tensors in any scaling mode (the copy whose scales run
    along K is chosen, as TE chooses it; op(A) = A^T with transpose_a,
    op(B) = B^T with transpose_b, for the tensors as quantized), or raw FP8
    arrays with a_scale_inv and b_scale_inv in the modes `scaling` names
    (one mode or an (a, b) pair; per_tensor by default), or f32, f16 or
    bf16 arrays of one type without scales (see matmul). TE's rules on the
    pairs hold: one mode for both, except Float8BlockScaling's 1x128 with
    128x128 (not 128x128 by 128x128); no e5m2 by e5m2.

    Epilogues: bias [N] (added to each row), gelu (tanh GELU after it;
    pre_gelu=dtype also returns the values before it), dgelu_input [M, N]
    (D = P gelu'(input)), bias_grad=dtype (the bias gradient: the column
    sums of D with dgelu_input, else the row sums of op(A)), accumulate
    (C, D's type: TE's beta = 1). out_dtype f32, f16, bf16 or, with
    per_tensor FP8 operands, an FP8 type (needs out_scale; also returns the
    amax of D before scaling). Returns D, or the tuple (D, [amax],
    [pre_gelu], [bias_grad]) when there is more than D."""
    modes = _scaling_modes("scaled_matmul", scaling)

    def operand(x, scale_inv, name, mode, transposed, k_is_last):
        if isinstance(x, Float8Tensor):
            if scale_inv is not None:
                raise ValueError(f"scaled_matmul: {name} is a Float8Tensor; "
                                 f"{name}_scale_inv comes from it")
            data, scale_inv, transposed = gemm_copy(x, k_is_last, transposed,
                                                    name)
            return (_arg(data, name, FP8, rank=2),
                    _arg(scale_inv, f"{name}_scale_inv"), x.mode, transposed)
        x = _arg(x, name, FP8 + HIGH_PRECISION, rank=2)
        if x.dtype in HIGH_PRECISION:
            if scale_inv is not None:
                raise ValueError(f"scaled_matmul: {name} is {x.dtype}; "
                                 "only FP8 operands take scales")
            return x, None, None, transposed
        if scale_inv is None:
            raise ValueError(f"scaled_matmul: {name} needs {name}_scale_inv "
                             "(or pass a Float8Tensor)")
        return (x, _arg(scale_inv, f"{name}_scale_inv", ("f32", "f8E8M0FNU")),
                mode, transposed)
    a, a_si, a_mode, transpose_a = operand(a, a_scale_inv, "a", modes[0],
                                           transpose_a, not transpose_a)
    b, b_si, b_mode, transpose_b = operand(b, b_scale_inv, "b", modes[1],
                                           transpose_b, transpose_b)
    if (a_si is None) != (b_si is None):
        raise DTypeError(f"scaled_matmul: a is {a.dtype} and b is {b.dtype}; "
                         "both must be FP8 or both f32, f16 or bf16")
    if a_si is None and a.dtype != b.dtype:
        raise DTypeError(f"scaled_matmul: a is {a.dtype} and b is {b.dtype}; "
                         "f32, f16 and bf16 operands must be of one type")
    out = dtype_name(out_dtype)
    fp8_out = out in FP8
    bias = _arg(bias, "bias", HIGH_PRECISION, rank=1)
    out_scale = _arg(out_scale, "out_scale", ("f32",), rank=0)
    if fp8_out != (out_scale is not None):
        raise ValueError("scaled_matmul: an FP8 out_dtype needs out_scale, "
                         "and only an FP8 out_dtype takes it")
    m, n = matmul_shape(a.shape, b.shape, transpose_a, transpose_b)
    dgelu_input = _arg(dgelu_input, "dgelu_input", HIGH_PRECISION, rank=2)
    accumulate = _arg(accumulate, "accumulate", (out,), rank=2)
    pre_gelu = dtype_name(pre_gelu) if pre_gelu else None
    bias_grad = dtype_name(bias_grad) if bias_grad else None
    types = [_tensor_type(out, (m, n))] + (["tensor<f32>"] if fp8_out else [])
    if pre_gelu:
        types.append(_tensor_type(pre_gelu, (m, n)))
    if bias_grad:
        types.append(_tensor_type(bias_grad,
                                  (n,) if dgelu_input is not None else (m,)))
    attrs = "".join(f" {flag}" for flag, on in (
        ("transpose_a", transpose_a), ("transpose_b", transpose_b),
        ("gelu", gelu), ("pre_gelu", pre_gelu),
        ("bias_grad", bias_grad)) if on)
    scaling_clause = ("" if a_si is None or (a_mode, b_mode) == (
        "per_tensor", "per_tensor") else f" scaling {a_mode}, {b_mode}")
    args = [a, b, a_si, b_si, bias, dgelu_input, accumulate, out_scale]

    def src(present):
        operands = "%a0, %a1"
        i = 2
        for keyword, value in (("scales", a_si), ("bias", bias),
                               ("dgelu", dgelu_input),
                               ("accumulate", accumulate),
                               ("out_scale", out_scale)):
            if value is None:
                continue
            if keyword == "scales":
                operands += f" scales(%a2, %a3){scaling_clause}"
                i = 4
            else:
                operands += f" {keyword}(%a{i})"
                i += 1
        return _function(
            present, f"{_result_name(len(types))} = te.scaled_matmul "
            f"{operands}{attrs} : {', '.join(x.type for x in present)} -> "
            f"{', '.join(types)}", types)
    key = ("scaled_matmul", attrs, scaling_clause, out, pre_gelu, bias_grad,
           tuple(v is not None for v in args))
    result = _run(key, args, src, device)
    return result[0] if len(result) == 1 else tuple(result)


def matmul(a, b, *, bias=None, transpose_a=False, transpose_b=False,
           gelu=False, pre_gelu=None, dgelu_input=None, accumulate=None,
           bias_grad=None, out_dtype=None, device=None):
    """TE's GEMM on f32, f16 or bf16 operands of one type (te.scaled_matmul
    without scales): see scaled_matmul for the layouts and epilogues.
    out_dtype defaults to the operands' type."""
    a = _arg(a, "a", HIGH_PRECISION, rank=2)
    b = _arg(b, "b", HIGH_PRECISION, rank=2)
    return scaled_matmul(a, b, bias=bias, transpose_a=transpose_a,
                         transpose_b=transpose_b, gelu=gelu,
                         pre_gelu=pre_gelu, dgelu_input=dgelu_input,
                         accumulate=accumulate, bias_grad=bias_grad,
                         out_dtype=out_dtype or a.dtype, device=device)


def _stack(values, what):
    """The arrays (or torch tensors) `values` stacked along a new first
    dimension, as one array of their kind."""
    if any(_is_torch(v) for v in values):
        import torch
        return torch.stack([v if _is_torch(v) else torch.from_numpy(
            np.asarray(v)) for v in values])
    arrays = [np.asarray(v) for v in values]
    if len({(a.dtype, a.shape) for a in arrays}) != 1:
        raise ShapeError(f"grouped_matmul: the {what} of every group must "
                         "have one dtype and shape, got "
                         f"{[(str(a.dtype), list(a.shape)) for a in arrays]}")
    return np.stack(arrays)


def grouped_matmul(a, b, splits, a_scale_inv=None, b_scale_inv=None, *,
                   bias=None, accumulate=None, transpose_b=False,
                   scaling=None, out_dtype=None, device=None):
    """TE's grouped GEMM (te.grouped_matmul), as GroupedLinear runs it: the
    rows of a ([T, K], tokens sorted by group) fall into len(splits)
    consecutive groups of splits[g] rows (a list or an integer array; read
    at run time, so one compiled program serves every split), and group
    g's rows of D ([T, N]) are op(A_g) op(B[g]) [+ accumulate] [+ bias[g]].

    b: the groups' matrices, stacked ([G, N, K] with transpose_b, else
    [G, K, N]) or a list of them (arrays or Float8Tensors); op(B[g]) =
    B[g]^T with transpose_b. Operands are f32, f16 or bf16 of one type, or
    FP8: raw arrays with a_scale_inv and b_scale_inv in the modes `scaling`
    names (per_tensor: one scale per group, [G] each; mxfp8_1x32 and
    block_1x128: a's row-wise scales [T, ...]; b's stacked per group), or
    Float8Tensors (a per_tensor a's one scale serves every group). bias:
    [G, N]; accumulate: D's type and shape. out_dtype: f32, f16 or bf16
    (default: the operands' type when high precision, else bf16)."""
    modes = _scaling_modes("grouped_matmul", scaling)
    if isinstance(splits, (list, tuple)):
        splits = np.array([_integer("splits", m) for m in splits], np.int64)
    splits = _arg(splits, "splits", ("i64",), rank=1)
    groups = splits.shape[0]
    counts = np.asarray(splits.value)
    if (counts < 0).any():
        g = int(np.argmax(counts < 0))
        raise ShapeError(f"grouped_matmul: splits[{g}] = {counts[g]} is "
                         "negative; each group has zero or more rows")

    # b: stacked, or one entry per group.
    if isinstance(b, (list, tuple)):
        if len(b) != groups:
            raise ShapeError(f"grouped_matmul: {len(b)} matrices in b for "
                             f"{groups} splits")
        quantized = [isinstance(x, Float8Tensor) for x in b]
        if any(quantized) and not all(quantized):
            raise ValueError(
                "grouped_matmul: b mixes Float8Tensors (groups "
                f"{[g for g, q in enumerate(quantized) if q]}) with raw "
                "matrices; pass every group's matrix as a Float8Tensor, or "
                "every one raw with b_scale_inv")
        if all(quantized):
            if b_scale_inv is not None:
                raise ValueError("grouped_matmul: b holds Float8Tensors; "
                                 "b_scale_inv comes from them")
            copies = [gemm_copy(x, transpose_b, transpose_b, "b")
                      for x in b]
            if len({(c[2], x.mode) for c, x in zip(copies, b)}) != 1:
                raise ValueError("grouped_matmul: b's Float8Tensors must "
                                 "share one scaling mode and layout")
            transpose_b = copies[0][2]
            modes = (modes[0], b[0].mode)
            b_scale_inv = _stack([c[1] for c in copies], "scale_inv")
            b = _stack([c[0] for c in copies], "data")
        else:
            b = _stack(b, "matrices")
    b = _arg(b, "b", FP8 + HIGH_PRECISION, rank=3)
    if b.shape[0] != groups:
        raise ShapeError(f"grouped_matmul: b holds {b.shape[0]} matrices "
                         f"for {groups} splits")

    if isinstance(a, Float8Tensor):
        if a_scale_inv is not None:
            raise ValueError("grouped_matmul: a is a Float8Tensor; "
                             "a_scale_inv comes from it")
        data, a_scale_inv, transposed = gemm_copy(a, True, False, "a")
        if transposed:
            raise ValueError(f"grouped_matmul: a needs its row-wise copy "
                             f"(the groups split its rows), got {a!r}")
        modes = (a.mode, modes[1])
        if a.mode == "per_tensor":
            a_scale_inv = np.repeat(
                np.asarray(a_scale_inv, np.float32).reshape(1), groups)
        a = data
    a = _arg(a, "a", FP8 + HIGH_PRECISION, rank=2)
    fp8 = a.dtype in FP8
    if (b.dtype in FP8) != fp8:
        raise DTypeError(f"grouped_matmul: a is {a.dtype} and b is "
                         f"{b.dtype}; both must be FP8 or both f32, f16 or "
                         "bf16")
    if not fp8:
        if a.dtype != b.dtype:
            raise DTypeError(f"grouped_matmul: a is {a.dtype} and b is "
                             f"{b.dtype}; f32, f16 and bf16 operands must "
                             "be of one type")
        if a_scale_inv is not None or b_scale_inv is not None:
            raise ValueError(f"grouped_matmul: a and b are {a.dtype}; only "
                             "FP8 operands take scales")
    elif a_scale_inv is None or b_scale_inv is None:
        raise ValueError("grouped_matmul: FP8 operands need a_scale_inv and "
                         "b_scale_inv (or pass Float8Tensors)")
    a_si = _arg(a_scale_inv, "a_scale_inv", ("f32", "f8E8M0FNU"))
    b_si = _arg(b_scale_inv, "b_scale_inv", ("f32", "f8E8M0FNU"))
    if int(counts.sum()) != a.shape[0]:
        raise ShapeError(f"grouped_matmul: the splits sum to "
                         f"{int(counts.sum())}, but a has {a.shape[0]} rows; "
                         "they split a's rows as torch.split does")
    k_b, n = (b.shape[2], b.shape[1]) if transpose_b else b.shape[1:]
    if a.shape[1] != k_b:
        raise ShapeError(f"grouped_matmul: a is {a.shape[0]}x{a.shape[1]} "
                         f"but each op(b[g]) is {k_b}x{n}: the inner "
                         "dimensions differ")
    out = dtype_name(out_dtype or ("bf16" if fp8 else a.dtype))
    _choice("out_dtype", out, HIGH_PRECISION)
    bias = _arg(bias, "bias", HIGH_PRECISION, rank=2)
    accumulate = _arg(accumulate, "accumulate", (out,), rank=2)
    result = _tensor_type(out, (a.shape[0], n))
    scaling_clause = ("" if not fp8 or tuple(modes) == (
        "per_tensor", "per_tensor") else f" scaling {modes[0]}, {modes[1]}")
    attrs = " transpose_b" if transpose_b else ""
    args = [a, b, splits, a_si, b_si, bias, accumulate]

    def src(present):
        operands = "%a0, %a1 splits(%a2)"
        i = 3
        if a_si is not None:
            operands += f" scales(%a3, %a4){scaling_clause}"
            i = 5
        for keyword, value in (("bias", bias), ("accumulate", accumulate)):
            if value is not None:
                operands += f" {keyword}(%a{i})"
                i += 1
        return _function(
            present, f"%r = te.grouped_matmul {operands}{attrs} : "
            f"{', '.join(x.type for x in present)} -> {result}", [result])
    key = ("grouped_matmul", attrs, scaling_clause, out,
           tuple(v is not None for v in args))
    return _run(key, args, src, device)[0]


# --- Attention -----------------------------------------------------------


def bias_type_of(bias_type, bias, alibi_slopes):
    """The attention bias kind: `bias_type`, else alibi with slopes,
    post_scale (TE's default) with a bias tensor, else no_bias."""
    if bias_type is not None:
        return bias_type
    return ("alibi" if alibi_slopes is not None else
            "post_scale" if bias is not None else "no_bias")


def _attention_operands(kw):
    """The optional operand groups of te.attention(_backward), in the
    order of its syntax: [(keyword, [_Arg, ...])], and the attribute text
    before them."""
    layout = _choice("layout", kw["layout"], LAYOUTS)
    mask = _choice("mask", kw["mask"] or "no_mask", MASKS)
    softmax = kw["softmax"].replace("-", "_")
    _choice("softmax", softmax, SOFTMAX_KINDS)
    bias_kind = _choice("bias_type", bias_type_of(
        kw["bias_type"], kw["bias"], kw["alibi_slopes"]), BIAS_KINDS)
    if (bias_kind in ("pre_scale", "post_scale")) != (kw["bias"] is not None):
        raise ValueError(f"attention: bias_type {bias_kind} "
                         + ("needs bias=" if kw["bias"] is None else
                            "takes no bias tensor"))
    if (bias_kind == "alibi") != (kw["alibi_slopes"] is not None):
        raise ValueError(f"attention: bias_type {bias_kind} "
                         + ("needs alibi_slopes=" if bias_kind == "alibi"
                            else "takes no alibi_slopes"))
    attrs = f"layout {layout} mask {mask}"
    window = kw["window"]
    if window is not None:
        if len(window) != 2:
            raise ValueError(f"attention: window={window!r}: expected "
                             "(left, right)")
        left, right = (_integer("window", w) for w in window)
        attrs += f" window [{left}, {right}]"
    if kw["bottom_right_diagonal"] is not None:
        attrs += (" bottom_right_diagonal "
                  f"{'true' if kw['bottom_right_diagonal'] else 'false'}")
    if kw["scale"] is not None:
        attrs += f" scale {_float('scale', kw['scale'])}"
    if bias_kind != "no_bias":
        attrs += f" bias {bias_kind}"
    if softmax != "vanilla":
        attrs += f" softmax {softmax}"
    rng_state = None
    dropout = float(kw["dropout"] or 0.0)
    if dropout:
        attrs += f" dropout {_float('dropout', dropout)}"
        if kw["seed"] is None:
            raise ValueError(
                "attention: dropout needs seed= (and rng_offset=): the same "
                "ones reproduce the kept set in attention_backward")
        # (seed, offset) as 64-bit patterns: negative seeds wrap.
        seed = _integer("seed", kw["seed"])
        offset = _integer("rng_offset", kw["rng_offset"])
        rng_state = np.array([seed % 2**64, offset % 2**64],
                             np.uint64).view(np.int64)
    groups = []

    def group(keyword, names, dtypes):
        values = [kw[n] for n in names]
        if all(v is None for v in values):
            return
        if any(v is None for v in values):
            raise ValueError(f"attention: {' and '.join(names)} go together")
        groups.append((keyword, [_arg(v, n, dtypes) for n, v in
                                 zip(names, values)]))
    group("cu_seqlens", ("cu_seqlens_q", "cu_seqlens_kv"), ("i32",))
    group("seq_offsets", ("seq_offsets_q", "seq_offsets_kv"), ("i32",))
    group("seqlens", ("seqlens_q", "seqlens_kv"), ("i32",))
    group("mask_tensor", ("mask_tensor",), ("i1",))
    group("bias_tensor", ("bias",), ("f32", "f16", "bf16"))
    group("alibi_slopes", ("alibi_slopes",), ("f32",))
    if rng_state is not None:
        groups.append(("rng_state", [_arg(rng_state, "rng_state")]))
    group("softmax_offset", ("softmax_offset",), ("f32",))
    return attrs, groups, bias_kind, softmax


def attention_result_shapes(layout, q_shape, v_shape):
    """(o's shape, lse's shape) of te.attention: o has q's layout with v's
    head dimension; lse is [b, h_q, s_q, 1], or [t_q, h_q, 1] for thd."""
    q_shape = tuple(q_shape)
    o = q_shape[:-1] + (v_shape[-1],)
    if layout == "thd":
        return o, (q_shape[0], q_shape[1], 1)
    b, h, s = {"bshd": (0, 2, 1), "sbhd": (1, 2, 0), "bhsd": (0, 1, 2)}[layout]
    return o, (q_shape[b], q_shape[h], q_shape[s], 1)


def _attention(q, k, v, extra, kw, backward):
    _choice("layout", kw["layout"], LAYOUTS)
    q, k, v = (_arg(x, n, ("f32", "f16", "bf16"))
               for x, n in ((q, "q"), (k, "k"), (v, "v")))
    what = "attention_backward" if backward else "attention"
    if len({q.dtype, k.dtype, v.dtype}) > 1:
        raise DTypeError(f"{what}: q, k and v must have one dtype (TE's "
                         f"attention takes one), got q {q.dtype}, k "
                         f"{k.dtype}, v {v.dtype}; cast them to one")
    if len(q.shape) != (3 if kw["layout"] == "thd" else 4):
        raise ShapeError(f"attention: layout {kw['layout']} needs q of rank "
                         f"{3 if kw['layout'] == 'thd' else 4}, got shape "
                         f"{list(q.shape)}")
    attrs, groups, bias_kind, softmax = _attention_operands(kw)
    names = [n for _, n in extra]
    extra = [_arg(x, n) for x, n in extra]
    # The backward's o and d_o: the forward output's dtype, q's.
    mixed = [(n, a.dtype) for n, a in zip(names, extra)
             if n in ("o", "d_o") and a.dtype != q.dtype]
    if mixed:
        got = ", ".join(f"{n} {dtype}" for n, dtype in mixed)
        raise DTypeError(f"{what}: o and d_o must have the dtype of q, k and "
                         f"v ({q.dtype}), got {got}")
    args = [q, k, v] + extra
    operand_text = []
    for keyword, values in groups:
        names = ", ".join(f"%a{len(args) + i}" for i in range(len(values)))
        operand_text.append(f" {keyword}({names})")
        args += values
    if backward:
        types = [q.type, k.type, v.type]
        if bias_kind in ("pre_scale", "post_scale"):
            types.append(dict(groups)["bias_tensor"][0].type)
        if softmax == "learnable":
            types.append(dict(groups)["softmax_offset"][0].type)
    else:
        o_shape, lse_shape = attention_result_shapes(kw["layout"], q.shape,
                                                     v.shape)
        types = [_tensor_type(q.dtype, o_shape)]
        if kw["return_lse"]:
            types.append(_tensor_type("f32", lse_shape))
    op = "te.attention_backward" if backward else "te.attention"
    values = ", ".join(f"%a{i}" for i in range(6 if backward else 3))
    lse_attr = " {return_lse}" if kw["return_lse"] and not backward else ""
    text = (f"{_result_name(len(types))} = {op} {values} {attrs}"
            f"{''.join(operand_text)}{lse_attr}")
    src = lambda a: _function(
        a, f"{text} : ({', '.join(x.type for x in a)}) -> "
        f"({', '.join(types)})", types)
    return _run((op, text), args, src, kw["device"])


def _attention_kwargs(layout, mask, window, bottom_right_diagonal, scale,
                      bias, bias_type, alibi_slopes, softmax, softmax_offset,
                      dropout, seed, rng_offset, return_lse, cu_seqlens_q,
                      cu_seqlens_kv, seq_offsets_q, seq_offsets_kv,
                      seqlens_q, seqlens_kv, mask_tensor, device):
    return dict(locals())


def attention(q, k, v, *, layout="bshd", mask="causal", window=None,
              bottom_right_diagonal=None, scale=None, bias=None,
              bias_type=None, alibi_slopes=None, softmax="vanilla",
              softmax_offset=None, dropout=0.0, seed=None, rng_offset=0,
              return_lse=False, cu_seqlens_q=None, cu_seqlens_kv=None,
              seq_offsets_q=None, seq_offsets_kv=None, seqlens_q=None,
              seqlens_kv=None, mask_tensor=None, device=None):
    """Fused attention forward (te.attention, docs/TEDialect.md): o, or
    (o, lse) with return_lse.

    layout: bshd, sbhd, bhsd or thd (with cu_seqlens_q/_kv, and
    seq_offsets_q/_kv for padded packing); mask: no_mask, padding (with
    seqlens_q/_kv for non-thd layouts), causal, causal_bottom_right,
    padding_causal, padding_causal_bottom_right or arbitrary (with an i1
    mask_tensor, True excludes); window (left, right), -1 unbounded;
    scale defaults to 1/sqrt(d); bias [1|b, 1|h, s_q, s_kv] with
    bias_type post_scale (default) or pre_scale; alibi_slopes [h] or
    [b, h]; softmax vanilla, off_by_one or learnable (softmax_offset
    [1, h, 1, 1]); dropout p with seed (and rng_offset). GQA/MQA: k and v
    may have fewer heads than q."""
    kw = _attention_kwargs(layout, mask, window, bottom_right_diagonal,
                           scale, bias, bias_type, alibi_slopes, softmax,
                           softmax_offset, dropout, seed, rng_offset,
                           return_lse, cu_seqlens_q, cu_seqlens_kv,
                           seq_offsets_q, seq_offsets_kv, seqlens_q,
                           seqlens_kv, mask_tensor, device)
    out = _attention(q, k, v, [], kw, backward=False)
    return out if return_lse else out[0]


def attention_backward(q, k, v, o, d_o, lse, *, layout="bshd", mask="causal",
                       window=None, bottom_right_diagonal=None, scale=None,
                       bias=None, bias_type=None, alibi_slopes=None,
                       softmax="vanilla", softmax_offset=None, dropout=0.0,
                       seed=None, rng_offset=0, cu_seqlens_q=None,
                       cu_seqlens_kv=None, seq_offsets_q=None,
                       seq_offsets_kv=None, seqlens_q=None, seqlens_kv=None,
                       mask_tensor=None, device=None):
    """Gradients of ops.attention with the same arguments, from its output
    o, the output's gradient d_o and lse (attention(..., return_lse=True)):
    (dq, dk, dv), then dbias with a pre_scale/post_scale bias, then
    d_softmax_offset with the learnable softmax
    (te.attention_backward)."""
    kw = _attention_kwargs(layout, mask, window, bottom_right_diagonal,
                           scale, bias, bias_type, alibi_slopes, softmax,
                           softmax_offset, dropout, seed, rng_offset, False,
                           cu_seqlens_q, cu_seqlens_kv, seq_offsets_q,
                           seq_offsets_kv, seqlens_q, seqlens_kv,
                           mask_tensor, device)
    return _attention(q, k, v, [(o, "o"), (d_o, "d_o"), (lse, "lse")], kw,
                      backward=True)


# --- Normalization -------------------------------------------------------


def _norm_operands(x, weight, what):
    x = _arg(x, "x", ("f32", "f16", "bf16"))
    if len(x.shape) < 2:
        raise ShapeError(f"{what}: x must have rank >= 2 ([rows..., hidden]), "
                         f"got shape {list(x.shape)}")
    weight = _arg(weight, "weight", ("f32", "f16", "bf16"), rank=1)
    if weight.shape[0] != x.shape[-1]:
        raise ShapeError(f"{what}: weight must have shape [{x.shape[-1]}] "
                         f"(x's hidden size), got {list(weight.shape)}")
    return x, weight


def _norm_quantize_clauses(quantize, fp8, scale, pow2_scales, usage,
                           amax_epsilon, what):
    """te.norm's quantize clauses, and the te.compute_scale attributes of
    current scaling (per_tensor without a scale), or None."""
    _choice("quantize", quantize, SCALING_MODES)
    usage = _usage(usage, False)
    clauses = f" quantize {quantize} usage {usage}"
    current = quantize == "per_tensor" and scale is None
    block = quantize in ("block_1x128", "block_128x128")
    if block:
        if pow2_scales is False:
            clauses += " pow2_scales false"
        if amax_epsilon:
            clauses += f" amax_epsilon {_float('amax_epsilon', amax_epsilon)}"
        return clauses, usage, None
    if current:
        scale_attrs = f"fp8_type {fp8}"
        if amax_epsilon:
            scale_attrs += f" epsilon {_float('amax_epsilon', amax_epsilon)}"
        if pow2_scales:
            scale_attrs += " pow2_scales"
        return clauses, usage, scale_attrs
    if pow2_scales or amax_epsilon:
        raise ValueError(f"{what}: pow2_scales and amax_epsilon shape the "
                         f"scales that quantize={quantize!r} computes "
                         "itself; " + ("a given scale is used as it is"
                                       if quantize == "per_tensor" else
                                       "MXFP8's scales are fixed by its "
                                       "format"))
    return clauses, usage, None


def _check_out_dtype(what, quantize, out_dtype, keep_output, output):
    """out_dtype names the high-precision output's dtype, which a quantized
    output returns only with keep_output=True."""
    if quantize is not None and out_dtype is not None and not keep_output:
        raise ValueError(f"{what}: out_dtype is {output}'s dtype, and a "
                         f"quantized output returns {output} only with "
                         f"keep_output=True (the cast is of {output} "
                         "rounded to x's dtype otherwise)")


class _Quantized:
    """What an op whose output may be quantized (te.norm, te.activation,
    te.activation_backward) is asked for: quantize=<mode> with its fp8,
    scale, usage, keep_output, pow2_scales and amax_epsilon, or with_amax
    for the high-precision output."""

    def __init__(self, what, quantize=None, fp8="e4m3", scale=None,
                 usage=None, keep_output=False, pow2_scales=None,
                 amax_epsilon=None, with_amax=False):
        self.what, self.mode, self.with_amax = what, quantize, with_amax
        self.keep_output = keep_output
        if quantize is None:
            if (scale is not None or usage is not None or keep_output
                    or pow2_scales is not None or amax_epsilon is not None):
                raise ValueError(f"{what}: scale, usage, keep_output, "
                                 "pow2_scales and amax_epsilon shape a "
                                 "quantized output; pass quantize=<mode> too")
            self.scale, self.clauses, self.current = None, "", None
            return
        if with_amax:
            raise ValueError(f"{what}: with_amax is for the high-precision "
                             "output; a quantized output carries its own "
                             "scales")
        self.fp8 = _fp8_name(fp8)
        self.clauses, self.usage, self.current = _norm_quantize_clauses(
            quantize, self.fp8, scale, pow2_scales, usage, amax_epsilon, what)
        self.scale = _arg(scale, "scale", ("f32",), rank=0)

    def key(self):
        return (self.mode, self.clauses, getattr(self, "fp8", None),
                self.current, bool(self.keep_output), bool(self.with_amax))

    def run(self, key, op, operands, attrs, out_shape, out_dtype, in_dtype,
            trailing, device):
        """Runs `te.<op> <operands> [scale(..)] <attrs> <clauses>` on the
        _Arg list `operands` (None entries left out); the output has
        `out_shape` and, where returned, `out_dtype`; `trailing` are the
        types of the op's own results after [out], [quantized], [amax].
        Returns the outputs: [out], [Float8Tensor], [amax], trailing..."""
        operands = [a for a in operands if a is not None]
        n = len(operands)
        scalar = _tensor_type("f32", [])
        out_type = _tensor_type(out_dtype, out_shape)
        if self.mode is None:
            amax = " amax" if self.with_amax else ""
            results = [out_type] + ([scalar] if self.with_amax else []) + \
                trailing

            def src(a):
                names = ", ".join(f"%a{i}" for i in range(n))
                return _function(
                    a, f"{_result_name(len(results))} = te.{op} {names} "
                    f"{attrs}{amax} : {', '.join(v.type for v in a)} -> "
                    f"{', '.join(results)}", results)
            return list(_run(key + self.key(), operands, src, device))

        quantized = [_tensor_type(*r) for r in quantize_results(
            out_shape, self.fp8, self.mode, self.usage)]
        current = self.current
        out = [out_type] if self.keep_output or current else []

        def src(a):
            names = [f"%a{i}" for i in range(len(a))]
            types = [v.type for v in a]
            head = f"te.{op} {', '.join(names[:n])}"
            if current:
                # The op gives its output and the amax of its f32 values;
                # then the scale and the cast (TE's current scaling).
                first = [out_type, scalar] + trailing
                values = [f"%q#{i}" for i in range(len(quantized))] + \
                    [f"%n#{i}" for i in range(2, len(first))]
                if self.keep_output:
                    values.insert(0, "%n#0")
                results = (out if self.keep_output else []) + quantized + \
                    trailing
                params = ", ".join(f"{v}: {t}" for v, t in zip(names, types))
                return (
                    f"func.func @op({params}) -> ({', '.join(results)}) {{\n"
                    f"  %n:{len(first)} = {head} {attrs} amax : "
                    f"{', '.join(types)} -> {', '.join(first)}\n"
                    f"  %scale = te.compute_scale %n#1 {current} : "
                    "tensor<f32> -> tensor<f32>\n"
                    f"  %q:{len(quantized)} = te.quantize %n#0 scale(%scale)"
                    f"{self.clauses.replace(' quantize ', ' mode ')} : "
                    f"{out_type}, tensor<f32> -> {', '.join(quantized)}\n"
                    f"  return {', '.join(values)} : {', '.join(results)}\n"
                    "}\n")
            if self.scale is not None:
                head += f" scale({names[n]})"
            results = out + quantized + trailing
            return _function(
                a, f"{_result_name(len(results))} = {head} {attrs}"
                f"{self.clauses} : {', '.join(types)} -> "
                f"{', '.join(results)}", results)
        outputs = list(_run(key + self.key(), operands + [self.scale], src,
                            device))
        high = [outputs.pop(0)] if self.keep_output else []
        q = Float8Tensor(*split_quantize_results(outputs[:len(quantized)],
                                                 self.mode, self.usage),
                         self.mode, self.fp8,
                         out_dtype if self.keep_output else in_dtype,
                         out_shape)
        return high + [q] + outputs[len(quantized):]


def _norm(kind, x, weight, bias, eps, zero_centered_gamma, out_dtype,
          device, quantize=None, fp8="e4m3", scale=None, usage=None,
          keep_output=False, pow2_scales=None, amax_epsilon=None,
          with_amax=False):
    what = "layer_norm" if kind == "layernorm" else "rms_norm"
    x, weight = _norm_operands(x, weight, what)
    bias = _arg(bias, "bias", ("f32", "f16", "bf16"), rank=1)
    _check_out_dtype(what, quantize, out_dtype, keep_output, "z")
    request = _Quantized(what, quantize, fp8, scale, usage, keep_output,
                         pow2_scales, amax_epsilon, with_amax)
    out = dtype_name(out_dtype) if out_dtype is not None else x.dtype
    eps = _float("eps", eps)
    rows = _tensor_type("f32", x.shape[:-1])
    stats = [rows] * (2 if kind == "layernorm" else 1)
    centered = " zero_centered_gamma" if zero_centered_gamma else ""
    return tuple(request.run(
        (kind, eps, bool(zero_centered_gamma), out), "norm",
        [x, weight, bias], f"kind {kind} epsilon {eps}{centered}", x.shape,
        out, x.dtype, stats, device))


_NORM_QUANTIZE_DOC = """

    quantize=<mode> (per_tensor, mxfp8_1x32, block_1x128, block_128x128)
    returns the output cast to `fp8` as a Float8Tensor in place of z, as
    TE's normalization does under each recipe: per_tensor with `scale`
    (delayed scaling) casts z's f32 value in the norm itself; per_tensor
    without it (current scaling) has the norm give z and its amax, then
    scales and casts z; the other modes cast z. `usage` as in quantize;
    `pow2_scales` and `amax_epsilon` as quantize's `pow2_scales` and
    `epsilon`. keep_output=True returns z too, before the Float8Tensor,
    and the cast is of z. with_amax=True (no quantize) returns the amax of
    z's f32 value after z."""


def layer_norm(x, weight, bias=None, *, eps=1e-5, zero_centered_gamma=False,
               out_dtype=None, quantize=None, fp8="e4m3", scale=None,
               usage=None, keep_output=False, pow2_scales=None,
               amax_epsilon=None, with_amax=False, device=None):
    return _norm("layernorm", x, weight, bias, eps, zero_centered_gamma,
                 out_dtype, device, quantize, fp8, scale, usage, keep_output,
                 pow2_scales, amax_epsilon, with_amax)


def rms_norm(x, weight, *, eps=1e-5, zero_centered_gamma=False,
             out_dtype=None, quantize=None, fp8="e4m3", scale=None,
             usage=None, keep_output=False, pow2_scales=None,
             amax_epsilon=None, with_amax=False, device=None):
    return _norm("rmsnorm", x, weight, None, eps, zero_centered_gamma,
                 out_dtype, device, quantize, fp8, scale, usage, keep_output,
                 pow2_scales, amax_epsilon, with_amax)


layer_norm.__doc__ = """LayerNorm over the last dimension as TE computes it
    (te.norm kind layernorm; nvte_layernorm_fwd): returns (z, mu, rsigma),
    mu and rsigma f32 over the leading dimensions. weight and bias have x's
    dtype; out_dtype (default x's) may differ only for an f32 x.""" + \
    _NORM_QUANTIZE_DOC
rms_norm.__doc__ = """RMSNorm over the last dimension as TE computes it
    (te.norm kind rmsnorm; nvte_rmsnorm_fwd): returns (z, rsigma).""" + \
    _NORM_QUANTIZE_DOC


def _norm_backward(kind, dz, x, mu, rsigma, weight, add, zero_centered_gamma,
                   device):
    what = ("layer_norm_backward" if kind == "layernorm"
            else "rms_norm_backward")
    x, weight = _norm_operands(x, weight, what)
    dz = _arg(dz, "dz", ("f32", "f16", "bf16"))
    rsigma = _arg(rsigma, "rsigma", ("f32",))
    mu = _arg(mu, "mu", ("f32",))
    add = _arg(add, "add", ("f32", "f16", "bf16"))
    results = [_tensor_type(x.dtype, x.shape)] + [weight.type] * (
        2 if kind == "layernorm" else 1)
    clauses = ""
    index = 4
    if mu is not None:
        clauses += f" mean(%a{index})"
        index += 1
    if add is not None:
        clauses += f" add(%a{index})"
    centered = " zero_centered_gamma" if zero_centered_gamma else ""

    def src(a):
        return _function(
            a, f"{_result_name(len(results))} = te.norm_backward %a0, %a1, "
            f"%a2, %a3{clauses} kind {kind}{centered} : "
            f"{', '.join(v.type for v in a)} -> {', '.join(results)}",
            results)
    return _run((f"{kind}_backward", bool(zero_centered_gamma),
                 add is not None), [dz, x, rsigma, weight, mu, add], src,
                device)


def layer_norm_backward(dz, x, mu, rsigma, weight, *,
                        zero_centered_gamma=False, device=None):
    """The gradients of layer_norm (te.norm_backward kind layernorm;
    nvte_layernorm_bwd): returns (dx, dweight, dbias). dz has weight's
    dtype; x has it too, or is f32."""
    return _norm_backward("layernorm", dz, x, mu, rsigma, weight, None,
                          zero_centered_gamma, device)


def rms_norm_backward(dz, x, rsigma, weight, *, add=None,
                      zero_centered_gamma=False, device=None):
    """The gradients of rms_norm (te.norm_backward kind rmsnorm;
    nvte_rmsnorm_bwd, and nvte_rmsnorm_bwd_add with `add`, a gradient
    added to dx): returns (dx, dweight)."""
    return _norm_backward("rmsnorm", dz, x, None, rsigma, weight, add,
                          zero_centered_gamma, device)


# --- Activations ---------------------------------------------------------

#: te.activation's kinds; the gated ones halve the last dimension.
ACTIVATIONS = ("gelu", "qgelu", "relu", "srelu", "silu", "geglu", "qgeglu",
               "reglu", "sreglu", "swiglu", "clamped_swiglu", "glu")
GATED_ACTIVATIONS = ("geglu", "qgeglu", "reglu", "sreglu", "swiglu",
                     "clamped_swiglu", "glu")


def _activation_attrs(kind, limit, alpha, linear_offset, what):
    _choice("kind", kind, ACTIVATIONS)
    attrs = f"kind {kind}"
    if kind == "clamped_swiglu":
        if limit is None:
            raise ValueError(f"{what}: kind clamped_swiglu needs limit= "
                             "(TE's limit, > 0)")
        attrs += f" limit {_float('limit', limit)}"
        if alpha is not None:
            attrs += f" alpha {_float('alpha', alpha)}"
        if linear_offset is not None:
            attrs += f" linear_offset {_float('linear_offset', linear_offset)}"
    elif limit is not None or alpha is not None or linear_offset is not None:
        raise ValueError(f"{what}: limit, alpha and linear_offset are the "
                         f"parameters of clamped_swiglu, not {kind}")
    return attrs


def _activation_input(x, kind, what):
    x = _arg(x, "x", ("f32", "f16", "bf16"))
    if not x.shape:
        raise ShapeError(f"{what}: x must have rank >= 1")
    if kind in GATED_ACTIVATIONS and x.shape[-1] % 2:
        raise ShapeError(f"{what}: {kind} is gated: x's last dimension "
                         f"holds the activation's and the gate's halves and "
                         f"must be even, got shape {list(x.shape)}")
    return x


def activation(x, kind, *, limit=None, alpha=None, linear_offset=None,
               out_dtype=None, quantize=None, fp8="e4m3", scale=None,
               usage=None, keep_output=False, pow2_scales=None,
               amax_epsilon=None, with_amax=False, device=None):
    """TE's activation `kind` of x (te.activation): gelu, qgelu, relu,
    srelu, silu, or the gated geglu, qgeglu, reglu, sreglu, swiglu, glu
    and clamped_swiglu (limit, alpha, linear_offset), which take x's last
    dimension as [act half, gate half] and halve it. Returns y (dtype
    out_dtype, default x's); quantize=, keep_output= and with_amax= as
    layer_norm takes them (the Float8Tensor is of y)."""
    what = "activation"
    x = _activation_input(x, kind, what)
    attrs = _activation_attrs(kind, limit, alpha, linear_offset, what)
    _check_out_dtype(what, quantize, out_dtype, keep_output, "y")
    request = _Quantized(what, quantize, fp8, scale, usage, keep_output,
                         pow2_scales, amax_epsilon, with_amax)
    out = dtype_name(out_dtype) if out_dtype is not None else x.dtype
    shape = list(x.shape)
    if kind in GATED_ACTIVATIONS:
        shape[-1] //= 2
    outputs = request.run(("activation", attrs, out), "activation", [x],
                          attrs, shape, out, x.dtype, [], device)
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def activation_backward(grad, x, kind, *, dbias=False, limit=None,
                        alpha=None, linear_offset=None, out_dtype=None,
                        quantize=None, fp8="e4m3", scale=None, usage=None,
                        keep_output=False, pow2_scales=None,
                        amax_epsilon=None, with_amax=False, device=None):
    """The gradient of activation (te.activation_backward): dx from grad
    (the gradient of y; x's dtype) and x. dbias=True (plain kinds) also
    returns the column sums of dx over x's leading dimensions, last
    (TE's quantize_dbias_d*); quantize= as layer_norm takes it (TE's
    cast_transpose_dbias_d* with usage="both")."""
    what = "activation_backward"
    x = _activation_input(x, kind, what)
    grad = _arg(grad, "grad", (x.dtype,))
    attrs = _activation_attrs(kind, limit, alpha, linear_offset, what)
    if dbias:
        if kind in GATED_ACTIVATIONS:
            raise ValueError(f"{what}: dbias is for the plain activations "
                             f"(TE fuses no bias gradient with {kind})")
        if len(x.shape) < 2:
            raise ShapeError(f"{what}: dbias sums over x's leading "
                             "dimensions; x needs rank >= 2")
        attrs += " dbias"
    want = list(x.shape)
    if kind in GATED_ACTIVATIONS:
        want[-1] //= 2
    if list(grad.shape) != want:
        raise ShapeError(f"{what}: grad must have shape {want}, got "
                         f"{list(grad.shape)}")
    _check_out_dtype(what, quantize, out_dtype, keep_output, "dx")
    request = _Quantized(what, quantize, fp8, scale, usage, keep_output,
                         pow2_scales, amax_epsilon, with_amax)
    out = dtype_name(out_dtype) if out_dtype is not None else x.dtype
    trailing = [_tensor_type(x.dtype, [x.shape[-1]])] if dbias else []
    outputs = request.run(("activation_backward", attrs, out),
                          "activation_backward", [grad, x], attrs, x.shape,
                          out, x.dtype, trailing, device)
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


# --- Rotary position embedding ----------------------------------------------

ROPE_FORMATS = ("sbhd", "bshd", "thd")


def _rope_options(what, interleaved, cp_size, cp_rank):
    """The interleaved and context-parallel clauses of te.rope and
    te.qkv_rope."""
    attrs = " interleaved" if interleaved else ""
    if cp_size != 1:
        attrs += f" cp_size {int(cp_size)} cp_rank {int(cp_rank)}"
    elif cp_rank:
        raise ValueError(f"{what}: cp_rank={cp_rank} without cp_size > 1")
    return attrs


def _rope(op, x, freqs, tensor_format, interleaved, cu_seqlens,
          start_positions, cp_size, cp_rank, device):
    what = op
    _choice("tensor_format", tensor_format, ROPE_FORMATS)
    x = _arg(x, "x", ("f32", "f16", "bf16"))
    rank = 3 if tensor_format == "thd" else 4
    if len(x.shape) != rank:
        raise ShapeError(f"{what}: format {tensor_format} takes a rank-{rank} "
                         f"x, got shape {list(x.shape)}")
    freqs = _arg(freqs, "freqs", ("f32",), rank=4)
    if list(freqs.shape[1:3]) != [1, 1]:
        raise ShapeError(f"{what}: freqs must be [s2, 1, 1, d2], got shape "
                         f"{list(freqs.shape)}")
    d2 = freqs.shape[3]
    if d2 <= 0 or d2 % 2 or d2 > x.shape[-1]:
        raise ShapeError(f"{what}: the rotary dimension d2 = {d2} (freqs' "
                         f"last) must be even, > 0 and <= the head dimension "
                         f"{x.shape[-1]}")
    if (tensor_format == "thd") != (cu_seqlens is not None):
        raise ValueError(f"{what}: cu_seqlens is needed by, and only by, "
                         "tensor_format='thd'")
    cu_seqlens = _arg(cu_seqlens, "cu_seqlens", ("i32",), rank=1)
    start_positions = _arg(start_positions, "start_positions", ("i32",),
                           rank=1)
    attrs = f"format {tensor_format}" + _rope_options(what, interleaved,
                                                      cp_size, cp_rank)
    clauses = ""
    index = 2
    if cu_seqlens is not None:
        clauses += f" cu_seqlens(%a{index})"
        index += 1
    if start_positions is not None:
        clauses += f" start_positions(%a{index})"

    def src(a):
        return _function(
            a, f"%r = te.{op} %a0, %a1{clauses} {attrs} : "
            f"{', '.join(v.type for v in a)} -> {a[0].type}", [a[0].type])
    return _run((op, attrs, clauses), [x, freqs, cu_seqlens, start_positions],
                src, device)[0]


def rope(x, freqs, tensor_format="sbhd", *, interleaved=False,
         cu_seqlens=None, start_positions=None, cp_size=1, cp_rank=0,
         device=None):
    """TE's fused RoPE (te.rope; apply_rotary_pos_emb with fused=True): x
    [s, b, h, d] (sbhd), [b, s, h, d] (bshd) or [t, h, d] (thd, with
    cu_seqlens i32 [sequences + 1]); freqs f32 [s2, 1, 1, d2], its first
    d2 channels rotate; start_positions i32 [sequences] offsets each
    sequence's positions; cp_size and cp_rank place the rank's two chunks
    of every sequence (context parallelism)."""
    return _rope("rope", x, freqs, tensor_format, interleaved, cu_seqlens,
                 start_positions, cp_size, cp_rank, device)


def rope_backward(grad, freqs, tensor_format="sbhd", *, interleaved=False,
                  cu_seqlens=None, start_positions=None, cp_size=1,
                  cp_rank=0, device=None):
    """The gradient of rope (te.rope_backward): grad has x's shape; the
    other arguments are rope's."""
    return _rope("rope_backward", grad, freqs, tensor_format, interleaved,
                 cu_seqlens, start_positions, cp_size, cp_rank, device)


def _qkv_rope_attrs(what, qkv_shape, split, tensor_format, interleaved,
                    cp_size, cp_rank):
    """te.qkv_rope's attributes, after the checks that name the fix;
    returns (attrs, (q, k, v) result shapes)."""
    if tensor_format not in ("sbhd", "bshd"):
        raise ValueError(f"{what}: tensor_format must be 'sbhd' or 'bshd' "
                         f"(TE's fused QKV RoPE takes no other), got "
                         f"{tensor_format!r}")
    if len(qkv_shape) != 4:
        raise ShapeError(f"{what}: qkv must be [s, b, h, q + k + v] (sbhd) "
                         f"or [b, s, h, q + k + v] (bshd), got shape "
                         f"{list(qkv_shape)}")
    sizes = [_integer("split", n) for n in split]
    if (len(sizes) != 3 or min(sizes) <= 0 or sum(sizes) != qkv_shape[-1]
            or sizes[0] % sizes[1] or sizes[1] % sizes[2]):
        raise ShapeError(f"{what}: split must be three sizes [q, k, v] > 0 "
                         f"summing to qkv's last dimension ({qkv_shape[-1]}), "
                         f"q a multiple of k and k of v (the head dim), got "
                         f"{list(split)}")
    attrs = (f"format {tensor_format} split "
             f"[{', '.join(str(n) for n in sizes)}]"
             + _rope_options(what, interleaved, cp_size, cp_rank))
    return attrs, qkv_part_shapes(qkv_shape, sizes)


def qkv_part_shapes(qkv_shape, split):
    """The shapes of te.qkv_rope's q, k and v for a fused tensor of
    `qkv_shape` ([s, b, h, q + k + v] or [b, s, ...]) and split [q, k, v]:
    [.., h q / k, k], [.., h, k], [.., h, v]."""
    lead, h = list(qkv_shape[:2]), qkv_shape[2]
    q, k, v = split
    return (lead + [h * q // k, k], lead + [h, k], lead + [h, v])


def qkv_rope(qkv, q_freqs, k_freqs, split, tensor_format="sbhd", *,
             start_positions=None, interleaved=False, cp_size=1, cp_rank=0,
             device=None):
    """TE's fused QKV RoPE (te.qkv_rope; apply_fused_qkv_rotary_pos_emb):
    qkv [s, b, h, q + k + v] (sbhd) or [b, s, h, q + k + v] (bshd), split
    [q, k, v] (TE's qkv_split_arg_list; v is the head dim d). Returns TE's
    (q [.., h q / k, k], k [.., h, k], v [.., h, v]): every d channels of
    the query part rotated by q_freqs, of the key part by k_freqs (f32
    [s2, 1, 1, d2], the same d2), as te.rope rotates a head; v copied."""
    what = "qkv_rope"
    qkv = _arg(qkv, "qkv", ("f32", "f16", "bf16"))
    attrs, shapes = _qkv_rope_attrs(what, qkv.shape, split, tensor_format,
                                    interleaved, cp_size, cp_rank)
    q_freqs = _arg(q_freqs, "q_freqs", ("f32",), rank=4)
    k_freqs = _arg(k_freqs, "k_freqs", ("f32",), rank=4)
    start_positions = _arg(start_positions, "start_positions", ("i32",),
                           rank=1)
    clause = "" if start_positions is None else " start_positions(%a3)"
    results = [_tensor_type(qkv.dtype, shape) for shape in shapes]

    def src(a):
        return _function(
            a, f"%r:3 = te.qkv_rope %a0, %a1, %a2{clause} {attrs} : "
            f"{', '.join(v.type for v in a)} -> {', '.join(results)}",
            results)
    return tuple(_run((what, attrs, clause),
                      [qkv, q_freqs, k_freqs, start_positions], src, device))


def qkv_rope_backward(dq, dk, dv, q_freqs, k_freqs, split,
                      tensor_format="sbhd", *, interleaved=False, cp_size=1,
                      cp_rank=0, device=None):
    """The gradient of qkv_rope (te.qkv_rope_backward): dq, dk, dv in
    qkv_rope's result shapes; returns qkv's gradient. As TE's fused
    backward, it takes no start positions."""
    what = "qkv_rope_backward"
    dq = _arg(dq, "dq", ("f32", "f16", "bf16"))
    dk = _arg(dk, "dk", ("f32", "f16", "bf16"))
    dv = _arg(dv, "dv", ("f32", "f16", "bf16"))
    if len(dv.shape) != 4:
        raise ShapeError(f"{what}: dv must be [s, b, h, v] or [b, s, h, v], "
                         f"got shape {list(dv.shape)}")
    qkv_shape = list(dv.shape[:3]) + [sum(int(n) for n in split)]
    attrs, _ = _qkv_rope_attrs(what, qkv_shape, split, tensor_format,
                               interleaved, cp_size, cp_rank)
    q_freqs = _arg(q_freqs, "q_freqs", ("f32",), rank=4)
    k_freqs = _arg(k_freqs, "k_freqs", ("f32",), rank=4)
    result = _tensor_type(dv.dtype, qkv_shape)

    def src(a):
        return _function(
            a, f"%r = te.qkv_rope_backward %a0, %a1, %a2, %a3, %a4 {attrs} : "
            f"{', '.join(v.type for v in a)} -> {result}", [result])
    return _run((what, attrs), [dq, dk, dv, q_freqs, k_freqs], src,
                device)[0]


# --- Cross-entropy ------------------------------------------------------------


def cross_entropy(logits, target, *, label_smoothing=0.0, reduce_loss=False,
                  ignore_index=-100, grad_dtype=None, group_size=None,
                  ranks=None, device=None):
    """TE's fused cross-entropy (te.cross_entropy, TE's
    parallel_cross_entropy): logits [..., V] (f32, f16 or bf16), target
    the class of every row (i32 or i64). Returns (loss, grad): loss f32 per
    row, or with reduce_loss its sum over the rows divided by the number of
    rows not ignored (at least 1), as TE; grad the logits' gradient for a
    loss gradient of 1, computed in f32 and returned in grad_dtype: "f32"
    (TE's) or, by default, the logits' dtype, rounded once
    (cross_entropy_backward scales it).

    group_size / ranks (as the collectives take them; under mpirun) split
    the vocabulary over a group: each rank passes its V columns (rank r:
    classes [r V, (r + 1) V)) and the targets of the whole vocabulary, and
    gets its columns' gradient; the loss is the whole vocabulary's, except
    that with label_smoothing each rank's holds its own columns' share of
    the smoothing term, as TE's. Without them, no group."""
    what = "cross_entropy"
    logits = _arg(logits, "logits", ("f32", "f16", "bf16"))
    target = _arg(target, "target", ("i32", "i64"))
    if len(logits.shape) < 2:
        raise ShapeError(f"{what}: logits must have rank >= 2 ([rows..., "
                         f"V]), got shape {list(logits.shape)}")
    if list(target.shape) != list(logits.shape[:-1]):
        raise ShapeError(f"{what}: target must have shape "
                         f"{list(logits.shape[:-1])}, got "
                         f"{list(target.shape)}")
    if not 0.0 <= float(label_smoothing) < 1.0:
        raise ValueError(f"{what}: label_smoothing must be in [0, 1), got "
                         f"{label_smoothing}")
    attrs = ""
    if label_smoothing:
        attrs += f" label_smoothing {_float('label_smoothing', label_smoothing)}"
    if int(ignore_index) != -100:
        attrs += f" ignore_index {int(ignore_index)}"
    if reduce_loss:
        attrs += " reduce_loss"
    grad = dtype_name(grad_dtype or logits.dtype)
    if grad not in ("f32", logits.dtype):
        raise DTypeError(f"{what}: grad_dtype must be f32 or the logits' "
                         f"dtype ({logits.dtype}), got {grad}")
    group = ""
    if group_size is not None or ranks is not None:
        _, group = _group(group_size, ranks, device)
        attrs += " group @g"
        group += "\n"
    loss = _tensor_type("f32", [] if reduce_loss else target.shape)
    results = [loss, _tensor_type(grad, logits.shape)]
    src = lambda a: group + _function(
        a, f"%r:2 = te.cross_entropy %a0, %a1{attrs} : {a[0].type}, "
        f"{a[1].type} -> {', '.join(results)}", results)
    return tuple(_run((what, attrs, grad, group), [logits, target], src,
                      device))


def cross_entropy_backward(grad, dloss, *, dtype=None, device=None):
    """The logits' gradient (te.cross_entropy_backward): cross_entropy's
    grad times dloss (an f32 scalar, or one per row), computed in f32 and
    rounded once to dtype: grad's by default; an f32 grad may give f16 or
    bf16 (the logits' dtype, as TE's autograd returns it)."""
    grad = _arg(grad, "grad", ("f32", "f16", "bf16"))
    dloss = _arg(dloss, "dloss", ("f32",))
    if dloss.shape and list(dloss.shape) != list(grad.shape[:-1]):
        raise ShapeError(f"cross_entropy_backward: dloss must be a scalar or "
                         f"have shape {list(grad.shape[:-1])}, got "
                         f"{list(dloss.shape)}")
    out = dtype_name(dtype or grad.dtype)
    if out != grad.dtype and (grad.dtype != "f32" or
                              out not in HIGH_PRECISION):
        wider = ", f16 or bf16" if grad.dtype == "f32" else ""
        raise DTypeError(f"cross_entropy_backward: dtype must be grad's "
                         f"({grad.dtype}){wider}, got {out}")
    result = _tensor_type(out, grad.shape)
    src = lambda a: _function(
        a, f"%r = te.cross_entropy_backward %a0, %a1 : {a[0].type}, "
        f"{a[1].type} -> {result}", [result])
    return _run(("cross_entropy_backward", out), [grad, dloss], src,
                device)[0]


# --- Collectives ---------------------------------------------------------

REDUCTIONS = ("sum", "max", "min", "avg")


def world(device=None):
    """(rank, size) of this process in the job the device's collectives run
    in: MPI's world on the cpu device (mpirun -np N python ...); (0, 1)
    outside a job."""
    return _device(device).world()


def _group(group_size, ranks, device):
    """The te.process_group line of a collective's program: `group_size`
    ranks per group (default: the whole world), consecutive blocks of the
    world or, with `ranks`, the listed world ranks group after group."""
    if group_size is None:
        group_size = len(ranks) if ranks is not None else world(device)[1]
    group_size = _integer("group_size", group_size)
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1, got {group_size}")
    line = f"te.process_group @g size {group_size}"
    if ranks is not None:
        line += (" ranks ["
                 f"{', '.join(str(_integer('ranks', r)) for r in ranks)}]")
    return group_size, line


def _collective(name, x, op, result_shape, group_size, ranks, device):
    x = _arg(x, "x")
    size, group = _group(group_size, ranks, device)
    shape = result_shape(size, list(x.shape))
    result = _tensor_type(x.dtype, shape)
    src = lambda a: group + "\n" + _function(
        a, f"%r = {op} : {a[0].type}" +
        ("" if name in ("all_reduce", "permute") else f" -> {result}"),
        [result])
    return _run((name, op, group), [x], src, device)[0]


def _split(what, size, extent):
    if extent % size:
        raise ShapeError(f"{what}: dimension of {extent} is not divisible "
                         f"by the group's {size} ranks")
    return extent // size


def all_reduce(x, reduce="sum", *, group_size=None, ranks=None,
               device=None):
    """The element-wise reduction (sum, max, min, avg) of x over the group
    (te.all_reduce)."""
    _choice("reduce", reduce, REDUCTIONS)
    return _collective("all_reduce", x, f"te.all_reduce %a0 group @g reduce "
                       f"{reduce}", lambda n, s: s, group_size, ranks,
                       device)


def all_gather(x, dim=0, *, group_size=None, ranks=None, device=None):
    """The group's inputs concatenated in rank order along `dim`
    (te.all_gather)."""
    x = _arg(x, "x")
    dim = _dim("all_gather", "dim", dim, x.shape)

    def shape(n, s):
        s[dim] *= n
        return s
    return _collective("all_gather", x, f"te.all_gather %a0 group @g dim "
                       f"{dim}", shape, group_size, ranks, device)


def reduce_scatter(x, dim=0, reduce="sum", *, group_size=None, ranks=None,
                   device=None):
    """Chunk `rank` along `dim` of the group's reduction
    (te.reduce_scatter)."""
    _choice("reduce", reduce, REDUCTIONS)
    x = _arg(x, "x")
    dim = _dim("reduce_scatter", "dim", dim, x.shape)

    def shape(n, s):
        s[dim] = _split("reduce_scatter", n, s[dim])
        return s
    return _collective("reduce_scatter", x, f"te.reduce_scatter %a0 group @g "
                       f"dim {dim} reduce {reduce}", shape, group_size,
                       ranks, device)


def all_to_all(x, split_dim, concat_dim, *, group_size=None, ranks=None,
               device=None):
    """x split along `split_dim`, chunk j sent to rank j, the received
    chunks concatenated along `concat_dim` (te.all_to_all)."""
    x = _arg(x, "x")
    split_dim = _dim("all_to_all", "split_dim", split_dim, x.shape)
    concat_dim = _dim("all_to_all", "concat_dim", concat_dim, x.shape)

    def shape(n, s):
        s[split_dim] = _split("all_to_all", n, s[split_dim])
        s[concat_dim] *= n
        return s
    return _collective("all_to_all", x, f"te.all_to_all %a0 group @g "
                       f"split_dim {split_dim} concat_dim {concat_dim}",
                       shape, group_size, ranks, device)


def permute(x, shift=1, *, group_size=None, ranks=None, device=None):
    """What rank r - shift of the group sent: each rank sends x to rank
    r + shift (te.permute, the ring of context parallelism)."""
    return _collective("permute", x, f"te.permute %a0 group @g shift "
                       f"{_integer('shift', shift)}", lambda n, s: s,
                       group_size, ranks, device)
