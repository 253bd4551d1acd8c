# Checks te-npy-tool (TESupport) against numpy and ml_dtypes as independent
# references: .npy files numpy writes are read correctly, files the tool
# writes are byte-identical to np.save's, and conversions give the same bits
# as numpy/ml_dtypes casts (with fp8 saturation, which ml_dtypes lacks).
#
# Usage: npy_numpy_interop.py <te-npy-tool> <scratch dir>
# Prints one "<section>: ok ..." line per section; any mismatch raises.

import os
import subprocess
import sys
import warnings

import ml_dtypes
import numpy as np

TOOL, WORK = sys.argv[1], sys.argv[2]
os.makedirs(WORK, exist_ok=True)
warnings.simplefilter("ignore")  # casts of NaN/inf, version 2.0 headers
np.seterr(all="ignore")
rng = np.random.default_rng(1234)
counter = [0]


def scratch(name):
    counter[0] += 1
    return os.path.join(WORK, f"{counter[0]:04d}-{name}")


def tool(*args):
    result = subprocess.run([TOOL, *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise AssertionError(f"te-npy-tool {' '.join(args)} failed:\n{result.stderr}")
    return result.stdout


def tool_error(*args):
    result = subprocess.run([TOOL, *args], capture_output=True, text=True)
    if result.returncode == 0:
        raise AssertionError(f"te-npy-tool {' '.join(args)} unexpectedly succeeded")
    return result.stderr


def save(name, array, version=None):
    path = scratch(name)
    with open(path, "wb") as f:
        if version is None:
            np.save(f, array)
        else:
            np.lib.format.write_array(f, array, version=version)
    return path


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def convert(array, target, version=None):
    """Saves `array` with numpy, converts it with the tool, loads the result."""
    src = save("in.npy", array, version)
    out = scratch(f"out-{target}.npy")
    tool("convert", src, target, out)
    return out, np.load(out)


# --- Files: numpy -> tool -> numpy, byte for byte --------------------------

NUMPY_TYPES = {
    "f32": np.float32, "f64": np.float64, "f16": np.float16, "i1": np.bool_,
    "i8": np.int8, "ui8": np.uint8, "i16": np.int16, "ui16": np.uint16,
    "i32": np.int32, "i64": np.int64,
}
SHAPES = [(), (0,), (5,), (2, 3), (2, 0, 3), (1, 2, 3, 4), (3, 1, 2, 1, 2)]

files = 0
for name, numpy_type in NUMPY_TYPES.items():
    for shape in SHAPES:
        if numpy_type is np.bool_:
            array = rng.integers(0, 2, size=shape).astype(np.bool_)
        elif np.issubdtype(numpy_type, np.integer):
            info = np.iinfo(numpy_type)
            array = rng.integers(info.min, info.max, size=shape,
                                 dtype=numpy_type, endpoint=True)
        else:
            array = rng.standard_normal(size=shape).astype(numpy_type)
        src = save("in.npy", array)
        got_info = tool("info", src).strip()
        assert got_info == f"{name} {shape!r}", (got_info, shape)
        out, loaded = convert(array, name)
        # Same dtype: a plain copy, which must match np.save exactly.
        assert read_bytes(out) == read_bytes(src), (name, shape)
        assert loaded.dtype == array.dtype and loaded.shape == array.shape
        assert np.array_equal(loaded, array)
        files += 1
print(f"numpy-files: ok {files} arrays read and rewritten byte-identically")

# Big-endian files are converted; version 2.0 and 3.0 headers are read;
# numpy saves strided views in C order.
variants = 0
for descr in [">f4", ">f8", ">f2", ">i2", ">u2", ">i4", ">i8"]:
    array = (rng.standard_normal(7) * 1000).astype(descr)
    name = {"f": "f", "i": "i", "u": "ui"}[descr[1]] + str(8 * int(descr[2]))
    _, loaded = convert(array, name)
    assert loaded.dtype.str == "<" + descr[1:], loaded.dtype
    assert np.array_equal(loaded, array)
    variants += 1
for version in [(1, 0), (2, 0), (3, 0)]:
    array = rng.standard_normal((3, 4)).astype(np.float32)
    out, loaded = convert(array, "f32", version)
    assert read_bytes(out) == read_bytes(save("ref.npy", array))
    variants += 1
array = rng.standard_normal((6, 4)).astype(np.float32)[::2, 1:]
_, loaded = convert(array, "f32")
assert np.array_equal(loaded, array)
variants += 1
print(f"numpy-variants: ok {variants} big-endian, versioned and strided arrays")

# --- Conversions -----------------------------------------------------------

NARROW = {
    "bf16": (ml_dtypes.bfloat16, np.uint16, None),
    "f16": (np.float16, np.uint16, None),
    "f8E4M3FN": (ml_dtypes.float8_e4m3fn, np.uint8, 448.0),
    "f8E5M2": (ml_dtypes.float8_e5m2, np.uint8, 57344.0),
}


def stored_type(name):
    """What the tool writes: numpy's own type, or raw bits where it has none."""
    return np.float16 if name == "f16" else NARROW[name][1]


def all_finite_values(narrow_type, bits_type):
    bits = np.arange(np.iinfo(bits_type).max + 1, dtype=np.uint64).astype(bits_type)
    values = bits.view(narrow_type).astype(np.float64)
    return np.unique(values[np.isfinite(values)])


def interesting_f32():
    """Random bit patterns (NaNs with payloads, infs, subnormals), values
    spread over the narrow ranges, and every exact tie of every narrow type,
    with its neighbours."""
    parts = [
        rng.integers(0, 2**32, size=200000, dtype=np.uint64).astype(np.uint32).view(np.float32),
        (np.exp2(rng.uniform(-150, 130, 200000)) *
         rng.choice([-1, 1], 200000)).astype(np.float32),
        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 448, 464, 480,
                  57344, 61440, 65504, 65520, 2**-24, 2**-25, 2**-9, 2**-10,
                  2**-16, 2**-17, 1e-45, -1e-45, 3.4e38], np.float32),
    ]
    for narrow_type, bits_type, _ in NARROW.values():
        values = all_finite_values(narrow_type, bits_type)
        ties = ((values[:-1] + values[1:]) / 2).astype(np.float32)
        for tie in [ties, np.nextafter(ties, np.float32(np.inf)),
                    np.nextafter(ties, np.float32(-np.inf))]:
            parts += [tie, -tie]
    return np.concatenate(parts)


