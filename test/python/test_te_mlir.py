"""The te_mlir Python package: running programs, errors, and plugins loaded
from Python (compiler plugins with Jit.load_plugins, devices with
load_runtime_plugin).

Plugins are process-wide, so every test that loads one runs its script in
a fresh interpreter (run_script)."""

import ast
import os
import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest

import te_mlir

FIXTURES = os.environ["TE_PLUGIN_FIXTURES"]
STEP = os.path.join(os.path.dirname(__file__), os.pardir, "Plugin", "Inputs",
                    "step.mlir")
SOURCE = open(STEP).read()
ONEDNN = os.path.join(os.path.dirname(te_mlir.__file__), os.pardir, os.pardir,
                      "lib", "te-mlir", "plugins", "libte-plugin-onednn.so")


@pytest.fixture(autouse=True)
def clean_environment(tmp_path, monkeypatch):
    for name in ("NVTE_PLUGIN", "NVTE_PLUGIN_STRICT", "NVTE_PLUGIN_POLICY",
                 "NVTE_PLUGIN_DENY", "TE_RUNTIME_PLUGIN", "TE_CACHE_DISABLE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TE_CACHE_DIR", str(tmp_path / "cache"))


def run_script(body, **env):
    """Runs `body` in a new interpreter with te_mlir, numpy as np, the step
    program as SOURCE, its inputs X, Y, S and FIXTURES defined; returns the
    completed process (stdout, stderr as text)."""
    prelude = textwrap.dedent(f"""
        import numpy as np, ml_dtypes, te_mlir
        FIXTURES = {FIXTURES!r}
        SOURCE = open({STEP!r}).read()
        rng = np.random.default_rng(0)
        X = rng.standard_normal((4, 8)).astype(np.float32)
        Y = rng.standard_normal(8).astype(ml_dtypes.bfloat16)
        S = np.array(2.0, np.float32)
        def same(a, b):
            return all(x.tobytes() == y.tobytes() for x, y in zip(a, b))
    """)
    full_env = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c",
                           prelude + textwrap.dedent(body)],
                          env=full_env, capture_output=True, text=True,
                          timeout=300)


def step_inputs():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    y = rng.standard_normal(8).astype(ml_dtypes.bfloat16)
    return x, y, np.array(2.0, np.float32)


def test_runs_on_the_host_against_numpy():
    x, y, s = step_inputs()
    module = te_mlir.Jit().compile(SOURCE, name="step.mlir")
    assert module.kernels == ["step"]
    assert module.device_name == "cpu"
    assert module.cache == "miss"
    amax_x, amax_y, data, scale_inv, amax = module(x, y, s)
    # amax is a maximum of magnitudes: exact in any order.
    assert amax_x == np.abs(x).max() and amax == np.abs(x).max()
    assert amax_y == np.abs(y.astype(np.float32)).max()
    # Per-tensor quantization is x * scale rounded to nearest even into
    # E4M3 (|x * 2| < 448 here, so no saturation): bit-exact.
    expected = (x * s).astype(ml_dtypes.float8_e4m3fn)
    assert data.dtype == ml_dtypes.float8_e4m3fn
    assert data.tobytes() == expected.tobytes()
    assert scale_inv == np.float32(1) / s
    # A new context finds it in the disk cache.
    assert te_mlir.Jit().compile(SOURCE).cache == "hit (disk)"


SCALE = """
func.func @scale(%x: tensor<2048x2048xbf16>, %s: tensor<f32>)
    -> (tensor<2048x2048xf8E4M3FN>, tensor<f32>, tensor<f32>) {
  %d, %si, %a = te.quantize %x scale(%s) mode per_tensor
      : tensor<2048x2048xbf16>, tensor<f32>
      -> tensor<2048x2048xf8E4M3FN>, tensor<f32>, tensor<f32>
  return %d, %si, %a : tensor<2048x2048xf8E4M3FN>, tensor<f32>, tensor<f32>
}
"""


