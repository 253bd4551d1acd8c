"""The package as a user installs it: `python -m build --wheel` builds the
wheel from the repository (scikit-build-core driving the CMake build), a
fresh virtual environment installs it, and docs/Python.md's quick start
runs there, outside the repository, with no PYTHONPATH.

Its own ctest (python-wheel): the build takes minutes."""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def quick_start(python):
    """docs/Python.md's quick start block, run by `python`."""
    text = (ROOT / "docs" / "Python.md").read_text()
    section = text[text.index("## Quick start"):]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    prefix = "PYTHONPATH=build/python .venv/bin/python"
    assert block.startswith(prefix), block[:80]
    return str(python) + block[len(prefix):]


def run(args, **kw):
    proc = subprocess.run(args, capture_output=True, text=True, timeout=3000,
                          **kw)
    assert proc.returncode == 0, (f"{args} failed ({proc.returncode}):\n"
                                  + proc.stdout[-4000:] + proc.stderr[-8000:])
    return proc


def test_wheel_installs_and_runs_the_quick_start(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "TE_COMPILER_LIBRARY", "NVTE_PLUGIN")}
    env["TE_CACHE_DIR"] = str(tmp_path / "cache")
    dist = tmp_path / "dist"
    run([sys.executable, "-P", "-m", "build", "--wheel", "--outdir", str(dist),
         str(ROOT)], env=env)
    (wheel,) = dist.glob("te_mlir-*.whl")
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], env=env)
    python = venv / "bin" / "python"
    run([str(python), "-m", "pip", "install", "--quiet",
         "--disable-pip-version-check", str(wheel)], env=env)
    where = tmp_path / "elsewhere"
    where.mkdir()
    proc = run(["bash", "-c", quick_start(python)], cwd=where, env=env)
    assert "te_mlir 0.1" in proc.stdout and "CompileError at" in proc.stdout
    # The package, its compiler, plugins and tools come from the wheel.
    proc = run([str(python), "-c", """
import os, te_mlir
here = os.path.dirname(te_mlir.__file__)
print(here)
print(os.path.realpath(te_mlir._default_compiler_library()))
jit = te_mlir.Jit()
jit.load_plugins("te-plugin-onednn")
print([p["name"] + ":" + p["state"] for p in te_mlir.plugins.info()])
"""], cwd=where, env=env)
    here, compiler, plugins = proc.stdout.splitlines()[:3]
    package = Path(here)
    assert package.is_relative_to(venv) and package.name == "te_mlir"
    assert compiler == str((package / "lib" / "libTECompiler.so").resolve())
    assert "onednn" in plugins, proc.stdout
    # te_mlir.torch is a package of packages (TE's import paths).
    for sub in ("torch/__init__.py", "torch/module/layernorm_mlp.py",
                "torch/attention/rope.py", "torch/ops/gemm.py"):
        assert (package / sub).is_file(), sub
    run([str(package / "bin" / "te-run"), "--version"], env=env)