def check_narrowing(source_values, source_name):
    for target, (narrow_type, bits_type, fp8_max) in NARROW.items():
        out, got = convert(source_values, target)
        assert got.dtype == stored_type(target), (target, got.dtype)
        got = got.view(bits_type)
        # Independent reference: numpy/ml_dtypes' round-to-nearest-even
        # cast; fp8 saturation is clipping to +-max first, which gives the
        # same result as saturating after rounding.
        reference = source_values
        if fp8_max is not None:
            reference = np.clip(reference, -fp8_max, fp8_max)
        expected = reference.astype(narrow_type).view(bits_type)
        nan = np.isnan(source_values)
        # NaN: the result must be a NaN of the target type with the input's
        # sign; payloads are not compared (numpy keeps them, ml_dtypes does
        # not, te::support keeps the top ones and sets the quiet bit).
        mismatch = np.nonzero((got != expected) & ~nan)[0]
        if mismatch.size:
            i = mismatch[0]
            raise AssertionError(
                f"{source_name} -> {target}: element {i} = {source_values[i]!r} "
                f"gave {got[i]:#x}, expected {expected[i]:#x} "
                f"({mismatch.size} mismatches)")
        got_nan = got[nan].view(narrow_type)
        assert np.all(np.isnan(got_nan.astype(np.float32))), target
        sign_bit = 1 << (8 * np.dtype(bits_type).itemsize - 1)
        assert np.array_equal((got[nan] & sign_bit) != 0,
                              np.signbit(source_values[nan])), target
    # To f32: f64 rounds like numpy's cast, f32 is copied.
    _, got = convert(source_values, "f32")
    expected = source_values.astype(np.float32)
    assert np.array_equal(got, expected, equal_nan=True), source_name
    assert np.array_equal(np.signbit(got), np.signbit(expected)), source_name


f32_values = interesting_f32()
check_narrowing(f32_values, "f32")
print(f"convert-f32: ok {f32_values.size} values to bf16, f16, f8E4M3FN, "
      f"f8E5M2 and f32")

# f64 sources round once, straight to the target (ml_dtypes and numpy do
# too); values just off f32 ties would expose rounding twice via f32.
f64_values = np.concatenate([
    f32_values.astype(np.float64),
    rng.integers(0, 2**64, size=100000, dtype=np.uint64).view(np.float64),
    np.exp2(rng.uniform(-160, 140, 100000)) * rng.choice([-1, 1], 100000),
])
for narrow_type, bits_type, _ in NARROW.values():
    values = all_finite_values(narrow_type, bits_type)
    ties = (values[:-1] + values[1:]) / 2
    f64_values = np.concatenate([f64_values, ties * (1 + 2**-40),
                                 ties * (1 - 2**-40), -ties * (1 + 2**-40)])
