#!/usr/bin/env python3
"""Turns CUDA device code into host C++ for the emulator (test-only).

Every launch `kernel<<<grid, block, shared, stream>>>(args)` outside comments and literals
becomes `::emu::launch(grid, block, shared, stream, kernel)(args)` (fake/cuda_runtime.h), so
that the launch is checked and runs on its emulated stream: at once, or when the graph that
stream captures is replayed. Newlines are kept and a #line directive names the source, so the
compiler's messages point at the .cu file's own lines.

Usage: emu_launches.py INPUT.cu OUTPUT.cpp
Exits 1, saying why, when a launch cannot be rewritten or when there is none at all (the
emulated driver would then run no kernel and the test would prove nothing).
"""
import os
import re
import sys

IDENT = re.compile(r"[A-Za-z0-9_:]")


def code_spans(text):
    """Yields (start, end) of the parts of text that are code: not comments, not literals."""
    i, start, n = 0, 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            yield start, i
            i = text.find("\n", i)
            i = n if i < 0 else i
            start = i
        elif text.startswith("/*", i):
            yield start, i
            end = text.find("*/", i + 2)
            if end < 0:
                raise ValueError("unterminated comment at offset %d" % i)
            i = start = end + 2
        elif c in "\"'":
            yield start, i
            i += 1
            while i < n and text[i] != c:
                i += 2 if text[i] == "\\" else 1
            i = start = i + 1
        else:
            i += 1
    yield start, n


def kernel_start(text, end):
    """Where the kernel expression ending at end starts: an identifier (qualified or not),
    optionally followed by a template argument list."""
    i = end
    if i > 0 and text[i - 1] == ">":
        depth = 0
        while i > 0:
            i -= 1
            depth += {"<": -1, ">": 1}.get(text[i], 0)
            if depth == 0:
                break
        if depth != 0:
            raise ValueError("unbalanced template arguments before offset %d" % end)
    while i > 0 and IDENT.match(text[i - 1]):
        i -= 1
    if i == end or text[i:end].startswith("<"):
        raise ValueError("no kernel name before the launch at offset %d" % end)
    return i


def rewrite(text):
    """Returns (host C++, number of launches rewritten)."""
    launches = []
    for lo, hi in code_spans(text):
        at = text.find("<<<", lo, hi)
        while at >= 0:
            close = text.find(">>>", at + 3, hi)
            if close < 0:
                raise ValueError("'<<<' at offset %d has no '>>>'" % at)
            # What separates the kernel from <<<: blanks and line continuations only.
            name_end = at
            while name_end > 0 and text[name_end - 1] in " \t\\\n":
                name_end -= 1
            launches.append((kernel_start(text, name_end), name_end, at, close))
            at = text.find("<<<", close + 3, hi)
    out, pos = [], 0
    for start, name_end, at, close in launches:
        out.append(text[pos:start])
        out.append("::emu::launch(" + text[name_end:at] + text[at + 3:close] + ", " +
                   text[start:name_end] + ")")
        pos = close + 3
    out.append(text[pos:])
    return "".join(out), len(launches)


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: emu_launches.py INPUT.cu OUTPUT.cpp\n")
        return 2
    source = os.path.abspath(argv[1])
    with open(source, encoding="utf-8") as f:
        text = f.read()
    try:
        host, count = rewrite(text)
    except ValueError as e:
        sys.stderr.write("emu_launches.py: %s: %s\n" % (source, e))
        return 1
    if count == 0:
        sys.stderr.write("emu_launches.py: %s: no kernel launch found\n" % source)
        return 1
    with open(argv[2], "w", encoding="utf-8") as f:
        f.write('#line 1 "%s"\n' % source.replace("\\", "\\\\"))
        f.write(host)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