def test_arrays_cross_without_copies():
    """On the cpu device the kernel reads the input where it is and the
    output is the buffer it wrote: a call allocates no Python-visible
    memory for its 8 MiB input (tracemalloc sees numpy's and Python's
    allocations), the output owns no data of its own, and it outlives the
    module that made it."""
    import gc
    import tracemalloc
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2048, 2048)).astype(ml_dtypes.bfloat16)
    s = np.array(4.0, np.float32)
    module = te_mlir.Jit().compile(SCALE)
    module(x, s)
    tracemalloc.start()
    data, scale_inv, amax = module(x, s)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < x.nbytes // 100, peak
    assert data.dtype == ml_dtypes.float8_e4m3fn
    assert not data.flags.owndata and not data.base.flags.owndata
    assert data.__array_interface__["data"][0] % 64 == 0
    del module
    gc.collect()
    want = (x.astype(np.float32) * s).astype(ml_dtypes.float8_e4m3fn)
    assert data.tobytes() == want.tobytes()
    assert amax == np.abs(x.astype(np.float32)).max()
    # A strided input is made dense first, then runs as well.
    wide = np.zeros((2048, 4096), ml_dtypes.bfloat16)
    wide[:, ::2] = x
    module = te_mlir.Jit().compile(SCALE)
    (strided, _, _) = module(wide[:, ::2], s)
    assert strided.tobytes() == want.tobytes()


def test_concurrent_calls_from_threads():
    """One module called from eight threads at once (launches release the
    GIL): every call gets its own outputs, equal to the sequential ones."""
    from concurrent.futures import ThreadPoolExecutor
    rng = np.random.default_rng(2)
    s = np.array(4.0, np.float32)
    inputs = [rng.standard_normal((2048, 2048)).astype(ml_dtypes.bfloat16)
              for _ in range(4)]
    module = te_mlir.Jit().compile(SCALE)
    want = [module(x, s) for x in inputs]
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda i: module(inputs[i % 4], s), range(32)))
    for i, outputs in enumerate(got):
        for a, b in zip(outputs, want[i % 4]):
            assert a.tobytes() == b.tobytes(), f"call {i}"
    # Distinct calls never share an output buffer.
    addresses = {o[0].__array_interface__["data"][0] for o in got}
    assert len(addresses) == len(got)


def test_cache_info_and_clear(tmp_path, monkeypatch):
    """te_mlir.cache reports the shared Jit's caches and clears them; a
    cleared disk cache makes the next compile a miss."""
    # A shared Jit of this test's own: an earlier test's keeps its cache
    # directory.
    monkeypatch.setattr(te_mlir, "_DEFAULT_JIT", None)
    jit = te_mlir.default_jit()
    assert te_mlir.default_jit() is jit
    te_mlir.cache.clear()
    info = te_mlir.cache.info()
    assert info["memory_modules"] == 0 and info["disk_entries"] == 0
    assert info["disk_directory"] == str(tmp_path / "cache")
    assert info["disk_enabled"] and info["disk_max_bytes"] == 0
    assert jit.compile(SOURCE).cache == "miss"
    info = te_mlir.cache.info()
    assert info["memory_modules"] == 1 and info["disk_entries"] == 1
    assert info["disk_bytes"] > 0
    te_mlir.cache.clear(disk=False)
    assert te_mlir.cache.info()["memory_modules"] == 0
    assert jit.compile(SOURCE).cache == "hit (disk)"
    te_mlir.cache.clear()
    assert te_mlir.cache.info()["disk_entries"] == 0
    assert jit.compile(SOURCE).cache == "miss"


def test_plugins_info_says_which_plugins_are_available_active_or_failed():
    """te_mlir.plugins.info() lists NVTE_PLUGIN's plugins with their states:
    the good fixture available, then active once a compile started it; the
    one built for another plugin ABI failed, with the step and the reason."""
    script = """
        good, broken = te_mlir.plugins.info()
        print(good["state"], good["name"], good["version"], good["source"],
              good["failure"], good["providers"]["amax"])
        print(broken["state"], broken["name"], broken["failure"])
        te_mlir.default_jit().compile(SOURCE)
        print([p["state"] for p in te_mlir.plugins.info()])
    """
    proc = run_script(script, NVTE_PLUGIN=FIXTURES + "/libte-fixture-good.so,"
                      + FIXTURES + "/libte-fixture-abi-major.so")
    assert proc.returncode == 0, proc.stderr
    available, failed, after = proc.stdout.splitlines()
    assert available == "available fixture 1.0 NVTE_PLUGIN None ['te.amax']"
    assert failed.startswith("failed None handshake: the plugin is built for "
                             "plugin ABI 2.0")
    assert after == "['active', 'failed']"


