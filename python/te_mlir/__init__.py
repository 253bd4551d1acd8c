"""te-mlir from Python: compile, cache and run te programs, with plugins.

    import numpy as np, te_mlir
    jit = te_mlir.Jit()
    jit.load_plugins("te-plugin-onednn")          # like NVTE_PLUGIN
    print(te_mlir.format_explain(jit.explain(source)))
    module = jit.compile(source)                  # for te_mlir.Device("cpu")
    (amax,) = module(np.ones((4, 8), np.float32))

A plugin's own device comes from its runtime plugin:
te_mlir.load_runtime_plugin(path), then jit.compile(source,
device=te_mlir.Device("vendor")). Arrays are numpy arrays (or other host
arrays with DLPack); bf16 and FP8 use ml_dtypes' types. On the cpu device
inputs and outputs cross without copies. Failures raise te_mlir.Error
(te_mlir/errors.py: CompileError, ShapeError, DTypeError, PluginError,
DeviceError) with the runtime's or the compiler's message and the
runtime's status name.
"""

import os
import threading
from collections import namedtuple

import ml_dtypes
import numpy as np

from ._core import Device, __version__, get_num_threads, load_runtime_plugin
from ._core import set_num_threads
from ._core import (host_temporaries_info, release_host_temporaries,
                    set_host_temporaries_limit)
from ._core import Jit as _Jit
from .errors import (CompileError, DTypeError, DeviceError, Error,
                     PluginError, ShapeError)

__all__ = ["__version__", "CompileError", "DTypeError", "Device",
           "DeviceError", "Error", "ExplainRow", "Jit", "Module",
           "PluginError", "ShapeError", "cache", "compile", "default_jit",
           "explain",
           "format_explain", "get_num_threads", "host_temporaries_info",
           "load_runtime_plugin", "numpy_dtype", "ops", "plugins", "recipe",
           "release_host_temporaries", "set_host_temporaries_limit",
           "set_num_threads"]

_DTYPES = {
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f8E4M3FN": np.dtype(ml_dtypes.float8_e4m3fn),
    "f8E5M2": np.dtype(ml_dtypes.float8_e5m2),
    "f8E8M0FNU": np.dtype(ml_dtypes.float8_e8m0fnu),
    "i1": np.dtype(np.bool_),
    "i8": np.dtype(np.int8),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
}

# Types numpy arrays hold through ml_dtypes, which cross to the runtime as
# their raw bits.
_RAW_BITS = {
    "bf16": np.dtype(np.uint16),
    "f8E4M3FN": np.dtype(np.uint8),
    "f8E5M2": np.dtype(np.uint8),
    "f8E8M0FNU": np.dtype(np.uint8),
}

ExplainRow = namedtuple("ExplainRow", "op location backend notes")


def _from_raw_bits(outputs, dtypes):
    """A kernel's outputs (numpy arrays; bf16 and FP8 as their raw bits) as
    arrays of their te `dtypes`, viewed without a copy."""
    return tuple(out.view(_DTYPES[dtype]) if dtype in _RAW_BITS else out
                 for out, dtype in zip(outputs, dtypes))


def _resolve_views(array):
    """`array`, or for a torch tensor that is a negative or conjugate view
    (torch._neg_view, .conj() of a complex tensor) a copy with the
    negation or conjugation applied: DLPack and .numpy() hand over the
    memory only, so the view's sign would be lost and the kernel would
    compute on the tensor it views."""
    if type(array).__module__.split(".")[0] == "torch" and (
            array.is_neg() or array.is_conj()):
        return array.resolve_conj().resolve_neg()
    return array


def numpy_dtype(te_dtype):
    """The numpy dtype of a te element type name ("bf16" -> bfloat16)."""
    return _DTYPES[te_dtype]


