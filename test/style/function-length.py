#!/usr/bin/env python3
"""Checks that no function in lib/ is longer than a limit (200 lines).

    function-length.py SOURCE_ROOT [--limit N]

A function is a brace block at namespace or class level whose opening brace
follows a parameter list (a `)`, then perhaps const, override, noexcept or a
trailing return type); its length counts from the line of that brace to the
line of the closing one. Comments, string and character literals (raw ones
too) are blanked first, so braces inside them do not count. Prints every
function over the limit as FILE:LINE and exits 1; exits 0 when none is.
"""
import argparse
import re
import sys
from pathlib import Path

RAW = re.compile(r'R"([^()\\ ]{0,16})\(')
SIGNATURE_END = re.compile(
    r'\)\s*(const\s*)?(override\s*)?(noexcept\s*)?(->\s*[\w:<>,*& ]+)?$')
CONTROL = re.compile(r'\b(if|for|while|switch|catch)\s*\(')


def blank(text):
    """`text` with comments and literals replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif RAW.match(text, i):
            m = RAW.match(text, i)
            end = text.find(")" + m.group(1) + '"', m.end())
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            # A digit separator (1'000) is not a character literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and \
                    text[i - 1] not in "uUL8":
                out.append(c)
                i += 1
                continue
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def long_functions(path, limit):
    text = blank(path.read_text(errors="replace"))
    stack = []  # (line, is a function, inside a function)
    line = 1
    before = []  # the code since the last ; { or }
    for c in text:
        if c == "\n":
            line += 1
        if c == "{":
            inside = any(function for _, function, _ in stack)
            head = "".join(before).strip()
            function = (not inside and bool(SIGNATURE_END.search(head)) and
                        not CONTROL.search(head.split(";")[-1]) and
                        not head.endswith("]()"))
            stack.append((line, function, inside))
            before = []
        elif c == "}":
            if stack:
                start, function, _ = stack.pop()
                if function and line - start + 1 > limit:
                    yield start, line - start + 1
            before = []
        elif c == ";":
            before = []
        else:
            before.append(c)
            if len(before) > 2000:
                del before[:1000]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("--limit", type=int, default=200)
    args = parser.parse_args()
    root = Path(args.root)
    failures = []
    for path in sorted((root / "lib").rglob("*")):
        if path.suffix not in (".cpp", ".h", ".c"):
            continue
        for start, length in long_functions(path, args.limit):
            failures.append(f"{path.relative_to(root)}:{start}: a function "
                            f"of {length} lines, longer than {args.limit}; "
                            "split it into named parts")
    for failure in failures:
        print(failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