def test_version_reprs_and_stubs():
    """The package says its version (the project's), its objects say what
    they are, and the extension has type stubs with its docstrings."""
    import re
    cmake = open(os.path.join(os.path.dirname(__file__), os.pardir,
                              os.pardir, "CMakeLists.txt")).read()
    version = re.search(r"project\(te-mlir VERSION ([0-9.]+)", cmake).group(1)
    assert te_mlir.__version__ == version
    assert repr(te_mlir.Device()) == "<te_mlir.Device 'cpu' 0>"
    jit = te_mlir.Jit()
    assert re.fullmatch(r"<te_mlir\.Jit compiler=\S+libTECompiler\.so>",
                        repr(jit))
    module = jit.compile(SOURCE)
    assert repr(module) == "<te_mlir.Module step on cpu (cache miss)>"
    stub = open(os.path.join(os.path.dirname(te_mlir.__file__),
                             "_core.pyi")).read()
    assert "class Device:" in stub and "def run(self, entry: str" in stub
    assert "without copies where the device's memory is the host's" in stub


def test_bad_input_raises_with_the_reason():
    x, y, s = step_inputs()
    jit = te_mlir.Jit()
    module = jit.compile(SOURCE)
    with pytest.raises(te_mlir.DTypeError, match=r"input 0: expected f32 4x8, "
                                                 r"got float64 4x8"):
        module(x.astype(np.float64), y, s)
    with pytest.raises(ValueError, match=r"input 0: expected f32 4x8, "
                                         r"got float32 8x4") as shape:
        module(x.T.copy(), y, s)
    assert isinstance(shape.value, te_mlir.ShapeError)
    with pytest.raises(te_mlir.Error, match=r"@step takes 3 inputs, got 2"):
        module(x, y)
    with pytest.raises(te_mlir.DeviceError, match=r"no device named 'nope' "
                                                  r"is registered") as device:
        te_mlir.Device("nope")
    assert device.value.status == "TE_ERROR_NOT_FOUND"
    with pytest.raises(te_mlir.CompileError,
                       match=r"broken.mlir:1:\d+: error") as compile_error:
        jit.compile("func.func @f( {", name="broken.mlir")
    assert compile_error.value.status == "TE_ERROR_COMPILE_FAILED"
    assert compile_error.value.location.startswith("broken.mlir:1:")
    assert "expected" in compile_error.value.diagnostics
    with pytest.raises(te_mlir.PluginError,
                       match=r"cannot load runtime plugin") as plugin:
        te_mlir.load_runtime_plugin(os.path.join(FIXTURES, "missing.so"))
    assert plugin.value.status == "TE_ERROR_LOAD_FAILED"
    # Every kind is an Error.
    for kind in (te_mlir.CompileError, te_mlir.ShapeError,
                 te_mlir.DTypeError, te_mlir.PluginError,
                 te_mlir.DeviceError):
        assert issubclass(kind, te_mlir.Error)


def test_thread_count():
    """te_mlir.set_num_threads changes the threads of host kernels from the
    next call on; 0 restores the default; bad counts raise. The results do
    not depend on it."""
    x, y, s = step_inputs()
    module = te_mlir.Jit().compile(SOURCE)
    default = te_mlir.get_num_threads()
    assert default >= 1
    try:
        te_mlir.set_num_threads(3)
        assert te_mlir.get_num_threads() == 3
        three = module(x, y, s)
        with pytest.raises(te_mlir.Error,
                           match=r"te_set_num_threads: -1 threads; give 1 "
                                 r"to 4096, or 0 for the default"):
            te_mlir.set_num_threads(-1)
        assert te_mlir.get_num_threads() == 3
    finally:
        te_mlir.set_num_threads(0)
    assert te_mlir.get_num_threads() == default
    for got, want in zip(module(x, y, s), three):
        assert got.tobytes() == want.tobytes()


GEMM = """func.func @gemm(%a: tensor<256x256xbf16>, %b: tensor<256x256xbf16>)
    -> tensor<256x256xbf16> {
  %d = te.scaled_matmul %a, %b transpose_b
      : tensor<256x256xbf16>, tensor<256x256xbf16> -> tensor<256x256xbf16>
  return %d : tensor<256x256xbf16>
}
"""


