"""Half and small integer types (aotc/dtypes.py's table) from the manifest to every binding.

A family over f16 and bf16 arrays with an f16 and a bf16 scalar, one over
f16, f32 and bf16 with a scalar of the arrays' type, and one over i8, u8, i16 and
u16 arrays with u32 and u64 scalars, rendered by the real
codegen, compiled by the emulator, and called from NumPy, PyTorch and JAX;
each result is checked against NumPy. The half results are compared within
one unit in the last place of their type (relative 2**-10 for f16, 2**-7 for
bf16): the kernel computes in float and rounds once, as the reference does,
and the host compiler may contract a multiply and an add into one fma. The
integer results are exact.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from conftest import require_nvrtc
from declared_support import declared_library, write_project

from aotc.dtypes import DTYPES, bf16_bits, by_dlpack, by_numpy, by_typestr
from aotc.errors import ArgumentError, ArgumentTypeError

HALF = {
    "manifest.yaml": """\
library: halflib
templates: templates
archs: {sass: [80], ptx: [80]}
families:
  affine:
    template: affine.cu.j2
    axes: {dtype: [f16, bf16]}
    name: "affine_{dtype}"
    signature:
      x: {array: dtype, role: in, shape: [n]}
      y: {array: dtype, role: out, shape: [n]}
      n: i32
      alpha: f16
      beta: bf16
    launch:
      grid: ["cdiv(n, 64)"]
      block: [64]
  widen:
    template: widen.cu.j2
    axes: {dtype: [i8, u8, i16, u16]}
    name: "widen_{dtype}"
    signature:
      x: {array: dtype, role: in, shape: [n]}
      y: {array: i64, role: out, shape: [n]}
      n: i32
      scale: u32
      offset: u64
    launch:
      grid: ["cdiv(n, 64)"]
      block: [64]
  scale:
    template: scale.cu.j2
    axes: {dtype: [f16, f32, bf16, f64]}
    name: "scale_{dtype}"
    signature:
      x: {array: dtype, role: in, shape: [n]}
      y: {array: dtype, role: out, shape: [n]}
      n: i32
      alpha: dtype
    launch:
      grid: ["cdiv(n, 64)"]
      block: [64]
""",
    "templates/affine.cu.j2": """\
// {{ kernel_name }}: y = alpha * x + beta, computed in float and rounded once to {{ dtype }}.
extern "C" __global__ void __launch_bounds__(64) {{ kernel_name }}({{ params }})
{
    int i = blockIdx.x * 64 + threadIdx.x;
    if (i < n) y[i] = {{ ctype.y }}(__half2float(alpha) * (float)x[i] + __bfloat162float(beta));
}
""",
    "templates/scale.cu.j2": """\
// {{ kernel_name }}: y = x * alpha, alpha of the arrays' own type.
extern "C" __global__ void __launch_bounds__(64) {{ kernel_name }}({{ params }})
{
    int i = blockIdx.x * 64 + threadIdx.x;
    if (i < n) y[i] = {{ ctype.y }}((float)x[i] * (float)alpha);
}
""",
    "templates/widen.cu.j2": """\
