"""Prints what a kernel module file is, by its first bytes."""
import sys

data = open(sys.argv[1], "rb").read()
if data[:4] == b"\x7fELF":
    print("ELF (cubin)")
elif data[:4] == bytes.fromhex("50ed55ba"):
    print("fatbin")
else:
    print("unknown: " + data[:8].hex())
print("manifest inside" if b"te-kernel-abi 4\nentry" in data else
      "no manifest")