def _default_compiler_library():
    """TE_COMPILER_LIBRARY, else libTECompiler.so of the build or
    installation this package belongs to: te_mlir/lib in a wheel (the
    package is the prefix), else <prefix>/lib beside
    <prefix>/python/te_mlir."""
    path = os.environ.get("TE_COMPILER_LIBRARY")
    if path:
        return path
    here = os.path.dirname(os.path.abspath(__file__))
    inside = os.path.join(here, "lib", "libTECompiler.so")
    if os.path.exists(inside):
        return inside
    return os.path.join(here, os.pardir, os.pardir, "lib", "libTECompiler.so")


def format_explain(rows):
    """The rows of Jit.explain as te-run --explain and te-opt
    --te-explain-dispatch print them (the format of
    include/te/Support/ExplainTable.h, which test_te_mlir.py holds this
    copy to)."""
    table = [("op", "location", "backend", "declined / notes")]
    table += [(r.op, r.location, r.backend, r.notes or "-") for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(3)]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths)) +
        "  " + row[3] for row in table)


class Module:
    """A compiled te program loaded on a device; call it with numpy arrays."""

    def __init__(self, core, outcome, compile_ms, explain=None):
        self._core = core
        self._explain = explain
        #: "miss", "hit (disk)" or "hit (memory)".
        self.cache = outcome
        #: Milliseconds spent compiling (0 on a hit).
        self.compile_ms = compile_ms
        self._kernels = list(core.kernels)
        self._signatures = {}

    @property
    def kernels(self):
        """The entry functions' names."""
        return list(self._kernels)

    @property
    def device_name(self):
        """The device the module runs on ("cpu", ...)."""
        return self._core.device_name

    def explain(self):
        """Which backend lowered each te op of the module's program, and why
        plugin providers declined: Jit.explain of its source for its
        device (the dispatch as it is now, with the plugins loaded now)."""
        return self._explain()

    def __repr__(self):
        return (f"<te_mlir.Module {', '.join(self._kernels)} on "
                f"{self.device_name} (cache {self.cache})>")

    def signature(self, entry=None):
        """[(is_output, dtype name, shape)] of `entry`'s arguments."""
        entry = self._entry(entry)
        if entry not in self._signatures:
            self._signatures[entry] = [
                (out, dtype, tuple(shape))
                for out, dtype, shape in self._core.signature(entry)]
        return self._signatures[entry]

    def __call__(self, *inputs, entry=None):
        """Runs `entry` (the only kernel by default) on `inputs` and returns
        its outputs as a tuple of numpy arrays. Each input must have the
        argument's exact dtype and shape: a numpy array (ml_dtypes for bf16
        and FP8) or any host array with DLPack (a CPU torch tensor, say).
        On the cpu device the kernel reads the inputs where they are and
        the outputs are the buffers it wrote: nothing is copied (a
        non-contiguous input is made contiguous first, and a torch
        tensor that is a negative or conjugate view is resolved, as
        resolve_neg() and resolve_conj() do)."""
        entry = self._entry(entry)
        args = self.signature(entry)
        expected = [a for a in args if not a[0]]
        if len(inputs) != len(expected):
            raise Error(f"@{entry} takes {len(expected)} inputs, "
                        f"got {len(inputs)}", "TE_ERROR_INVALID_ARGUMENT")
        arrays = []
        for i, (array, (_, dtype, shape)) in enumerate(zip(inputs, expected)):
            if isinstance(array, np.ndarray) or not hasattr(array,
                                                            "__dlpack__"):
                array = np.asarray(array)
                if array.dtype != _DTYPES[dtype] or array.shape != shape:
                    kind = (ShapeError if array.dtype == _DTYPES[dtype]
                            else DTypeError)
                    raise kind(
                        f"@{entry} input {i}: expected {dtype} "
                        f"{'x'.join(map(str, shape)) or 'scalar'}, got "
                        f"{array.dtype} "
                        f"{'x'.join(map(str, array.shape)) or 'scalar'}")
                # numpy has no DLPack type for ml_dtypes' types: their bits.
                if dtype in _RAW_BITS:
                    array = array.view(_RAW_BITS[dtype])
            else:
                array = _resolve_views(array)
            arrays.append(array)
        outputs = self._core.run(entry, arrays)
        return _from_raw_bits(outputs, [dtype for out, dtype, _ in args
                                        if out])

    def _entry(self, entry):
        if entry is not None:
            return entry
        kernels = self._kernels
        if len(kernels) != 1:
            raise Error("the module has several entry functions "
                        f"({', '.join(kernels)}); pass entry=",
                        "TE_ERROR_INVALID_ARGUMENT")
        return kernels[0]


