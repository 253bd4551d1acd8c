"""Prints the te_kernel_manifest global of a PTX file as text."""
import re
import sys

text = open(sys.argv[1]).read()
match = re.search(r"te_kernel_manifest\[(\d+)\] = \{([^}]*)\}", text)
if not match:
    sys.exit("no te_kernel_manifest in " + sys.argv[1])
# PTX leaves out the trailing zeros of an initializer; the array's size
# keeps them.
data = bytes(int(value) for value in match.group(2).split(","))
data = data.ljust(int(match.group(1)), b"\0")
assert data.endswith(b"\0"), "the manifest is not NUL-terminated"
sys.stdout.write(data[:-1].decode("ascii"))
