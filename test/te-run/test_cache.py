"""te-run's kernel cache: hits, misses, damage, concurrency, limits."""
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from conftest import TE_RUN

PROGRAM = """
// a comment that canonicalization drops
func.func @amax(%x: tensor<16xf32>) -> tensor<f32> {
  %a = te.amax %x : tensor<16xf32> -> tensor<f32>
  return %a : tensor<f32>
}
"""
SAME_MEANING = """func.func @amax(%input: tensor<16xf32>) -> tensor<f32> {
    %result = te.amax %input : tensor<16xf32> -> tensor<f32>
    return %result : tensor<f32>
}"""


def outcome(proc):
    return [l for l in proc.stderr.splitlines() if l.startswith("cache:")]


def entries(te_run):
    return sorted(te_run.cache.glob("*.so"))


def test_miss_then_disk_hit(te_run):
    program = te_run.program(PROGRAM)
    assert outcome(te_run(program, "--random-inputs")) == ["cache: miss"]
    assert outcome(te_run(program, "--random-inputs")) == ["cache: hit (disk)"]
    assert len(entries(te_run)) == 1


def test_equivalent_program_shares_the_entry(te_run):
    te_run(te_run.program(PROGRAM), "--random-inputs")
    proc = te_run(te_run.program(SAME_MEANING), "--random-inputs")
    assert outcome(proc) == ["cache: hit (disk)"]
    assert len(entries(te_run)) == 1


def test_different_program_misses(te_run):
    te_run(te_run.program(PROGRAM), "--random-inputs")
    other = PROGRAM.replace("16x", "32x")
    assert outcome(te_run(te_run.program(other), "--random-inputs")) == ["cache: miss"]
    assert len(entries(te_run)) == 2


def damage_and_rerun(te_run, damage):
    program = te_run.program(PROGRAM)
    x = te_run.array(np.arange(16, dtype=np.float32) - 10)
    first = te_run(program, "--input", x)
    (entry,) = entries(te_run)
    damage(entry)
    proc = te_run(program, "--input", x)
    warnings = [l for l in proc.stderr.splitlines() if "recompiling" in l]
    assert len(warnings) == 1, proc.stderr
    assert outcome(proc) == ["cache: miss"]
    assert proc.stdout == first.stdout
    # Repaired: the next run hits again, silently.
    again = te_run(program, "--input", x)
    assert outcome(again) == ["cache: hit (disk)"] and "recompiling" not in again.stderr
    return warnings[0]


def test_truncated_entry(te_run):
    warning = damage_and_rerun(te_run, lambda p: p.write_bytes(p.read_bytes()[:1000]))
    assert "truncated" in warning or "trailer" in warning


def test_corrupted_entry(te_run):
    def flip(path):
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
    assert "checksum mismatch" in damage_and_rerun(te_run, flip)


def test_foreign_version_entry(te_run):
    def rebrand(path):
        data = path.read_bytes()
        at = data.rindex(b"build=") + len(b"build=")
        path.write_bytes(data[:at] + b"X" + data[at + 1:])
    assert "another te-mlir build" in damage_and_rerun(te_run, rebrand)


def test_empty_entry(te_run):
    assert "truncated" in damage_and_rerun(te_run, lambda p: p.write_bytes(b""))


