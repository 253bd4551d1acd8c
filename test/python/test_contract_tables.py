"""te_mlir's tables against the one source each comes from.

The element types are in include/te/ABI/ElementTypes.def, which the
runtime, the support library, the targets and te-run compile in; the
attention and scaling enums are in the dialect (TEAttrs.td). The Python
package spells them again for numpy, torch and argument checks; these tests
fail when one side changes without the other.
"""
import re
from pathlib import Path

import ml_dtypes
import numpy as np

from te_mlir import _DTYPES, _RAW_BITS, ops

ROOT = Path(__file__).resolve().parents[2]


def element_types():
    """(enum, name, bytes, kind, kernel) of each line of ElementTypes.def."""
    text = (ROOT / "include/te/ABI/ElementTypes.def").read_text()
    rows = re.findall(r'^TE_(KERNEL|FILE)_ELEMENT_TYPE\((\w+), "(\w+)", (\d+), '
                      r'(FLOAT|SIGNED|UNSIGNED)\)$', text, re.MULTILINE)
    assert rows, "no element types parsed"
    return [(enum, name, int(size), kind, which == "KERNEL")
            for which, enum, name, size, kind in rows]


def test_python_has_exactly_the_kernel_element_types():
    kernel = [name for _, name, _, _, is_kernel in element_types() if is_kernel]
    assert list(_DTYPES) == kernel


def test_python_sizes_and_kinds_match_the_table():
    for _, name, size, kind, is_kernel in element_types():
        if not is_kernel:
            continue
        dtype = _DTYPES[name]
        assert dtype.itemsize == size, name
        if kind == "FLOAT":
            assert (np.issubdtype(dtype, np.floating)
                    or dtype in (np.dtype(ml_dtypes.bfloat16),
                                 np.dtype(ml_dtypes.float8_e4m3fn),
                                 np.dtype(ml_dtypes.float8_e5m2),
                                 np.dtype(ml_dtypes.float8_e8m0fnu))), name
        else:
            assert dtype.kind in "bi", name
        # Types numpy lacks cross as unsigned raw bits of the same size.
        if name in _RAW_BITS:
            assert _RAW_BITS[name].itemsize == size and _RAW_BITS[name].kind == "u"


def test_python_aliases_and_torch_names_name_table_types():
    names = {name for _, name, _, _, is_kernel in element_types() if is_kernel}
    assert set(ops._NAME_ALIASES.values()) <= names
    assert set(ops._TORCH_DTYPES) == names


def dialect_enum(name):
    text = (ROOT / "include/te/Dialect/TE/IR/TEAttrs.td").read_text()
    body = re.search(r'def TE_%s : TE_I32Enum<"%s",[^\[]*\[(.*?)\]>;'
                     % (name, name), text, re.DOTALL)
    assert body, name
    return tuple(re.findall(r'I32EnumAttrCase<"(\w+)", \d+>', body.group(1)))


def test_python_enums_match_the_dialect():
    assert ops.LAYOUTS == dialect_enum("QKVLayout")
    assert ops.MASKS == dialect_enum("MaskKind")
    assert ops.BIAS_KINDS == dialect_enum("BiasKind")
    assert ops.SOFTMAX_KINDS == dialect_enum("SoftmaxKind")
    assert ops.SCALING_MODES == dialect_enum("ScalingMode")