// {{ kernel_name }}: y = x * scale + offset, in 64-bit integers.
extern "C" __global__ void __launch_bounds__(64) {{ kernel_name }}({{ params }})
{
    int i = blockIdx.x * 64 + threadIdx.x;
    if (i < n) y[i] = (long long)x[i] * (long long)scale + (long long)offset;
}
""",
}

# Relative tolerance of each half type: one unit in the last place.
ULP = {"f16": 2.0**-10, "bf16": 2.0**-7}
NUMPY_TYPES = {"f16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16)}
INT_TYPES = {"i8": np.int8, "u8": np.uint8, "i16": np.int16, "u16": np.uint16}
ALPHA, BETA = 1.5, -0.75


@pytest.fixture(scope="module")
def halflib(tmp_path_factory: pytest.TempPathFactory) -> Any:
    import aotc
    import aotc.kernels

    root = tmp_path_factory.mktemp("halflib")
    return aotc.kernels.over(aotc.load(declared_library(root, write_project(root / "project", HALF)), backend="emulator"))


def _half_input(dtype: str, n: int = 200) -> np.ndarray:
    rng = np.random.default_rng(7)
    return rng.uniform(-4, 4, n).astype(np.float32).astype(NUMPY_TYPES[dtype])


def _half_reference(x: np.ndarray, dtype: str) -> np.ndarray:
    alpha = np.float32(np.float16(ALPHA))
    beta = np.float32(np.array(BETA, np.float32).astype(ml_dtypes.bfloat16))
    return (alpha * x.astype(np.float32) + beta).astype(NUMPY_TYPES[dtype])


def _assert_half(got: np.ndarray, want: np.ndarray, dtype: str) -> None:
    assert got.dtype == NUMPY_TYPES[dtype] and got.shape == want.shape
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=ULP[dtype], atol=ULP[dtype])


def _int_input(dtype: str, n: int = 150) -> np.ndarray:
    info = np.iinfo(INT_TYPES[dtype])
    return np.random.default_rng(3).integers(info.min, info.max, n, endpoint=True).astype(INT_TYPES[dtype])


def _int_reference(x: np.ndarray, scale: int, offset: int) -> np.ndarray:
    return x.astype(np.int64) * scale + offset


# The table: each new type's names in every place, as the libraries spell them.


@pytest.mark.parametrize(
    ("name", "ctype", "numpy", "dlpack", "typestr", "code"),
    [
        ("f16", "__half", "float16", (2, 16), "<f2", "e"),
        ("bf16", "__nv_bfloat16", "bfloat16", (4, 16), None, "H"),
        ("i8", "signed char", "int8", (0, 8), "|i1", "b"),
        ("u8", "unsigned char", "uint8", (1, 8), "|u1", "B"),
        ("i16", "short", "int16", (0, 16), "<i2", "h"),
        ("u16", "unsigned short", "uint16", (1, 16), "<u2", "H"),
        ("u64", "unsigned long long", "uint64", (1, 64), "<u8", "Q"),
    ],
)
def test_each_new_type_has_its_names(name: str, ctype: str, numpy: str, dlpack: tuple[int, int], typestr: str | None, code: str) -> None:
    import torch

    d = DTYPES[name]
    assert (d.ctype, d.numpy, d.dlpack, d.typestr, d.code) == (ctype, numpy, dlpack, typestr, code)
    assert by_numpy(numpy) is d and by_dlpack(*dlpack) is d
    assert np.dtype(NUMPY_TYPES.get(name, numpy)).itemsize == d.itemsize
    assert getattr(torch, numpy).itemsize == d.itemsize
    if typestr is not None:
        assert by_typestr(typestr) is d and np.dtype(numpy).str.replace("|", "<") == typestr.replace("|", "<")


def test_no_typestr_is_taken_for_bf16() -> None:
    """NumPy writes "<V2" for a bfloat16 array's interface: two bytes of anything."""
    assert np.zeros(1, ml_dtypes.bfloat16).__array_interface__["typestr"] == "<V2"
    assert by_typestr("<V2") is None


@pytest.mark.parametrize("value", [0.0, -0.0, 1.0, 1.00390625, 1.01171875, 1.0 + 3 * 2**-8, -2.5, 0.1, 1e-40, 3.0e38, float("inf"), -float("inf")])
def test_bf16_bits_round_to_nearest_even_as_ml_dtypes(value: float) -> None:
    want = np.array([value], np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)[0]
    assert bf16_bits(value) == want


def test_bf16_bits_keep_nan_and_refuse_past_the_range() -> None:
    bits = bf16_bits(float("nan"))
    assert bits & 0x7F80 == 0x7F80 and bits & 0x7F
    with pytest.raises(ArgumentError, match=r"^3\.4e\+38 does not fit bf16$"):
        bf16_bits(3.4e38)  # rounds past bf16's largest finite value
    with pytest.raises(ArgumentError, match=r"^1e\+39 does not fit bf16$"):
        bf16_bits(1e39)  # past float's range too


# Rendering: the headers the parameter list needs.


def test_the_rendered_source_includes_the_headers_of_its_types(tmp_path: Path) -> None:
    from aotc.build.codegen import render_kernel
    from aotc.build.manifest import load_manifest

    manifest = load_manifest(write_project(tmp_path, HALF))
    kernels = {k.name: k for k in manifest.kernels}
    source = render_kernel(manifest, kernels["affine_f16"])
    assert source.startswith("#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n")
    assert "affine_f16(const __half* __restrict__ x, __half* __restrict__ y, int n, __half alpha, __nv_bfloat16 beta)" in source
    widen = render_kernel(manifest, kernels["widen_i8"])
    assert "#include" not in widen
    assert "widen_i8(const signed char* __restrict__ x, long long* __restrict__ y, int n, unsigned int scale, unsigned long long offset)" in widen


