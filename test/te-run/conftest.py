"""Fixtures for te-run's end-to-end tests: each test gets its own kernel cache."""
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
TE_RUN = os.environ.get("TE_RUN", str(ROOT / "build" / "bin" / "te-run"))


class TeRun:
    """Runs te-run with a private cache directory under tmp_path."""

    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.cache = tmp_path / "cache"
        self.env = dict(os.environ, TE_CACHE_DIR=str(self.cache))
        # The user's plugin settings would change what is compiled.
        for var in ("TE_CACHE_DISABLE", "TE_CACHE_MAX_BYTES", "TE_DUMP_DIR",
                    "NVTE_PLUGIN", "NVTE_PLUGIN_STRICT", "NVTE_PLUGIN_POLICY",
                    "NVTE_PLUGIN_DENY", "TE_PLUGIN_PATH"):
            self.env.pop(var, None)
        self.count = 0

    def program(self, text, name=None):
        self.count += 1
        path = self.tmp / (name or f"program{self.count}.mlir")
        path.write_text(text)
        return path

    def array(self, array, name=None):
        self.count += 1
        path = self.tmp / (name or f"input{self.count}.npy")
        np.save(path, array)
        return path

    def __call__(self, *args, env=None, check=True, timeout=300):
        proc = subprocess.run(
            [TE_RUN, *map(str, args)],
            capture_output=True, text=True, env={**self.env, **(env or {})},
            timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(
                f"te-run {' '.join(map(str, args))} exited {proc.returncode}:\n"
                f"{proc.stderr}")
        return proc

    def run_kernel(self, program, inputs, outputs_f32=False):
        """Runs `program` on numpy `inputs`, returns the output arrays."""
        out = self.tmp / f"out{self.count}"
        self.count += 1
        args = [program, "--output-dir", out]
        for value in inputs:
            args += ["--input", self.array(value)]
        if outputs_f32:
            args.append("--outputs-f32")
        self(*args)
        results = []
        i = 0
        while (out / f"out{i}.npy").exists():
            results.append(np.load(out / f"out{i}.npy"))
            i += 1
        return results


@pytest.fixture
def te_run(tmp_path):
    return TeRun(tmp_path)
