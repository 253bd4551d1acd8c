#!/usr/bin/env python3
"""Checks the dependency rules of docs/Architecture.md.

    layering.py SOURCE_ROOT BUILD_ROOT

Each rule is checked twice where it can be: in the sources (what a file
includes) and in the built libraries (what each shared library NEEDs, read
from its ELF dynamic section with readelf). Prints every broken rule with
the file that breaks it and exits 1; exits 0 when all hold.
"""
import re
import subprocess
import sys
from pathlib import Path

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.MULTILINE)

# (what, source folders, include prefixes they must not use)
INCLUDE_RULES = [
    ("te/ABI is what the compiler writes and the runtime reads: it includes"
     " nothing else of te-mlir, MLIR or LLVM",
     ["include/te/ABI", "lib/ABI"],
     ["mlir/", "llvm/", "te/Dialect/", "te/Conversion/", "te/Target/",
      "te/Plugin/", "te/JIT/", "te/Runtime/", "te/Support/"]),
    ("the dialect knows no lowering",
     ["lib/Dialect", "include/te/Dialect"],
     ["te/Conversion/", "te/Target/", "te/Plugin/", "te/JIT/", "te/Runtime/"]),
    ("conversions know no target, plugin, JIT or runtime",
     ["lib/Conversion", "include/te/Conversion"],
     ["te/Target/", "te/Plugin/", "te/JIT/", "te/Runtime/"]),
    ("targets do not include plugins (the plugin layer registers into them),"
     " the JIT or the runtime (the compiler opens no device)",
     ["lib/Target", "include/te/Target"],
     ["te/Plugin/", "te/JIT/", "te/Runtime/"]),
    ("the runtime links no MLIR or LLVM",
     ["lib/Runtime", "include/te/Runtime"],
     ["mlir/", "llvm/", "te/Dialect/", "te/Conversion/", "te/Target/",
      "te/Plugin/", "te/JIT/Compiler/"]),
    ("the support library links no MLIR or LLVM",
     ["lib/Support", "include/te/Support"],
     ["mlir/", "llvm/", "te/Dialect/", "te/Target/", "te/Plugin/"]),
]

# (what, library name pattern, libraries it must not NEED)
LINK_RULES = [
    ("targets do not link the plugin layer, the JIT or the runtime",
     re.compile(r"libTETarget\w*\.so$"),
     re.compile(r"libTE(Plugin|Runtime|MLIRJIT|Compiler|KernelCache)\.so")),
    ("the dialect and conversions link no target, plugin or runtime",
     re.compile(r"libTEMLIR(Dialect|TETransforms|ConversionCommon|TEToLinalg|"
                r"TEToGPU)\.so$"),
     re.compile(r"libTE(Target\w*|Plugin|Runtime)\.so")),
    ("the runtime side links no MLIR or LLVM",
     re.compile(r"libTE(Runtime|Support|KernelCache|MPI)\.so$"),
     re.compile(r"lib(MLIR|LLVM)[-.\w]*\.so|libTEMLIR\w*\.so|libTETarget")),
    ("the compiler opens no device: nothing that links MLIR links the runtime",
     re.compile(r"libTE(MLIR\w*|Target\w*|Plugin|Compiler)\.so$"),
     re.compile(r"libTERuntime\.so")),
]


def check_includes(root: Path) -> list:
    broken = []
    for what, folders, forbidden in INCLUDE_RULES:
        for folder in folders:
            for path in sorted((root / folder).rglob("*")):
                if path.suffix not in (".cpp", ".h", ".td", ".def", ".inc"):
                    continue
                for included in INCLUDE.findall(path.read_text()):
                    if any(included.startswith(p) for p in forbidden):
                        broken.append(f"{path.relative_to(root)} includes "
                                      f"{included}: {what}")
    return broken


def needed(library: Path) -> list:
    out = subprocess.run(["readelf", "-d", str(library)], capture_output=True,
                         text=True, check=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def check_links(build: Path) -> list:
    broken = []
    libraries = sorted((build / "lib").glob("libTE*.so"))
    if not libraries:
        return [f"no libTE*.so under {build / 'lib'}: build first"]
    for what, name, forbidden in LINK_RULES:
        for library in libraries:
            if not name.search(library.name):
                continue
            for dependency in needed(library):
                if forbidden.search(dependency):
                    broken.append(f"{library.name} needs {dependency}: {what}")
    return broken


def main() -> int:
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    broken = check_includes(Path(sys.argv[1])) + check_links(Path(sys.argv[2]))
    for line in broken:
        print(f"layering: {line}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
