"""Writes a valid .npy header for a large array and extends the file to the
array's size with truncate: a sparse file, which takes no disk space.

usage: sparse_npy.py OUT.npy DESCR DIM... [--short N]
"""
import struct
import sys

args = sys.argv[1:]
short = 0
if "--short" in args:
    at = args.index("--short")
    short = int(args[at + 1])
    del args[at : at + 2]
path, descr, dims = args[0], args[1], [int(d) for d in args[2:]]
shape = "(" + ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "") + ")"
header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
prefix = b"\x93NUMPY\x01\x00"
padding = -(len(prefix) + 2 + len(header) + 1) % 64
header = (header + " " * padding + "\n").encode()
size = int(descr[2:])
for dim in dims:
    size *= dim
with open(path, "wb") as out:
    out.write(prefix + struct.pack("<H", len(header)) + header)
    out.truncate(len(prefix) + 2 + len(header) + size - short)