def test_the_index_records_the_pack_codes(halflib: Any) -> None:
    signature = halflib.library.kernel("affine_bf16").signature
    assert signature.kinds == ("ptr", "ptr", "i32", "f16", "bf16")
    assert signature.format.lstrip("@") == "QQieH"
    assert halflib.library.kernel("widen_u16").signature.format.lstrip("@") == "QQiIQ"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_nvcc_compiles_the_rendered_sources_for_sm_80(tmp_path: Path) -> None:
    from aotc.build.codegen import render_kernel
    from aotc.build.manifest import load_manifest

    manifest = load_manifest(write_project(tmp_path, HALF))
    for kernel in manifest.kernels:
        source = tmp_path / f"{kernel.name}.cu"
        source.write_text(render_kernel(manifest, kernel))
        result = subprocess.run(
            ["nvcc", "-cubin", "-arch=sm_80", "-o", str(tmp_path / f"{kernel.name}.cubin"), str(source)],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert (tmp_path / f"{kernel.name}.cubin").stat().st_size > 0


def test_nvrtc_compiles_the_rendered_sources(tmp_path: Path) -> None:
    """NVRTC has no cuda_bf16.h built in: it is given a toolkit's include folder (aotc._cuda_headers)."""
    require_nvrtc()
    from aotc.build.codegen import render_kernel
    from aotc.build.manifest import load_manifest

    manifest = load_manifest(write_project(tmp_path, HALF))
    kernel = next(k for k in manifest.kernels if k.name == "affine_bf16")
    source = tmp_path / "affine.cu"
    source.write_text(render_kernel(manifest, kernel))
    result = subprocess.run(
        [sys.executable, "-c", "import sys; from aotc.build.nvrtc_fatbin import main; sys.exit(main(sys.argv[1:]))",
         "--cuda", "13", "--sass", "80", "--ptx", "80", "--out", str(tmp_path / "affine.fatbin"), str(source)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


# Calls from each framework, read in place, against NumPy.


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_half_arrays_from_numpy(halflib: Any, dtype: str) -> None:
    x = _half_input(dtype)
    y = halflib.affine(x, alpha=ALPHA, beta=BETA)
    _assert_half(y, _half_reference(x, dtype), dtype)
    out = np.zeros_like(x)
    assert halflib.affine(x, alpha=ALPHA, beta=BETA, y=out) is out  # written in place
    _assert_half(out, _half_reference(x, dtype), dtype)
    again = halflib.affine(x, alpha=ALPHA, beta=BETA)  # a repeat call: the NumPy call plan
    _assert_half(again, _half_reference(x, dtype), dtype)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_half_arrays_from_torch(halflib: Any, dtype: str) -> None:
    import torch

    kind = getattr(torch, DTYPES[dtype].numpy)
    x = torch.from_numpy(_half_input("f16").astype(np.float32)).to(kind)
    reference = _half_reference(x.float().numpy().astype(NUMPY_TYPES[dtype]), dtype)
    for _ in range(2):  # the second call takes the tensor plan
        y = halflib.affine(x, alpha=ALPHA, beta=BETA)
        assert y.dtype is kind
        _assert_half(y.float().numpy().astype(NUMPY_TYPES[dtype]), reference, dtype)
    out = torch.zeros_like(x)
    halflib.affine(x, alpha=ALPHA, beta=BETA, y=out)
    _assert_half(out.float().numpy().astype(NUMPY_TYPES[dtype]), reference, dtype)


def test_a_scalar_typed_by_a_half_dtype_axis_binds_as_a_float(halflib: Any) -> None:
    # bf16 is a float type: the scale family is one layout (the call picks the
    # kernel by x's dtype, no dtype= needed) whose op takes a float alpha.
    import torch

    halflib.torch_ops()
    op = torch.ops.halflib.scale
    assert "float alpha" in str(op.default._schema)  # noqa: SLF001 - the registered schema
    for dtype in ("f32", "bf16"):
        x = _half_input("f16").astype(np.float32).astype(NUMPY_TYPES.get(dtype, np.float32))
        want = (x.astype(np.float32) * np.float32(2.5)).astype(x.dtype).astype(np.float32)
        got = halflib.scale(x, alpha=2.5)
        assert got.dtype == x.dtype
        np.testing.assert_allclose(got.astype(np.float32), want, rtol=ULP["bf16"])
        t = torch.from_numpy(x.astype(np.float32)).to(getattr(torch, DTYPES[dtype].numpy))
        for got in (halflib.scale(t, alpha=2.5), op(t, 2.5)):
            assert got.dtype == t.dtype
            np.testing.assert_allclose(got.float().numpy(), want, rtol=ULP["bf16"])


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_half_arrays_from_jax(halflib: Any, dtype: str) -> None:
    import jax
    import jax.numpy as jnp

    x = jnp.asarray(_half_input(dtype))
    assert x.dtype == NUMPY_TYPES[dtype]
    want = _half_reference(np.asarray(x), dtype)
    _assert_half(np.asarray(halflib.affine(x, alpha=ALPHA, beta=BETA)), want, dtype)
    jitted = jax.jit(lambda a: halflib.affine(a, alpha=ALPHA, beta=BETA))
    _assert_half(np.asarray(jitted(x)), want, dtype)


@pytest.mark.parametrize("dtype", ["i8", "u8", "i16", "u16"])
def test_small_integer_arrays_from_numpy_torch_and_jax(halflib: Any, dtype: str) -> None:
    import jax.numpy as jnp
    import torch

    x = _int_input(dtype)
    scale, offset = 3_000_000_000, 2**40  # past i32 and past u32: u32 and u64 scalars
    want = _int_reference(x, scale, offset)
    np.testing.assert_array_equal(halflib.widen(x, scale=scale, offset=offset), want)
    np.testing.assert_array_equal(halflib.widen(torch.from_numpy(x), scale=scale, offset=offset).numpy(), want)
    small = _int_reference(x, 3, 5)  # JAX without x64 keeps i64 results as i32: values that fit
    got = halflib.widen(jnp.asarray(x), scale=3, offset=5)
    np.testing.assert_array_equal(np.asarray(got).astype(np.int64), small)


def test_a_half_array_through_dlpack(halflib: Any) -> None:
    """NumPy cannot view a CPU bf16 DLPack array: it is read from the capsule in place."""
    import torch

    x = torch.from_numpy(_half_input("f16").astype(np.float32)).to(torch.bfloat16)

    class Capsule:  # an array known only by its DLPack export
        def __init__(self, tensor: Any) -> None:
            self.tensor = tensor

        def __dlpack__(self, **kwargs: Any) -> Any:
            return self.tensor.__dlpack__(**kwargs)

        def __dlpack_device__(self) -> Any:
            return self.tensor.__dlpack_device__()

    out = torch.zeros_like(x)  # a DLPack-only array is never written: the result is a tensor
    halflib.affine(Capsule(x), alpha=ALPHA, beta=BETA, y=out)
    with pytest.raises(ArgumentTypeError, match=r"^affine: y: cannot allocate a result like Capsule; pass y=$"):
        halflib.affine(Capsule(x), alpha=ALPHA, beta=BETA)
    want = _half_reference(x.float().numpy().astype(NUMPY_TYPES["bf16"]), "bf16")
    _assert_half(out.float().numpy().astype(NUMPY_TYPES["bf16"]), want, "bf16")


# Scalars: packed as each type's bits, refused in one line where they do not fit.


def test_half_scalars_are_rounded_once(halflib: Any) -> None:
    """alpha is rounded to f16 and beta to bf16 before the launch, each once,
    to nearest: unrounded, each would give another f16 result."""
    x = np.full(4, 2.0**-11, np.float16)
    y = halflib.affine(x, alpha=2050.9, beta=0.0)  # f16(2050.9) = 2050: y = 1 + 2**-10 (unrounded: 1.00044, f16 1.0)
    assert y.tolist() == [1.0 + 2**-10] * 4
    y = halflib.affine(x, alpha=0.0, beta=1.0 + 2**-8 + 2**-10)  # bf16 rounds up to 1 + 2**-7 (unrounded: f16 1 + 5 * 2**-10)
    assert y.tolist() == [1.0 + 2**-7] * 4


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"alpha": 1e6, "beta": 0.0}, ArgumentError, "affine: alpha: 1000000.0 does not fit f16"),
        ({"alpha": 1.0, "beta": 1e39}, ArgumentError, "affine: beta: 1e+39 does not fit bf16"),
        ({"alpha": "1", "beta": 0.0}, ArgumentTypeError, "affine: alpha: expected a number (f16), got '1'"),
    ],
)
def test_a_scalar_that_does_not_fit_is_refused_in_one_line(halflib: Any, kwargs: dict[str, Any], error: type, message: str) -> None:
    import torch

    for x in (np.ones(3, np.float16), torch.ones(3, dtype=torch.float16)):
        for _ in range(2):  # the full path, then again where a plan was kept
            with pytest.raises(error) as info:
                halflib.affine(x, **kwargs)
            assert str(info.value) == message


