"""The shell commands of te-mlir's Markdown documentation, run as written.

Which blocks run: in every Markdown file of the source tree (README.md,
docs/*.md, python/README.md, bench/README.md, plugins/*/README.md,
examples/*/README.md, ...; build trees and hidden directories excluded),
every fenced block whose language is `sh`, `bash`, `shell` or `console`.
A `sh`/`bash`/`shell` block is one script; a `console` block's commands are
its lines that start with `$ `, continued on the following lines while a
line ends with a backslash, and the rest is output, which is not compared.
Blocks of any other language (`mlir`, `c`, `cmake`, none, ...) are not run.

How: each block alone, as `bash -e`, in a directory that stands for the
repository root of a finished `scripts/build.sh`: it links every top-level
entry of the source tree and `.venv`, and `build` links the build tree
under test. Files the block writes (`x.npy`, `out/`) stay in that directory.
The block gets a private TE_CACHE_DIR, XDG_CACHE_HOME and TMPDIR, none of
the plugin variables (NVTE_PLUGIN, TE_PLUGIN_PATH, ...) or PYTHONPATH, and
BLOCK_TIMEOUT seconds. A block that fails reports its file, line, script and
output.

Markers, an HTML comment on the line before the fence (blank lines may
separate them):
  <!-- doc-test: skip (why) -->    the block cannot run as written
      (placeholders such as /path/libvendor.so, installs, long runs); the
      reason is shown in the skip.
  <!-- doc-test: needs PATH... -->  skip unless every PATH exists (relative
      to the repository root, so build/... is in the build tree): for
      optional parts of the build such as the oneDNN plugin.
Any other `doc-test:` comment, a skip without a reason, or a marker that is
not followed by a block that runs is an error.

Environment: TE_BUILD_DIR, the build tree (default: <source>/build).
"""

import os
import re
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("TE_BUILD_DIR", SOURCE / "build")).resolve()
BLOCK_TIMEOUT = 60
RUN_LANGUAGES = {"sh", "bash", "shell", "console"}
# Variables a block must not inherit: it runs as in a fresh shell.
CLEARED_VARIABLES = [
    "NVTE_PLUGIN", "NVTE_PLUGIN_STRICT", "NVTE_PLUGIN_POLICY",
    "NVTE_PLUGIN_DENY", "TE_PLUGIN_PATH", "TE_RUNTIME_PLUGIN",
    "TE_CACHE_DISABLE", "TE_CACHE_MAX_BYTES", "TE_COMPILER_LIBRARY",
    "PYTHONPATH",
]

FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
MARKER = re.compile(r"^\s*<!--\s*doc-test:(?P<body>.*?)-->\s*$")


@dataclass
class Block:
    """One fenced block (or a misplaced marker) of a Markdown file."""
    path: Path                # the Markdown file
    line: int                 # 1-based line of the opening fence
    language: str
    script: str = ""          # what bash runs
    lines: list = field(default_factory=list)  # (Markdown line, text) of it
    skip: str = ""            # the reason, if marked skip
    needs: list = field(default_factory=list)  # paths, if marked needs
    error: str = ""           # what is wrong with the block or its marker

    @property
    def where(self):
        try:
            name = self.path.relative_to(SOURCE)
        except ValueError:
            name = self.path
        return f"{name}:{self.line}"


def is_build_tree(path):
    return (path / "CMakeCache.txt").exists() or path.resolve() == BUILD


def markdown_files():
    """Every .md file of the source tree, outside build trees and hidden
    directories, in a stable order."""
    files = []
    for root, dirs, names in os.walk(SOURCE):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")
                         and d != "__pycache__"
                         and not is_build_tree(Path(root) / d))
        files += [Path(root) / n for n in sorted(names) if n.endswith(".md")]
    return files


def console_commands(body, first_line):
    """The commands of a console block: `$ ` lines and their backslash
    continuations, as (doc line, text) pairs."""
    commands, continuing = [], False
    for number, text in enumerate(body, first_line):
        if continuing:
            commands.append((number, text))
        elif text.startswith("$ "):
            commands.append((number, text[2:]))
        else:
            continue
        continuing = text.rstrip().endswith("\\")
    return commands