def test_host_temporaries():
    """A host GEMM's packed operands and product (256 KiB and more each)
    stay with the runtime for the next call, up to the limit; the results
    are the same whether a call gets kept blocks or fresh ones."""
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((256, 256)).astype(ml_dtypes.bfloat16)
            for _ in range(2))
    module = te_mlir.Jit().compile(GEMM)
    default = te_mlir.host_temporaries_info()["limit"]
    assert default == int(os.environ.get("TE_HOST_TEMPORARIES_BYTES", 1 << 30))
    try:
        te_mlir.release_host_temporaries()
        assert te_mlir.host_temporaries_info()["idle_bytes"] == 0
        (fresh,) = module(a, b)
        idle = te_mlir.host_temporaries_info()["idle_bytes"]
        assert idle >= 256 * 256 * 4
        (kept,) = module(a, b)
        assert te_mlir.host_temporaries_info()["idle_bytes"] == idle
        assert kept.tobytes() == fresh.tobytes()
        te_mlir.set_host_temporaries_limit(0)
        assert te_mlir.host_temporaries_info() == {"limit": 0, "idle_bytes": 0}
        (none_kept,) = module(a, b)
        assert te_mlir.host_temporaries_info()["idle_bytes"] == 0
        assert none_kept.tobytes() == fresh.tobytes()
        with pytest.raises(TypeError):
            te_mlir.set_host_temporaries_limit(-1)
    finally:
        te_mlir.set_host_temporaries_limit(None)
    assert te_mlir.host_temporaries_info()["limit"] == default
    want = a.astype(np.float32) @ b.astype(np.float32).T
    np.testing.assert_allclose(fresh.astype(np.float32), want, rtol=2 ** -7,
                               atol=2 ** -7 * np.abs(want).max())


THD = """func.func @thd(%q: tensor<13x2x8xf32>, %k: tensor<13x2x8xf32>,
                %v: tensor<13x2x8xf32>, %cq: tensor<3xi32>, %ckv: tensor<3xi32>)
    -> tensor<13x2x8xf32> {
  %o = te.attention %q, %k, %v layout thd mask padding cu_seqlens(%cq, %ckv)
      : (tensor<13x2x8xf32>, tensor<13x2x8xf32>, tensor<13x2x8xf32>,
         tensor<3xi32>, tensor<3xi32>) -> tensor<13x2x8xf32>
  return %o : tensor<13x2x8xf32>
}
"""


def test_bad_index_operands_raise():
    """A kernel that refuses its data raises with the op, the program's
    location and the operand; the module stays usable."""
    module = te_mlir.Jit().compile(THD, name="thd.mlir")
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((13, 2, 8)).astype(np.float32)
               for _ in range(3))
    good = np.array([0, 6, 13], np.int32)
    (out,) = module(q, k, v, good, good)
    assert np.isfinite(out).all()
    with pytest.raises(te_mlir.DeviceError,
                       match=r"te\.attention at thd\.mlir:4:8: "
                             r"cu_seqlens_kv\[2\] = 100000 is past the 13 "
                             r"tokens of k and v \(t_kv\)") as refused:
        module(q, k, v, good, np.array([0, 6, 100000], np.int32))
    assert refused.value.status == "TE_ERROR_KERNEL_FAILED"
    (again,) = module(q, k, v, good, good)
    assert again.tobytes() == out.tobytes()


def test_onednn_runtime_reports_failures():
    """The oneDNN plugin's runtime returns oneDNN's status instead of
    printing it; the plugin's lowering turns it into a te.check."""
    import ctypes
    path = os.path.join(os.path.dirname(ONEDNN), "libte-onednn-runtime.so")
    if not os.path.exists(path):
        pytest.skip("the oneDNN plugin is not built (no libdnnl-dev)")
    runtime = ctypes.CDLL(path)
    matmul = runtime.te_onednn_matmul_f32
    matmul.restype = ctypes.c_int32
    matmul.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int64] * 3 + \
        [ctypes.c_float, ctypes.c_int64]
    a = np.ones((2, 3), np.float32)
    b = np.ones((3, 4), np.float32)
    d = np.zeros((2, 4), np.float32)
    ptr = lambda x: x.ctypes.data_as(ctypes.c_void_p)
    assert matmul(ptr(a), ptr(b), None, ptr(d), 2, 4, 3, 1.0, 0) == 0
    assert (d == 3).all()
    # A negative dimension: oneDNN refuses it (dnnl_invalid_arguments, 2).
    assert matmul(ptr(a), ptr(b), None, ptr(d), 2, -4, 3, 1.0, 0) == 2