check_narrowing(f64_values, "f64")
_, got = convert(f32_values, "f64")
assert np.array_equal(got, f32_values.astype(np.float64), equal_nan=True)
print(f"convert-f64: ok {f64_values.size} values to bf16, f16, f8E4M3FN, "
      f"f8E5M2 and f32")

# Every bit pattern of each narrow type: widening to f32 is exact, and
# rounding that f32 back gives the pattern again (NaN: a NaN of the same
# sign; f8E5M2's infinities: +-max, since fp8 conversions saturate).
WIDE = dict(NARROW, f8E8M0FNU=(ml_dtypes.float8_e8m0fnu, np.uint8, None))
patterns = 0
for name, (narrow_type, bits_type, fp8_max) in WIDE.items():
    bits = np.arange(np.iinfo(bits_type).max + 1, dtype=np.uint64).astype(bits_type)
    src = save(f"bits-{name}.npy", bits)
    widened = scratch(f"wide-{name}.npy")
    tool("widen", src, name, widened)
    got = np.load(widened)
    expected = bits.view(narrow_type).astype(np.float32)
    assert got.dtype == np.float32
    nan = np.isnan(expected)
    assert np.array_equal(np.isnan(got), nan), name
    assert np.array_equal(got.view(np.uint32)[~nan],
                          expected.view(np.uint32)[~nan]), name
    patterns += bits.size
    if name == "f8E8M0FNU":
        # No conversion to f8E8M0FNU exists; raw bits pass through.
        out = scratch("e8m0-out.npy")
        tool("convert", src, name, out)
        assert np.array_equal(np.load(out), bits)
        continue
    back = scratch(f"back-{name}.npy")
    tool("convert", widened, name, back)
    back_bits = np.load(back)
    assert back_bits.dtype == stored_type(name), (name, back_bits.dtype)
    back_bits = back_bits.view(bits_type)
    expected_bits = bits.copy()
    if fp8_max is not None:
        inf = np.isinf(expected)
        expected_bits[inf] = np.clip(expected[inf], -fp8_max, fp8_max) \
            .astype(narrow_type).view(bits_type)
    assert np.array_equal(back_bits[~nan], expected_bits[~nan]), name
    assert np.all(np.isnan(back_bits[nan].view(narrow_type).astype(np.float32)))
    sign_bit = 1 << (8 * np.dtype(bits_type).itemsize - 1)
    assert np.array_equal(back_bits[nan] & sign_bit, bits[nan] & sign_bit)
print(f"exhaustive: ok {patterns} bit patterns of bf16, f16, f8E4M3FN, "
      f"f8E5M2, f8E8M0FNU")

# Raw bits as ui16/ui8 are taken as the narrow type unchanged.
raw16 = rng.integers(0, 2**16, size=(3, 5), dtype=np.uint16)
for target in ["bf16", "f16"]:
    _, got = convert(raw16, target)
    assert np.array_equal(got.view(np.uint16), raw16)
raw8 = rng.integers(0, 2**8, size=(4,), dtype=np.uint8)
for target in ["f8E4M3FN", "f8E5M2", "f8E8M0FNU"]:
    _, got = convert(raw8, target)
    assert np.array_equal(got, raw8)
print("raw-bits: ok")

# --- Files numpy writes that the tool must reject, for the .test to check --

np.save(os.path.join(WORK, "ml-bf16.npy"), np.ones(3, ml_dtypes.bfloat16))
np.save(os.path.join(WORK, "ml-e5m2.npy"), np.ones(3, ml_dtypes.float8_e5m2))
np.save(os.path.join(WORK, "fortran.npy"), np.asfortranarray(np.ones((2, 3))))
np.save(os.path.join(WORK, "record.npy"), np.zeros(2, [("a", "<f4"), ("b", "<i4")]))
np.save(os.path.join(WORK, "objects.npy"), np.array([1, "a"], object),
        allow_pickle=True)
np.save(os.path.join(WORK, "complex.npy"), np.zeros(2, np.complex64))
np.save(os.path.join(WORK, "i32.npy"), np.arange(4, dtype=np.int32))
np.savez(os.path.join(WORK, "archive.npz"), a=np.ones(2))
with open(os.path.join(WORK, "truncated.npy"), "wb") as f:
    f.write(read_bytes(save("full.npy", np.ones((2, 3), np.float32)))[:-4])
print("error-files: written")
