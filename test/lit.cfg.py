# lit configuration for te-mlir's FileCheck tests.
import os
import platform

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "TE-MLIR"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt", "Inputs", "sdk"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.te_obj_root, "test")

config.substitutions.append(("%PYTHON", config.python_executable))
config.substitutions.append(("%te_src_root", config.te_src_root))
config.substitutions.append(("%te_obj_root", config.te_obj_root))
config.substitutions.append(("%fixtures", config.te_plugin_fixtures))
config.substitutions.append(("%te_docs_generated", config.te_docs_generated))
config.substitutions.append(
    ("%te_npy_tool", os.path.join(config.te_tools_dir, "te-npy-tool"))
)
config.substitutions.append(
    ("%clang_format", os.path.join(config.llvm_tools_dir, "clang-format"))
)

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(
    [ToolSubst("te-opt", unresolved="fatal"),
     ToolSubst("te-run", unresolved="fatal"),
     ToolSubst("te-plugin-check", unresolved="fatal")],
    [config.te_tools_dir]
)

# Tests that name x86 processors (TE_CPU_ARCH).
if platform.machine() in ("x86_64", "AMD64"):
    config.available_features.add("x86_64")

# The in-tree oneDNN plugin is built when libdnnl-dev is installed.
if os.path.exists(os.path.join(config.te_obj_root, "lib", "te-mlir", "plugins",
                               "libte-plugin-onednn.so")):
    config.available_features.add("onednn")

# The cuda target compiles with the CUDA toolkit's ptxas (TE_CUDA_PATH,
# CUDA_HOME or /usr/local/cuda, as the target looks for it); without one,
# the tests that make binaries are reported as unsupported.
cuda_toolkit = (os.environ.get("TE_CUDA_PATH") or os.environ.get("CUDA_HOME")
                or "/usr/local/cuda")
if os.access(os.path.join(cuda_toolkit, "bin", "ptxas"), os.X_OK):
    config.available_features.add("ptxas")
    config.substitutions.append(
        ("%ptxas", os.path.join(cuda_toolkit, "bin", "ptxas")))
for variable in ("TE_CUDA_PATH", "CUDA_HOME"):
    if variable in os.environ:
        config.environment[variable] = os.environ[variable]

# Compiles for the cuda device target the GPU the driver reports when there
# is one; the tests compile for the machine-independent default unless they
# name a driver (the stand-in's GPU) or an arch themselves.
config.environment["TE_CUDA_DRIVER"] = "/nonexistent/libcuda.so.1"

# cuobjdump and nvdisasm from the PyPI wheels bootstrap installs into .venv
# (the toolkit's own may be missing): the SASS checks of the cuda target.
import glob
venv = os.path.dirname(os.path.dirname(config.python_executable))
disassemblers = glob.glob(os.path.join(
    venv, "lib", "python3*", "site-packages", "nvidia", "cu13", "bin"))
if disassemblers and os.access(os.path.join(disassemblers[0], "cuobjdump"),
                               os.X_OK):
    config.available_features.add("cuobjdump")
    llvm_config.with_environment("PATH", disassemblers[0], append_path=True)