class Jit:
    """Compiles, caches (memory and disk) and loads te programs.

    `compiler_library` is libTECompiler.so (default: TE_COMPILER_LIBRARY,
    else the one of this build); it is loaded on the first cache miss,
    explain or load_plugins."""

    def __init__(self, compiler_library=None):
        self._library = compiler_library or _default_compiler_library()
        self._core = _Jit(self._library)

    def __repr__(self):
        return f"<te_mlir.Jit compiler={os.path.normpath(self._library)}>"

    def load_plugins(self, *specs):
        """Loads te-mlir plugins (paths, or names searched in TE_PLUGIN_PATH
        and the installed plugin directory) after those of NVTE_PLUGIN, for
        every later compile of this process; order is priority. A failing
        plugin warns on stderr and is skipped, or raises Error under
        NVTE_PLUGIN_STRICT=1."""
        self._core.load_plugins(",".join(specs))

    def cache_info(self):
        """What the caches hold: a dict with memory_modules (modules this
        Jit keeps loaded), disk_enabled, disk_directory, disk_entries and
        disk_bytes (compiled libraries on disk) and disk_max_bytes (the
        bound, TE_CACHE_MAX_BYTES; 0 for none)."""
        return self._core.cache_info()

    def clear_cache(self, disk=True):
        """Forgets the loaded modules (those in use stay alive; on the
        shared Jit, te_mlir.ops's too) and, with `disk`, removes the disk
        cache's entries, which every process using that directory then
        compiles again."""
        self._core.clear_cache(disk)
        if self is _DEFAULT_JIT:
            ops._forget_programs()

    def explain(self, source, device="cpu", name="<python>"):
        """Which backend lowers each te op of `source` for `device` (a
        Device or a device name), and why plugin providers declined."""
        device_name = device.name if isinstance(device, Device) else device
        table = self._core.explain(source, name, device_name)
        return [ExplainRow(*line.split("\t", 3)) for line in table.splitlines()]

    def compile(self, source, device=None, name="<python>"):
        """The Module of `source` on `device` (default: the host CPU),
        compiled for the target registered for that device."""
        device = device if device is not None else Device("cpu")
        core, outcome, compile_ms = self._core.load(device, source, name)
        return Module(core, outcome, compile_ms,
                      lambda: self.explain(source, device, name))


def explain(program, device="cpu", name="<python>"):
    """The dispatch table (ExplainRows) of a Module's program, or of a
    program's source text for `device` on the shared Jit."""
    if isinstance(program, Module):
        return program.explain()
    return default_jit().explain(program, device, name)


_DEFAULT_JIT = None
_DEFAULT_JIT_LOCK = threading.Lock()


def default_jit():
    """The process's shared Jit, created at first use: te_mlir.cache's
    functions work on it."""
    global _DEFAULT_JIT
    with _DEFAULT_JIT_LOCK:
        if _DEFAULT_JIT is None:
            _DEFAULT_JIT = Jit()
        return _DEFAULT_JIT


def compile(source, device=None, plugins=None, name=None):
    """A whole te program compiled and loaded on `device` (default: the host
    CPU) by the shared Jit: `source` is program text or the path of a
    .mlir file. `plugins` (a name, a path or a list of them) are loaded
    first, as Jit.load_plugins loads them."""
    if name is None:
        name = "<python>"
        if "\n" not in source and os.path.isfile(source):
            name = source
            with open(source) as f:
                source = f.read()
    jit = default_jit()
    if plugins:
        jit.load_plugins(*([plugins] if isinstance(plugins, str)
                           else plugins))
    if isinstance(device, str):
        device = Device(device)
    return jit.compile(source, device=device, name=name)


from . import cache, ops, plugins, recipe  # noqa: E402  (need default_jit)