def test_eight_processes_on_one_key(te_run):
    program = te_run.program(PROGRAM)
    x = te_run.array(np.linspace(-3, 2, 16, dtype=np.float32))
    procs = [subprocess.Popen([TE_RUN, str(program), "--input", str(x)],
                              env=te_run.env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for _ in range(8)]
    results = [p.communicate(timeout=300) + (p.returncode,) for p in procs]
    assert all(code == 0 for _, _, code in results), results
    assert len({out for out, _, _ in results}) == 1
    assert not any("recompiling" in err or "warning" in err for _, err, _ in results)
    assert len(entries(te_run)) == 1
    assert not list(te_run.cache.glob("*.tmp-*"))
    assert outcome(te_run(program, "--input", x)) == ["cache: hit (disk)"]


def test_eviction_keeps_the_cache_bounded(te_run):
    te_run(te_run.program(PROGRAM), "--random-inputs")
    size = entries(te_run)[0].stat().st_size
    limit = str(int(size * 2.5))
    for n in (32, 48, 64):
        program = te_run.program(PROGRAM.replace("16x", f"{n}x"))
        te_run(program, "--random-inputs", env={"TE_CACHE_MAX_BYTES": limit})
    assert len(entries(te_run)) == 2
    assert sum(p.stat().st_size for p in entries(te_run)) <= int(limit)


def test_disabled_cache(te_run):
    program = te_run.program(PROGRAM)
    env = {"TE_CACHE_DISABLE": "1"}
    assert outcome(te_run(program, "--random-inputs", env=env)) == ["cache: miss"]
    assert outcome(te_run(program, "--random-inputs", env=env)) == ["cache: miss"]
    assert not te_run.cache.exists()


def test_unwritable_cache_directory(te_run):
    blocker = te_run.tmp / "not-a-directory"
    blocker.write_text("")
    program = te_run.program(PROGRAM)
    proc = te_run(program, "--random-inputs",
                  env={"TE_CACHE_DIR": str(blocker / "cache")})
    warnings = [l for l in proc.stderr.splitlines() if "memory only" in l]
    assert len(warnings) == 1 and outcome(proc) == ["cache: miss"]
    assert "@amax" in proc.stdout


# The cache holds native code that te-mlir dlopens: a checksum detects
# damage, not a planted library, so only files and a directory that nobody
# but this user can write are trusted.

def test_new_cache_directory_is_private(te_run):
    te_run(te_run.program(PROGRAM), "--random-inputs")
    assert (te_run.cache.stat().st_mode & 0o777) == 0o700
    for path in te_run.cache.iterdir():
        assert (path.stat().st_mode & 0o022) == 0, path


def test_group_writable_cache_directory_is_not_used(te_run):
    te_run.cache.mkdir()
    te_run.cache.chmod(0o770)
    program = te_run.program(PROGRAM)
    for _ in range(2):
        proc = te_run(program, "--random-inputs")
        warnings = [l for l in proc.stderr.splitlines() if "memory only" in l]
        assert len(warnings) == 1, proc.stderr
        assert "is writable by its group (mode 0770)" in warnings[0]
        assert outcome(proc) == ["cache: miss"]
    assert not entries(te_run)


def untrusted_entry_is_ignored(te_run, plant, reason):
    """Plants an entry (`plant(entry)` changes the good one), then checks it
    is ignored with one warning giving `reason`, and replaced. A run that
    hangs on the planted entry fails through the timeout."""
    program = te_run.program(PROGRAM)
    x = te_run.array(np.arange(16, dtype=np.float32) - 10)
    first = te_run(program, "--input", x)
    (entry,) = entries(te_run)
    plant(entry)
    proc = te_run(program, "--input", x, timeout=20)
    warnings = [l for l in proc.stderr.splitlines() if "ignores it" in l]
    assert len(warnings) == 1, proc.stderr
    assert reason in warnings[0], warnings[0]
    assert outcome(proc) == ["cache: miss"] and proc.stdout == first.stdout
    # Published again as a regular file of this user.
    again = te_run(program, "--input", x)
    assert outcome(again) == ["cache: hit (disk)"]
    assert not entry.is_symlink() and (entry.stat().st_mode & 0o022) == 0


def test_symlinked_entry_is_ignored(te_run):
    def plant(entry):
        # A valid entry elsewhere, linked in: a checksum would accept it.
        elsewhere = te_run.tmp / "planted.so"
        entry.rename(elsewhere)
        entry.symlink_to(elsewhere)
    untrusted_entry_is_ignored(te_run, plant, "is a symbolic link")


def test_world_writable_entry_is_ignored(te_run):
    untrusted_entry_is_ignored(te_run, lambda entry: entry.chmod(0o666),
                               "is writable by others (mode 0666)")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file away")
def test_entry_of_another_user_is_ignored(te_run):
    untrusted_entry_is_ignored(te_run, lambda entry: os.chown(entry, 65534, 65534),
                               "is owned by another user (uid 65534")


def test_default_directory_follows_xdg(te_run):
    program = te_run.program(PROGRAM)
    env = dict(te_run.env)
    env.pop("TE_CACHE_DIR")
    env["XDG_CACHE_HOME"] = str(te_run.tmp / "xdg")
    subprocess.run([TE_RUN, str(program), "--random-inputs"], env=env, check=True,
                   capture_output=True)
    assert list((te_run.tmp / "xdg" / "te-mlir").glob("*.so"))


def test_hit_does_not_load_mlir_or_llvm(te_run):
    program = te_run.program(PROGRAM)
    # The dynamic loader reports every library it opens under LD_DEBUG=files.
    miss = te_run(program, "--random-inputs", env={"LD_DEBUG": "files"})
    hit = te_run(program, "--random-inputs", env={"LD_DEBUG": "files"})
    assert outcome(hit) == ["cache: hit (disk)"]
    assert "libMLIR" in miss.stderr and "libTECompiler" in miss.stderr
    assert "libMLIR" not in hit.stderr and "libLLVM" not in hit.stderr
    assert "libTECompiler" not in hit.stderr


def test_missing_compiler_library(te_run):
    program = te_run.program(PROGRAM)
    proc = te_run(program, "--random-inputs", check=False,
                  env={"TE_COMPILER_LIBRARY": str(te_run.tmp / "missing.so")})
    assert proc.returncode == 2 and "TE_COMPILER_LIBRARY" in proc.stderr


# --- Bad entries of every kind, entries of another key, read-only caches ---

def test_fifo_entry_is_a_bad_entry(te_run):
    """A FIFO named <key>.so would hang every later run in open(); it is a
    bad entry like any other: ignored with one warning, recompiled, and
    replaced by the new entry."""
    def plant(entry):
        entry.unlink()
        os.mkfifo(entry)
    untrusted_entry_is_ignored(te_run, plant,
                               "is a FIFO (named pipe), not a regular file")


def test_fifo_alias_is_a_miss(te_run):
    """A FIFO named <alias>.ref is a damaged alias: a miss of the source key,
    then a hit of the canonical key; the alias is written again."""
    program = te_run.program(PROGRAM)
    first = te_run(program, "--random-inputs")
    (alias,) = sorted(te_run.cache.glob("*.ref"))
    alias.unlink()
    os.mkfifo(alias)
    proc = te_run(program, "--random-inputs", timeout=20)
    assert outcome(proc) == ["cache: hit (disk)"] and proc.stdout == first.stdout
    assert alias.is_file()
    assert "from the source key's alias" in te_run(program, "--random-inputs",
                                                   "-v").stderr


def test_entry_of_another_program_under_this_key_is_not_loaded(te_run):
    """Each entry records its key (and each alias its alias): a valid entry
    of program A copied under program B's key, or A's alias under B's, is not
    loaded for B. The copied entry is handled like a corrupted one."""
    a = te_run.program(PROGRAM)
    b = te_run.program(PROGRAM.replace("@amax", "@other"))
    te_run(a, "--random-inputs")
    a_files = {p.name for p in te_run.cache.iterdir()}
    assert "@other: 1 inputs" in te_run(b, "--random-inputs").stdout
    b_entry = next(p for p in entries(te_run) if p.name not in a_files)
    a_entry = next(p for p in entries(te_run) if p.name in a_files)
    shutil.copyfile(a_entry, b_entry)
    proc = te_run(b, "--random-inputs")
    # Loaded, A's kernel would be the only one and run as @amax.
    assert "@other: 1 inputs" in proc.stdout and "@amax" not in proc.stdout
    warnings = [l for l in proc.stderr.splitlines() if "recompiling" in l]
    assert len(warnings) == 1 and "is the entry of another key" in warnings[0]
    assert outcome(proc) == ["cache: miss"]
    assert b_entry.read_bytes() != a_entry.read_bytes()
    # A's alias copied over B's: B's source key no longer names B's entry,
    # so the canonical key is computed again, and hits B's own entry.
    (a_alias,) = [p for p in te_run.cache.glob("*.ref") if p.name in a_files]
    (b_alias,) = [p for p in te_run.cache.glob("*.ref")
                  if p.name not in a_files]
    shutil.copyfile(a_alias, b_alias)
    proc = te_run(b, "--random-inputs", "-v")
    assert "@other: 1 inputs" in proc.stdout
    assert "(computed in" in proc.stderr and outcome(proc) == ["cache: hit (disk)"]


def test_read_only_cache_directory_serves_hits(te_run):
    """A cache directory this user cannot write (shipped read-only, on a
    read-only mount) still serves its entries; only storing fails, with one
    warning. Root writes whatever the mode, so as root the runs drop to
    another user, who owns the directory."""
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("needs setpriv to run as another user")
        base = Path(tempfile.mkdtemp(prefix="te-read-only-"))
        prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    else:
        base = te_run.tmp / "read-only"
        base.mkdir()
        prefix = []
    try:
        cache, scratch = base / "cache", base / "tmp"
        scratch.mkdir()
        program, other = base / "p.mlir", base / "q.mlir"
        program.write_text(PROGRAM)
        other.write_text(PROGRAM.replace("16x", "32x"))
        if prefix:
            for path in (base, scratch, program, other):
                os.chown(path, 65534, 65534)
            os.chmod(base, 0o755)
        env = dict(te_run.env, TE_CACHE_DIR=str(cache), TMPDIR=str(scratch))

        def run(path):
            proc = subprocess.run(prefix + [TE_RUN, str(path), "--random-inputs"],
                                  env=env, capture_output=True, text=True,
                                  timeout=300)
            assert proc.returncode == 0, proc.stderr
            return proc

        first = run(program)
        assert outcome(first) == ["cache: miss"]
        os.chmod(cache, 0o500)
        hit = run(program)
        assert outcome(hit) == ["cache: hit (disk)"], hit.stderr
        assert "te-mlir:" not in hit.stderr and hit.stdout == first.stdout
        miss = run(other)
        assert outcome(miss) == ["cache: miss"]
        warnings = [l for l in miss.stderr.splitlines() if l.startswith("te-mlir:")]
        assert len(warnings) == 1, miss.stderr
        assert "is not writable" in warnings[0]
        assert "its entries are used, but new kernels are cached in memory only" \
            in warnings[0]
        assert outcome(run(program)) == ["cache: hit (disk)"]
    finally:
        if prefix:
            os.chmod(base / "cache", 0o700)
            shutil.rmtree(base, ignore_errors=True)


# --- Scratch directories: in TMPDIR, and gone after every compile ----------

def test_compiles_leave_nothing_in_tmpdir(te_run):
    """Every compile's scratch directory is made in TMPDIR (not /tmp) and
    removed when the compile ends, whatever the outcome: with and without
    the disk cache, with --check's reference build, and after a compile
    that fails (here: a dump directory that cannot be created)."""
    scratch = te_run.tmp / "scratch"
    scratch.mkdir()
    program = te_run.program(PROGRAM)
    env = {"TMPDIR": str(scratch)}
    te_run(program, "--random-inputs", env=env)
    te_run(program, "--random-inputs", "--check", env=env)
    te_run(program, "--random-inputs", "--check",
           env={**env, "TE_CACHE_DISABLE": "1"})
    blocker = te_run.tmp / "file"
    blocker.write_text("")
    failed = te_run(program, "--random-inputs", check=False,
                    env={**env, "TE_CACHE_DISABLE": "1",
                         "TE_DUMP_DIR": str(blocker)})
    assert failed.returncode == 2 and "TE_DUMP_DIR: cannot create" in failed.stderr
    bad = te_run.program(PROGRAM.replace("tensor<f32>\n  return",
                                         "tensor<i32>\n  return"))
    assert te_run(bad, "--random-inputs", check=False,
                  env={**env, "TE_CACHE_DISABLE": "1"}).returncode == 2
    assert list(scratch.iterdir()) == []


def test_unusable_tmpdir_is_one_clear_error(te_run):
    """TMPDIR is where compiles work (it was ignored for /tmp)."""
    program = te_run.program(PROGRAM)
    blocker = te_run.tmp / "file"
    blocker.write_text("")
    proc = te_run(program, "--random-inputs", check=False,
                  env={"TMPDIR": str(blocker), "TE_CACHE_DISABLE": "1"})
    assert proc.returncode == 2
    assert f"cannot create a temporary directory in {blocker}" in proc.stderr
    assert "set TMPDIR to a writable directory" in proc.stderr


# A valid setting of each variable of include/te/ABI/Environment.h, the one
# table of what a target's code generation reads.
CODE_GENERATION_SETTINGS = {
    "TE_CPU_ARCH": "x86-64-v3", "TE_CPU_AMX": "off", "TE_CUDA_ARCH": "sm_86",
    "TE_CUDA_PATH": "/usr/local/cuda", "CUDA_HOME": "/usr/local/cuda",
    "TE_CUDA_GEMM": "codegen", "TE_CUDA_ATTENTION": "cudnn",
    "NVTE_FUSED_ATTN": "0", "NVTE_FLASH_ATTN": "0",
}


def test_every_code_generation_setting_is_in_the_source_key(te_run):
    """A kernel compiled under one setting never answers a compile under
    another: each variable the targets read changes the source key (the key
    a hit is found by without loading the compiler). Before, TE_CUDA_GEMM,
    TE_CUDA_ATTENTION, NVTE_FUSED_ATTN and NVTE_FLASH_ATTN were in the
    target's identity only, so a source-key hit served a kernel of the
    other strategy."""
    header = Path(__file__).resolve().parents[2] / "include/te/ABI/Environment.h"
    table = re.findall(r'^\s*\{"(\w+)", "(?:cpu|cuda)",', header.read_text(),
                       re.MULTILINE)
    assert sorted(table) == sorted(CODE_GENERATION_SETTINGS), (
        "a variable was added to te/ABI/Environment.h: give it a setting here")
    program = te_run.program(PROGRAM)
    clean = {name: "" for name in CODE_GENERATION_SETTINGS}

    def source_key(env):
        proc = te_run(program, "--random-inputs", "-v", env={**clean, **env})
        (line,) = [l for l in proc.stderr.splitlines()
                   if l.startswith("cache key (source):")]
        return line

    base = source_key({})
    keys = {name: source_key({name: value})
            for name, value in CODE_GENERATION_SETTINGS.items()}
    for name, key in keys.items():
        assert key != base, f"{name} does not change the source key"


def test_te_run_help_lists_the_code_generation_settings(te_run):
    text = te_run("--help").stdout
    for name in CODE_GENERATION_SETTINGS:
        assert f"  {name} (" in text, name