def parse_marker(body):
    """(skip reason, needs, error) of a doc-test marker's text."""
    body = body.strip()
    skip = re.fullmatch(r"skip\s*\((?P<reason>.+)\)", body, re.S)
    if skip:
        return skip.group("reason").strip(), [], ""
    if body.startswith("needs ") and body[6:].split():
        return "", body[6:].split(), ""
    return "", [], (f"malformed marker 'doc-test: {body}'; expected "
                    "'doc-test: skip (reason)' or 'doc-test: needs PATH...'")


def extract_blocks(path, text):
    """The blocks of one Markdown file that run or are marked, in order."""
    blocks, lines = [], text.splitlines()
    i, marker, marker_line = 0, None, 0
    while i < len(lines):
        match = MARKER.match(lines[i])
        if match:
            if marker is not None:
                blocks.append(Block(path, marker_line, "", error=(
                    "doc-test marker not followed by a block that runs")))
            marker, marker_line = match.group("body"), i + 1
            i += 1
            continue
        fence = FENCE.match(lines[i])
        if not fence:
            if marker is not None and lines[i].strip():
                blocks.append(Block(path, marker_line, "", error=(
                    "doc-test marker not right before a fenced block")))
                marker = None
            i += 1
            continue
        # A fenced block: find its end (same character, at least as long).
        opening, indent = fence.group("fence"), len(fence.group("indent"))
        language = (fence.group("info").split() or [""])[0].lower()
        start = i + 1
        end = start
        while end < len(lines) and not re.match(
                r"^\s*" + re.escape(opening[0]) + "{" + str(len(opening)) +
                r",}\s*$", lines[end]):
            end += 1
        # Content indented with its fence (in a list) loses that indent.
        body = [line[min(indent, len(line) - len(line.lstrip())):]
                for line in lines[start:end]]
        if language in RUN_LANGUAGES:
            block = Block(path, i + 1, language)
            if language == "console":
                block.lines = console_commands(body, start + 1)
                if not block.lines:
                    block.error = "console block without a '$ ' command line"
            else:
                block.lines = list(enumerate(body, start + 1))
            block.script = "\n".join(text for _, text in block.lines) + "\n"
            if marker is not None:
                block.skip, block.needs, error = parse_marker(marker)
                block.error = block.error or error
            blocks.append(block)
        elif marker is not None:
            blocks.append(Block(path, marker_line, language, error=(
                f"doc-test marker before a '{language or 'plain'}' block, "
                "which does not run anyway")))
        marker = None
        i = end + 1
    if marker is not None:
        blocks.append(Block(path, marker_line, "", error=(
            "doc-test marker not followed by a block that runs")))
    return blocks


def all_blocks():
    blocks = []
    for path in markdown_files():
        blocks += extract_blocks(path, path.read_text(encoding="utf-8"))
    return blocks


def source_entries():
    """The top-level names of the source tree a block may refer to: what
    git tracks (not a user's leftovers such as x.npy), else every entry
    that is not hidden or a build tree."""
    try:
        listed = subprocess.run(
            ["git", "-C", str(SOURCE), "ls-files", "--cached"],
            capture_output=True, text=True, check=True).stdout.split("\n")
        names = {line.split("/", 1)[0] for line in listed if line}
    except (OSError, subprocess.CalledProcessError):
        names = {p.name for p in SOURCE.iterdir()
                 if not p.name.startswith(".") and not is_build_tree(p)}
    names.discard("build")
    if (SOURCE / ".venv").exists():
        names.add(".venv")
    return sorted(n for n in names if (SOURCE / n).exists())


def in_root(relative):
    """Where `relative`, a path from the repository root, is: build/...
    in the build tree under test."""
    if relative == "build" or relative.startswith("build/"):
        return BUILD / relative[len("build/"):]
    return SOURCE / relative


def make_root(base):
    """A directory that looks like the repository root after scripts/build.sh."""
    root = base / "repo"
    root.mkdir()
    for name in source_entries():
        (root / name).symlink_to(SOURCE / name)
    (root / "build").symlink_to(BUILD)
    return root