def test_load_plugins_from_python():
    proc = run_script("""
        jit = te_mlir.Jit()
        native = jit.compile(SOURCE)
        before = native(X, Y, S)
        print([r.backend for r in jit.explain(SOURCE)])
        jit.load_plugins(FIXTURES + "/libte-fixture-good.so")
        rows = jit.explain(SOURCE)
        print([r.backend for r in rows])
        print(rows[1].notes)
        # Modules compiled before the plugin are not reused from memory.
        module = jit.compile(SOURCE)
        print(module.cache, same(before, module(X, Y, S)))
    """)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines == [
        "['cpu (native)', 'cpu (native)', 'cpu (native)']",
        "['plugin fixture/amax', 'cpu (native)', 'plugin fixture/quantize']",
        "fixture/amax: only f32 inputs, got bf16",
        "miss True",
    ]


def test_explain_a_module_or_a_source():
    """te_mlir.explain takes a compiled Module (its program on its device)
    or source text (on the shared Jit)."""
    module = te_mlir.Jit().compile(SOURCE, name="step.mlir")
    rows = te_mlir.explain(module)
    assert [r.op for r in rows] == ["te.amax", "te.amax", "te.quantize"]
    assert rows[0].location == "step.mlir:5:8"
    assert all(r.backend == "cpu (native)" for r in rows)
    assert module.explain() == rows
    assert te_mlir.explain(SOURCE, name="step.mlir") == rows


