"""Every te_mlir test process gets a kernel cache of its own: the shared
Jit (te_mlir.default_jit(), which te_mlir.ops uses) reads TE_CACHE_DIR
once, when the first test creates it."""

import os

import pytest


@pytest.fixture(autouse=True, scope="session")
def private_kernel_cache(tmp_path_factory):
    os.environ["TE_CACHE_DIR"] = str(tmp_path_factory.mktemp("kernel-cache"))
    yield