@pytest.mark.parametrize("dtype", ["bf16", "f32", "f16"])
def test_a_scalar_typed_by_a_dtype_axis_is_converted_by_the_chosen_kernels_type_every_call(halflib: Any, dtype: str) -> None:
    """The layout's first point is f16: a repeat call (its plan) converts alpha as
    the kernel the call chose takes it, not as that first point does (bf16: its
    bits, where f16's conversion left a float that no bf16 word packs; f32:
    1e5, which f16 cannot hold)."""
    import torch

    x = np.array([1.0, -2.0, 0.5, 3.0], np.float32).astype(NUMPY_TYPES.get(dtype, np.float32))
    alphas = (2.5, 2.5, 1e5, 1e5) if dtype == "f32" else (2.5, 2.5, 2.5)
    for alpha in alphas:  # the full path, then the plan it left
        want = (x.astype(np.float32) * np.float32(alpha)).astype(x.dtype).astype(np.float32)
        np.testing.assert_allclose(halflib.scale(x, alpha=alpha).astype(np.float32), want, rtol=ULP["bf16"])
        t = torch.from_numpy(x.astype(np.float32)).to(getattr(torch, DTYPES[dtype].numpy))
        np.testing.assert_allclose(halflib.scale(t, alpha=alpha).float().numpy(), want, rtol=ULP["bf16"])


