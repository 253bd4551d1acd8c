#!/usr/bin/env bash
# Installs every system and Python dependency of te-mlir; safe to run again.
# System packages come from Debian 12 (LLVM/MLIR 22 included); Python packages
# go into the project's own virtual environment, .venv/.
# With --print-apt-packages it prints the Debian package list, one a line, and
# installs nothing (scripts/check-deps.py reads the list this way). With
# --bench it also installs JAX, the benchmarks' other peer, into .venv.
set -euo pipefail
cd "$(dirname "$0")/.."

LLVM_VERSION=22
APT_PACKAGES=(
  cmake ninja-build ccache git python3 python3-venv python3-pip
  # Headers for the te_mlir Python extension (python/).
  python3-dev
  "libmlir-${LLVM_VERSION}-dev" "mlir-${LLVM_VERSION}-tools"
  "llvm-${LLVM_VERSION}-dev" "llvm-${LLVM_VERSION}-tools"
  "clang-${LLVM_VERSION}" "lld-${LLVM_VERSION}" "clang-format-${LLVM_VERSION}"
  # LLVM's OpenMP runtime, which host kernels with parallel loops link.
  "libomp-${LLVM_VERSION}-dev"
  # AddressSanitizer and UBSan runtimes for the asan preset (scripts/sanitize.sh).
  "libclang-rt-${LLVM_VERSION}-dev"
  libgtest-dev libgmock-dev zlib1g-dev libzstd-dev libedit-dev libxml2-dev
  libcurl4-openssl-dev
  # oneDNN, for the in-tree onednn plugin (plugins/onednn). Its CMake package
  # calls find_package(OpenCL), which needs ocl-icd-opencl-dev: libdnnl-dev
  # only recommends it, and recommends are not installed.
  libdnnl-dev ocl-icd-opencl-dev
  # MPI, which the cpu device's collectives run on (lib/Runtime/MPI), and
  # mpirun for their tests; ip, with which a test puts ranks in network
  # namespaces of their own.
  libopenmpi-dev openmpi-bin iproute2
)
PIP_PACKAGES=(numpy ml_dtypes pytest nanobind matplotlib threadpoolctl
  # PyPA's build: python -m build makes te_mlir's wheel (test/python/test_wheel.py).
  build
  # cuobjdump and nvdisasm (4.8 MB in all), which disassemble the cuda
  # target's cubins on a machine without a GPU: the SASS checks of
  # test/Target/CUDA. The toolkit's own copies are not always installed.
  "nvidia-cuda-cuobjdump==13.2.51" "nvidia-cuda-nvdisasm==13.2.51")

if [ "${1:-}" = "--print-apt-packages" ]; then
  printf '%s\n' "${APT_PACKAGES[@]}"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "bootstrap: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ ! -x .venv/bin/python ]; then
  echo "bootstrap: creating the Python environment .venv"
  /usr/bin/python3 -m venv .venv
fi
# (-P: not from the working directory, whose build/ would pass for PyPA's build.)
if ! .venv/bin/python -P -c 'import numpy, ml_dtypes, pytest, nanobind, matplotlib, threadpoolctl, build' 2>/dev/null ||
   ! compgen -G '.venv/lib/python3*/site-packages/nvidia/cu13/bin/nvdisasm' > /dev/null; then
  echo "bootstrap: installing ${PIP_PACKAGES[*]} into .venv"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check "${PIP_PACKAGES[@]}"
fi
# The cudnn_frontend C++ headers (header-only; the wheel carries them in
# site-packages/include), for the cuda device's cuDNN attention call
# (lib/Runtime/CUDNN.cpp). Only the headers are used: the Python package's
# own dependencies (CUTLASS's DSL, TVM FFI) are not installed.
CUDNN_FRONTEND="nvidia-cudnn-frontend==1.32.0"
if ! compgen -G '.venv/lib/python3*/site-packages/include/cudnn_frontend.h' > /dev/null; then
  echo "bootstrap: installing the headers of ${CUDNN_FRONTEND} into .venv"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps "${CUDNN_FRONTEND}"
fi
# PyTorch, for te_mlir.torch and its tests (test/python/test_torch.py) and as
# the benchmarks' peer. PyPI's Linux wheel is the CUDA build: its CUDA
# libraries come as nvidia-* wheels, about 4 GB in all, which torch needs to
# import even on the CPU (a GPU is not). PyTorch's CPU-only build is on its
# own index, not on PyPI.
TORCH_PACKAGE="torch==2.15.0"
if ! .venv/bin/python -c 'import torch' 2>/dev/null; then
  echo "bootstrap: installing ${TORCH_PACKAGE} (and its CUDA libraries) into .venv"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check "${TORCH_PACKAGE}"
fi
if [ "${1:-}" = "--bench" ]; then
  # bench/run_benchmarks.py's attention_peers section.
  BENCH_PACKAGES=("jax==0.10.2")
  if ! .venv/bin/python -c 'import jax' 2>/dev/null; then
    echo "bootstrap: installing the benchmark peers ${BENCH_PACKAGES[*]} into .venv"
    .venv/bin/python -m pip install --quiet --disable-pip-version-check "${BENCH_PACKAGES[@]}"
  fi
fi
echo "bootstrap: dependencies are in place"