def run_block(block, base):
    """(exit status or None on timeout, output, the Markdown line of the
    command that failed or None) of `block` run in `base`."""
    root = make_root(base)
    for name in ("cache", "xdg-cache", "tmp"):
        (base / name).mkdir()
    env = {k: v for k, v in os.environ.items() if k not in CLEARED_VARIABLES}
    env.update(TE_CACHE_DIR=str(base / "cache"),
               XDG_CACHE_HOME=str(base / "xdg-cache"),
               TMPDIR=str(base / "tmp"), PWD=str(root))
    script = base / "block.sh"
    script.write_text(block.script)
    # The ERR trap notes the line of the command that stopped the block.
    failed_line = base / "failed-line"
    env["DOC_TEST_FAILED_LINE"] = str(failed_line)
    process = subprocess.Popen(
        ["bash", "-e", "-c",
         'trap \'echo "$LINENO" > "$DOC_TEST_FAILED_LINE"\' ERR; . "$0"',
         str(script)], cwd=root, env=env,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=BLOCK_TIMEOUT)
        status = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        status = None
    line = None
    if status and failed_line.exists():
        number = int(failed_line.read_text().strip() or 0)
        if 0 < number <= len(block.lines):
            line = block.lines[number - 1][0]
    return status, output.decode("utf-8", errors="replace"), line


def describe_failure(block, status, output, line=None):
    script = "\n".join(f"  {number:4}| {text}" for number, text in block.lines)
    what = (f"timed out after {BLOCK_TIMEOUT} s" if status is None
            else f"exited with status {status}")
    if line is not None:
        what += f" at line {line}"
    if len(output) > 12000:
        output = "[...]\n" + output[-12000:]
    return (f"{block.where}: the {block.language} block {what}.\n"
            f"Script (line numbers of {block.path.name}):\n{script}\n"
            f"Output:\n{output}")


BLOCKS = all_blocks()


@pytest.fixture
def scratch():
    base = Path(tempfile.mkdtemp(prefix="te-doc-test-"))
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_doc_block(block, scratch):
    if block.error:
        pytest.fail(f"{block.where}: {block.error}", pytrace=False)
    if block.skip:
        pytest.skip(f"{block.where}: {block.skip}")
    missing = [p for p in block.needs if not in_root(p).exists()]
    if missing:
        pytest.skip(f"{block.where}: needs {', '.join(missing)}, which this "
                    "build does not have")
    status, output, line = run_block(block, scratch)
    if status != 0:
        pytest.fail(describe_failure(block, status, output, line),
                    pytrace=False)


def test_every_document_has_its_blocks_found():
    """The extractor finds the README's commands: a parser that found none
    would pass every other test here."""
    readme = [b for b in BLOCKS if b.path == SOURCE / "README.md"]
    assert sum(1 for b in readme if not b.skip and not b.error) >= 4
    assert any("build/bin/te-run" in b.script for b in readme)


SAMPLE = """\
Text.

```sh
echo one
echo two
```

<!-- doc-test: skip (placeholder: /path/libvendor.so) -->
```sh
NVTE_PLUGIN=/path/libvendor.so build/bin/te-opt --te-print-plugin-info
```

```console
$ build/bin/te-run a.mlir \\
    --random-inputs
op  location
$ echo done
done
```

```mlir
func.func @f()
```

<!-- doc-test: needs build/lib/libX.so build/python -->
~~~bash
true
~~~

<!-- doc-test: skip -->
```sh
true
```

<!-- doc-test: skip (not a runnable block) -->
```mlir
```
"""


def test_extraction_rules():
    blocks = extract_blocks(Path("sample.md"), SAMPLE)
    assert [(b.line, b.language) for b in blocks] == [
        (3, "sh"), (9, "sh"), (13, "console"), (26, "bash"), (31, "sh"),
        (35, "mlir")]
    plain, placeholder, console, needs, no_reason, misplaced = blocks
    assert plain.script == "echo one\necho two\n" and not plain.skip
    assert plain.lines == [(4, "echo one"), (5, "echo two")]
    assert placeholder.skip == "placeholder: /path/libvendor.so"
    assert console.script == ("build/bin/te-run a.mlir \\\n"
                              "    --random-inputs\necho done\n")
    assert [n for n, _ in console.lines] == [14, 15, 17]
    assert needs.needs == ["build/lib/libX.so", "build/python"]
    assert not needs.skip and not needs.error
    assert "malformed marker" in no_reason.error
    assert "does not run anyway" in misplaced.error


def test_failure_names_file_line_and_output(scratch):
    block = extract_blocks(
        SOURCE / "README.md",
        "Text.\n\n```sh\necho before\nfalse\necho after\n```\n")[0]
    status, output, line = run_block(block, scratch)
    assert (status, output, line) == (1, "before\n", 5)
    message = describe_failure(block, status, output, line)
    assert message.startswith(
        "README.md:3: the sh block exited with status 1 at line 5.")
    assert "     5| false" in message and "before" in message