@pytest.mark.parametrize("dtype", ["bf16", "f32"])
def test_a_dtype_typed_scalar_under_jax_jit_every_call(halflib: Any, dtype: str) -> None:
    """jit's callback takes the NumPy plan of XLA's host buffers: the same conversion, every run."""
    import jax
    import jax.numpy as jnp

    alpha = 2.5 if dtype == "bf16" else 1e5
    jitted = jax.jit(lambda a: halflib.scale(a, alpha=alpha))
    x = jnp.asarray(np.array([1.0, -2.0, 0.5], np.float32).astype(NUMPY_TYPES.get(dtype, np.float32)))
    want = (np.asarray(x).astype(np.float32) * np.float32(alpha)).astype(np.asarray(x).dtype).astype(np.float32)
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(jitted(x)).astype(np.float32), want, rtol=ULP["bf16"])


@pytest.mark.parametrize(
    ("alpha", "error", "message"),
    [
        (1e39, ArgumentError, "scale: alpha: 1e+39 does not fit f32"),
        ("1", ArgumentTypeError, "scale: alpha: expected a number (f32), got '1'"),
    ],
)
def test_a_scalar_that_does_not_fit_is_refused_while_jax_traces(halflib: Any, alpha: Any, error: type, message: str) -> None:
    """Under jit the kernel runs in XLA's callback, where a refusal would come
    back as XLA's internal error and its traceback: the scalar is checked by
    the chosen kernel's type while the call is traced, as the arrays are."""
    import jax
    import jax.numpy as jnp

    x = jnp.ones(3, jnp.float32)
    for call in (lambda a: halflib.scale(a, alpha=alpha), jax.jit(lambda a: halflib.scale(a, alpha=alpha))):
        with pytest.raises(error) as info:
            call(x)
        assert str(info.value) == message


