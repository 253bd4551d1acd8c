"""What the host processor runs: its CPU flags, and whether code compiled
for a TE_CPU_ARCH processor runs here (code for another processor is
compiled on any host; the runtime refuses to load it where the host lacks
its features)."""
import platform
import re
from pathlib import Path

X86 = platform.machine() == "x86_64"


def host_flags():
    path = Path("/proc/cpuinfo")
    text = path.read_text() if path.exists() else ""
    match = re.search(r"^flags\s*:(.*)$", text, re.M)
    return set(match.group(1).split()) if match else set()


# The flags each TE_CPU_ARCH level the tests use needs (x86-64 psABI levels).
ARCH_FLAGS = {
    "x86-64-v3": {"avx2", "fma", "bmi2", "f16c", "movbe"},
    "x86-64-v4": {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"},
    "sapphirerapids": {"avx512f", "avx512bw", "avx512cd", "avx512dq",
                       "avx512vl", "avx512_bf16", "avx512_fp16", "amx_tile",
                       "amx_bf16", "amx_int8"},
}


def runs_here(arch):
    """Whether kernels compiled with TE_CPU_ARCH=arch (None: this host) run
    on this host."""
    return arch is None or (X86 and ARCH_FLAGS[arch] <= host_flags())


def skip_unless_runs_here(arch):
    import pytest
    if not runs_here(arch):
        pytest.skip(f"{arch} code compiles here but cannot run: the host lacks "
                    f"{', '.join(sorted(ARCH_FLAGS[arch] - host_flags()))}")
