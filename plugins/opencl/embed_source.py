#!/usr/bin/env python3
"""Writes the OpenCL C file argv[1] as a C string constant `ocl__kernel_source` into argv[2]."""
import sys

with open(sys.argv[1], encoding="utf-8") as f:
    text = f.read()
src = text.splitlines()
lines = ['/* Generated from ocl_kernels.cl by embed_source.py; do not edit. */',
         'const char *const ocl__kernel_source[] = {']
for line in text.splitlines():
    esc = line.replace('\\', '\\\\').replace('"', '\\"')
    lines.append('    "%s\\n",' % esc)
lines.append('};')
lines.append('const unsigned ocl__kernel_source_count = %d;' % len(src))
with open(sys.argv[2], "w", encoding="utf-8") as f:
    f.write('\n'.join(lines) + '\n')