def test_an_f32_scalar_past_its_range_is_refused_not_passed_as_inf(halflib: Any) -> None:
    import torch

    for x in (np.ones(3, np.float32), torch.ones(3)):
        halflib.scale(x, alpha=2.0)  # leaves a call plan, which must refuse as the full path does
        for _ in range(2):
            with pytest.raises(ArgumentError) as info:
                halflib.scale(x, alpha=1e300)
            assert str(info.value) == "scale: alpha: 1e+300 does not fit f32"
    assert np.isinf(halflib.scale(np.ones(3, np.float32), alpha=float("inf"))).all()  # infinity itself is a value


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32", "f64"])
def test_an_integer_past_every_float_is_refused_in_one_line(halflib: Any, dtype: str) -> None:
    """float() overflows on 10**400: that is the scalar not fitting, on the full
    path and on the plan a valid call left (which for f64 took any int)."""
    import torch

    numpy = NUMPY_TYPES.get(dtype, np.dtype(dtype.replace("f", "float")))
    for x in (np.ones(3, numpy), torch.ones(3, dtype=getattr(torch, DTYPES[dtype].numpy))):
        halflib.scale(x, alpha=2.0)
        for _ in range(2):
            with pytest.raises(ArgumentError) as info:
                halflib.scale(x, alpha=10**400)
            assert re.fullmatch(rf"scale: alpha: 10+\.\.\.00 does not fit {dtype}", str(info.value)), str(info.value)


@pytest.mark.parametrize("given", ["np.float32", "np.dtype('float32')", "'float32'", "torch.bfloat16", "ml_dtypes.bfloat16"])
def test_a_frameworks_dtype_for_a_dtype_axis_is_refused_naming_ours(halflib: Any, given: str) -> None:
    import torch

    value = eval(given, {"np": np, "torch": torch, "ml_dtypes": ml_dtypes})
    ours = "bf16" if "bfloat16" in given else "f32"
    calls = {  # each family's dtype values: the hint only where ours is one of them
        ("f16", "f32", "bf16"): lambda: halflib.scale(np.ones(3, np.float32), alpha=1.0, dtype=value),
        ("f16", "bf16"): lambda: halflib.affine(np.ones(3, np.float16), alpha=1.0, beta=0.0, dtype=value),
    }
    for (values, call), function in zip(calls.items(), ("scale", "affine")):
        with pytest.raises(ArgumentError) as info:
            call()
        message = str(info.value)
        assert "\n" not in message and message.startswith(f"{function}: dtype: ") and "is not one of its values" in message, message
        assert message.endswith(f"; pass dtype='{ours}'") == (ours in values), message


def test_an_integer_scalar_out_of_its_range_is_refused(halflib: Any) -> None:
    x = np.ones(3, np.uint8)
    with pytest.raises(ArgumentError, match=r"^widen: scale: 4294967296 does not fit u32$"):
        halflib.widen(x, scale=2**32, offset=0)
    with pytest.raises(ArgumentError, match=r"^widen: offset: -1 does not fit u64$"):
        halflib.widen(x, scale=1, offset=-1)


# Refusals: a type the framework lacks, a type the family lacks.


def test_bf16_without_ml_dtypes_names_the_argument_and_the_package(halflib: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """NumPy has bfloat16 only through ml_dtypes: without it, making a bf16 result
    names the argument and the package (simulated: the import fails)."""
    import importlib

    real = importlib.import_module

    def without_ml_dtypes(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "ml_dtypes":
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib, "import_module", without_ml_dtypes)
    x = _half_input("bf16", 37)  # a shape no earlier call kept a plan for
    with pytest.raises(ArgumentTypeError) as info:
        halflib.affine(x, alpha=ALPHA, beta=BETA)
    assert str(info.value) == "affine: y: NumPy has no bf16 (bfloat16) without ml_dtypes; pip install ml-dtypes"
    out = np.zeros_like(x)  # an array given is read in place: no NumPy dtype is made
    halflib.affine(x, alpha=ALPHA, beta=BETA, y=out)
    _assert_half(out, _half_reference(x, "bf16"), "bf16")


def test_an_array_type_the_family_lacks_is_named(halflib: Any) -> None:
    import torch

    with pytest.raises(ArgumentError) as info:
        halflib.affine(np.ones(3, np.float32), alpha=1.0, beta=0.0)
    message = str(info.value)
    assert message.startswith("affine: x: dtype f32") and "\n" not in message
    with pytest.raises(ArgumentError) as info:
        halflib.widen(torch.ones(3, dtype=torch.int32), scale=1, offset=0)
    assert str(info.value).startswith("widen: x: dtype i32") and "\n" not in str(info.value)


def test_the_scalar_pack_codes_size_two_bytes() -> None:
    assert struct.calcsize("@" + DTYPES["f16"].code) == struct.calcsize("@" + DTYPES["bf16"].code) == 2