def test_format_explain_prints_te_runs_table():
    """format_explain is te-run --explain's table, byte for byte."""
    te_run = os.path.join(os.path.dirname(te_mlir.__file__), os.pardir,
                          os.pardir, "bin", "te-run")
    plugins = ",".join(FIXTURES + f"/libte-fixture-{name}.so"
                       for name in ("good", "second"))
    run = subprocess.run([te_run, STEP, "--explain", "--random-inputs"],
                         env=dict(os.environ, NVTE_PLUGIN=plugins,
                                  TE_CACHE_DISABLE="1"),
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    proc = run_script(f"""
        jit = te_mlir.Jit()
        print(te_mlir.format_explain(jit.explain(SOURCE, name={STEP!r})))
    """, NVTE_PLUGIN=plugins)
    assert proc.returncode == 0, proc.stderr
    table = proc.stdout.splitlines()
    assert len(table) == 4 and "; second/amax: " in table[2]
    assert run.stdout.splitlines()[:4] == table


def test_broken_plugin_warns_or_raises_in_strict_mode():
    script = """
        jit = te_mlir.Jit()
        try:
            jit.load_plugins(FIXTURES + "/libte-fixture-abi-major.so")
        except te_mlir.PluginError as error:
            print("raised:", error)
        print([r.backend for r in jit.explain(SOURCE)])
    """
    proc = run_script(script)
    assert proc.returncode == 0, proc.stderr
    assert "failed at handshake: the plugin is built for plugin ABI 2.0" \
        in proc.stderr
    assert "continuing with the native lowering" in proc.stderr
    assert proc.stdout.splitlines() == [
        "['cpu (native)', 'cpu (native)', 'cpu (native)']"]

    proc = run_script(script, NVTE_PLUGIN_STRICT="1")
    assert proc.returncode == 0, proc.stderr
    raised, backends = proc.stdout.splitlines()
    assert raised.startswith("raised: te_compiler_load_plugins: plugin ")
    assert "failed at handshake: the plugin is built for plugin ABI 2.0" \
        in raised
    assert raised.endswith("NVTE_PLUGIN_STRICT=1 makes this an error")
    assert backends == "['cpu (native)', 'cpu (native)', 'cpu (native)']"


def test_plugin_device_from_python():
    proc = run_script("""
        jit = te_mlir.Jit()
        te_mlir.load_runtime_plugin(FIXTURES + "/libte-fixture-device.so")
        device = te_mlir.Device("fixture")
        try:
            jit.compile(SOURCE, device=device)
        except te_mlir.Error as error:
            print("raised:", str(error).splitlines()[0].split("error: ")[-1])
        jit.load_plugins(FIXTURES + "/libte-fixture-target.so")
        print([r.backend for r in jit.explain(SOURCE, device=device)])
        module = jit.compile(SOURCE, device=device)
        host = jit.compile(SOURCE)
        print(module.device_name, module.cache,
              same(module(X, Y, S), host(X, Y, S)))
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "raised: no target produces kernel modules for device 'fixture' "
        "(targets exist for: cpu, cuda); load the plugin that registers it with "
        "NVTE_PLUGIN or --te-plugin",
        "['plugin fixture_target/amax', 'fixture (native)', "
        "'fixture (native)']",
        "fixture miss True",
    ]


@pytest.mark.skipif(not os.path.exists(ONEDNN),
                    reason="the oneDNN plugin is not built")
def test_onednn_plugin_from_python():
    proc = run_script("""
        source = open(%r).read()
        jit = te_mlir.Jit()
        native = jit.compile(source)
        inputs = []
        for out, dtype, shape in native.signature():
            if not out:
                inputs.append(rng.uniform(-1, 1, shape).astype(
                    te_mlir.numpy_dtype(dtype)))
        reference = native(*inputs)
        jit.load_plugins("te-plugin-onednn")
        print([r.backend for r in jit.explain(source)])
        plugin = jit.compile(source)
        for a, b in zip(plugin(*inputs), reference):
            # Outputs oneDNN computes are rounded to bf16 from its own f32
            # sums, the native ones from ours: each is within half a bf16
            # ulp (2^-8 relative) of its f32 value and the f32 values agree
            # to ~1e-6, so they differ by at most 2 bf16 ulps (2^-6
            # relative). Outputs native computes both times are identical.
            rel = 2.0**-6 if a.dtype == ml_dtypes.bfloat16 else 0.0
            a, b = a.astype(np.float32), b.astype(np.float32)
            bound = rel * np.abs(b) + 1e-5 * max(1.0, float(np.abs(b).max()))
            print(bool(np.all(np.abs(a - b) <= bound)))
    """ % os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                       "examples", "plugin_dispatch.mlir"))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    # The native GEMM names its micro-kernel, which depends on the host.
    backends = ast.literal_eval(lines[0])
    assert backends[:3] == ["plugin onednn/attention", "cpu (native)",
                            "plugin onednn/scaled_matmul"]
    assert backends[3].startswith("cpu (native, ")
    assert lines[1:] and all(line == "True" for line in lines[1:])


def test_plugins_loaded_behind_the_jits_back_do_not_alias_the_cache(tmp_path):
    # A process that loads a plugin through the compiler's own C API (not
    # te_jit_load_plugins) compiles with it; the disk cache's source key
    # cannot know that, so a later process without the plugin must not get
    # that kernel from it.
    cache = str(tmp_path / "shared-cache")
    first = run_script("""
        import ctypes
        compiler = ctypes.CDLL(te_mlir._default_compiler_library())
        error = ctypes.c_char_p()
        assert compiler.te_compiler_load_plugins(
            (FIXTURES + "/libte-fixture-good.so").encode(),
            ctypes.byref(error)) == 0
        jit = te_mlir.Jit()
        print(jit.explain(SOURCE)[0].backend, jit.compile(SOURCE).cache)
    """, TE_CACHE_DIR=cache)
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == ["plugin fixture/amax miss"]
    second = run_script("""
        jit = te_mlir.Jit()
        print(jit.explain(SOURCE)[0].backend, jit.compile(SOURCE).cache)
    """, TE_CACHE_DIR=cache)
    assert second.returncode == 0, second.stderr
    assert second.stdout.splitlines() == ["cpu (native) miss"]


ALL_REDUCE = """
te.process_group @world size 2
func.func @f(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<8xf32>) {
  %s = te.all_reduce %x group @world reduce sum : tensor<4xf32>
  %g = te.all_gather %x group @world dim 0 : tensor<4xf32> -> tensor<8xf32>
  return %s, %g : tensor<4xf32>, tensor<8xf32>
}
"""


def test_collectives_under_mpirun(tmp_path):
    """`mpirun -np 2 python ...`: each interpreter is a rank of the job."""
    import shutil
    mpirun = shutil.which("mpirun")
    assert mpirun, "mpirun is missing: scripts/bootstrap.sh installs OpenMPI"
    script = tmp_path / "rank.py"
    script.write_text(textwrap.dedent(f"""
        import numpy as np, te_mlir
        rank, size = te_mlir.Device().world()
        module = te_mlir.Jit().compile({ALL_REDUCE!r})
        x = np.full(4, rank + 1, np.float32)
        total, gathered = module(x)
        assert size == 2, size
        assert (total == 3).all(), total
        assert (gathered == np.repeat([1, 2], 4)).all(), gathered
        open(f"{{__file__}}.{{rank}}.ok", "w").close()
    """))
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    proc = subprocess.run([mpirun, "-np", "2", "--bind-to", "none",
                           sys.executable, str(script)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # Each rank got through its checks (their stdout may interleave).
    assert (tmp_path / "rank.py.0.ok").exists()
    assert (tmp_path / "rank.py.1.ok").exists()


def test_outside_a_job_the_world_is_one_rank():
    assert te_mlir.Device().world() == (0, 1)
