"""jaxlib's built-in GPU kernel launcher, checked without a GPU: aotc's
encoding of its call (aotc/arrays/jax_kernel_call.py) decoded against the
schema jaxlib 0.11.1's CUDA plugin embeds (data/jaxlib_triton_schema.textproto,
printed by ci/jaxlib_triton_schema.py), and declared families lowered for
CUDA with the route in use (aotc/kernels/_jax_builtin.py), the opaque data
read back out of the lowered module."""

from __future__ import annotations

import hashlib
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format

from aotc.arrays.jax_kernel_call import ARRAY, encode_kernel_call, image_key
from aotc.errors import ConfigurationError
from aotc.runtime import jax_route
from declared_support import AXPY, BADD, ROWOPS, axpy, badd, declared_library, reference, rowops, write_project  # noqa: F401 - fixtures

jax = pytest.importorskip("jax", reason="JAX is not installed (tox installs the CPU build)")
jnp = pytest.importorskip("jax.numpy")

SCHEMA = Path(__file__).parent / "data" / "jaxlib_triton_schema.textproto"


def _message(name: str) -> Any:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(text_format.Parse(SCHEMA.read_text(), descriptor_pb2.FileDescriptorProto()))
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"jax_triton.{name}"))


AnyKernelCall = _message("TritonAnyKernelCall")


def decode(opaque: bytes) -> Any:
    call = AnyKernelCall.FromString(zlib.decompress(opaque))
    assert call.WhichOneof("value") == "kernel_call"
    return call


def parameters(call: Any) -> list[tuple[str, Any]]:
    """Each parameter as (the oneof member set, its value)."""
    out = []
    for parameter in call.kernel_call.parameters:
        kind = parameter.WhichOneof("value")
        out.append((kind, None if kind == "array" else getattr(parameter, kind)))
    return out


def test_the_encoding_decodes_field_for_field() -> None:
    image = b"\x50\xed\x55\xba fatbin bytes"
    digest = hashlib.sha256(image).hexdigest()
    scalars = [("i32", -7), ("i32", 2**31 - 1), ("u32", 2**32 - 1), ("i64", -(2**63)), ("u64", 2**64 - 1), ("f32", 0.5), ("f64", -1e300), ("bool", True), ("i32", 0)]
    opaque = encode_kernel_call(
        name="softmax_f32", symbol="aotc_softmax_f32", num_warps=8, shared_bytes=4096, capability=(9, 0),
        image=image, image_sha256=digest, grid=(6, 2, 1), params=[(ARRAY, None), *scalars, (ARRAY, None)],
    )  # fmt: skip
    call = decode(opaque)
    assert call.name == "softmax_f32"
    kernel = call.kernel_call.kernel
    assert (kernel.kernel_name, kernel.num_warps, kernel.shared_mem_bytes, kernel.compute_capability) == ("aotc_softmax_f32", 8, 4096, 90)
    assert kernel.HasField("num_ctas") and kernel.num_ctas == 1
    assert kernel.ptx == image_key(digest) and digest in kernel.ptx and kernel.ttir == ""
    assert kernel.HasField("module_image")
    assert kernel.module_image.object_file == image
    assert (kernel.module_image.kernel_name, kernel.module_image.shared_mem_bytes) == ("aotc_softmax_f32", 4096)
    assert not kernel.HasField("global_scratch_size")
    assert (call.kernel_call.grid_0, call.kernel_call.grid_1, call.kernel_call.grid_2) == (6, 2, 1)
    expected = [("array", None), ("i32", -7), ("i32", 2**31 - 1), ("u32", 2**32 - 1), ("i64", -(2**63)), ("u64", 2**64 - 1), ("f32", 0.5), ("f64", -1e300), ("bool_", True), ("i32", 0), ("array", None)]
    assert parameters(call) == expected
    for parameter in call.kernel_call.parameters:
        if parameter.WhichOneof("value") == "array":  # nothing zeroed before the launch, no alignment demanded
            assert (parameter.array.bytes_to_zero, parameter.array.ptr_divisibility) == (0, 0)


@pytest.fixture
def launcher_in_use(monkeypatch: pytest.MonkeyPatch) -> None:
    """The route as a machine with jax's CUDA plugin 0.11.1+ and an sm_86 GPU decides it
    (the test libraries hold SASS sm_80, which runs there)."""
    from aotc.kernels import _jax_builtin

    monkeypatch.setattr(_jax_builtin, "_decided", {"in_use": True, "capability": (8, 6)})


def _operations(operation: Any) -> Any:
    for region in operation.regions:
        for block in region:
            for inner in block.operations:
                yield inner
                yield from _operations(inner)


def lowered_calls(function: Any, *args: Any) -> tuple[str, list[Any]]:
    """``function`` lowered for CUDA: its text, and each built-in launcher call's
    opaque data, read out of the module's attributes (the bytes XLA is given) and decoded."""
    from jax.extend.mlir import ir

    lowered = jax.jit(function).trace(*args).lower(lowering_platforms=("cuda",))
    calls = []
    for operation in _operations(lowered.compiler_ir("stablehlo").operation):
        if operation.name == "stablehlo.custom_call" and ir.StringAttr(operation.attributes["call_target_name"]).value == "triton_kernel_call_ffi":
            config = ir.DictAttr(operation.attributes["mhlo.backend_config"])
            calls.append(decode(ir.StringAttr(config["opaque"]).value_bytes))
    return lowered.as_text(), calls


@pytest.mark.usefixtures("launcher_in_use")
def test_a_cuda_lowering_holds_the_launcher_with_the_librarys_fatbin(rowops: Any) -> None:  # noqa: F811
    x = jnp.asarray(np.random.default_rng(3).standard_normal((2, 3, 40)).astype(np.float32))
    text, calls = lowered_calls(rowops.softmax, x)
    assert text.count("stablehlo.custom_call @triton_kernel_call_ffi") == 1
    assert "xla_buffer_python_gpu_callback" not in text  # lowered for CUDA alone, only the CUDA branch is left
    assert "(tensor<2x3x40xf32>) -> tensor<2x3x40xf32>" in text
    [call] = calls
    index = rowops.family("softmax").library.index
    kernel = index.kernel("softmax_f32")
    launched = call.kernel_call.kernel
    assert launched.kernel_name == kernel.symbol
    assert launched.num_warps * 32 == kernel.launch.block[0] == 256  # the threads axis
    assert launched.shared_mem_bytes == kernel.launch.shared_bytes_dynamic
    assert launched.compute_capability == 86  # the device's, which the launcher keys its modules by
    fatbin = index.read_verified(kernel, "fatbin")
    assert launched.module_image.object_file == fatbin
    assert hashlib.sha256(launched.module_image.object_file).hexdigest() == kernel.fatbin.sha256
    assert launched.ptx == image_key(kernel.fatbin.sha256)
    assert (call.kernel_call.grid_0, call.kernel_call.grid_1, call.kernel_call.grid_2) == (6, 1, 1)  # batch * rows blocks
    assert parameters(call) == [("array", None), ("array", None), ("i32", 2), ("i32", 3), ("i32", 40)]


@pytest.mark.usefixtures("launcher_in_use")
def test_the_cpu_keeps_the_callback_and_the_results(rowops: Any) -> None:  # noqa: F811
    x = np.random.default_rng(4).standard_normal((3, 33)).astype(np.float32)
    y = jax.jit(rowops.softmax)(jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(y), reference.softmax(x), rtol=1e-5)
    gradient = jax.grad(lambda v: (rowops.softmax(v) * jnp.arange(33.0)).sum())(jnp.asarray(x))
    _, calls = lowered_calls(jax.grad(lambda v: (rowops.softmax(v) * jnp.arange(33.0)).sum()), jnp.asarray(x))
    assert [c.name for c in calls] == ["softmax_f32", "softmax_backward_f32"]  # forward, then the pairing's backward
    assert gradient.shape == x.shape and np.isfinite(np.asarray(gradient)).all()


@pytest.mark.usefixtures("launcher_in_use")
def test_an_inout_array_is_aliased_and_a_scalar_is_its_own_kind(axpy: Any) -> None:  # noqa: F811
    x, y = jnp.ones((4, 10), jnp.float32), jnp.full((4, 10), 2.0, jnp.float32)
    text, [call] = lowered_calls(lambda a, b: axpy.axpy(a, b, -0.25, threads=64), x, y)
    assert "output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [], operand_index = 1, operand_tuple_indices = []>]" in text
    assert call.kernel_call.kernel.num_warps == 2
    assert (call.kernel_call.grid_0, call.kernel_call.grid_1, call.kernel_call.grid_2) == (1, 1, 1)  # cdiv(40, 64)
    assert parameters(call) == [("array", None), ("array", None), ("i32", 4), ("i32", 10), ("f64", -0.25)]
    out = jax.jit(lambda a, b: axpy.axpy(a, b, -0.25, threads=64))(x, y)  # the CPU: the callback
    np.testing.assert_array_equal(np.asarray(out), np.full((4, 10), 1.75))


def test_a_device_the_library_has_no_sass_for_stays_on_the_callback(axpy: Any, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """sm_90 runs no sm_80 SASS: aotc's own image rules (a JIT) apply, on the callback."""
    from aotc.kernels import _jax_builtin

    monkeypatch.setattr(_jax_builtin, "_decided", {"in_use": True, "capability": (9, 0)})
    text, calls = lowered_calls(lambda a, b: axpy.axpy(a, b, 2.0, threads=128), jnp.ones((2, 8)), jnp.ones((2, 8)))
    assert calls == [] and "xla_buffer_python_gpu_callback" in text


@pytest.mark.usefixtures("launcher_in_use")
def test_declared_strides_are_the_dense_arrays_and_zero_where_broadcast(badd: Any) -> None:  # noqa: F811
    x, bias = jnp.ones((2, 3, 5), jnp.float32), jnp.arange(5.0, dtype=jnp.float32)
    _, [call] = lowered_calls(badd.badd, x, bias)
    assert parameters(call)[3:] == [("i32", 2), ("i32", 3), ("i32", 5), ("i64", 15), ("i64", 5), ("i64", 1), ("i64", 0)]
    assert (call.kernel_call.grid_0, call.kernel_call.kernel.num_warps) == (1, 4)  # cdiv(30, 128) blocks of 128


TILED = {
    "manifest.yaml": """\
library: tiled
templates: templates
archs: {sass: [80], ptx: [80]}
families:
  fill:
    template: fill.cu.j2
    axes: {dtype: [f32]}
    name: "fill_{dtype}"
    signature:
      x: {array: dtype, role: in, shape: [rows, cols]}
      y: {array: dtype, role: out, shape: [rows, cols]}
      rows: i32
      cols: i32
    launch:
      grid: ["cdiv(cols, 16)", "cdiv(rows, 16)"]
      block: [16, 16]
""",
    "templates/fill.cu.j2": """\
// {{ kernel_name }}: y = x, one thread of a 16x16 block an element.
extern "C" __global__ void {{ kernel_name }}({{ params }})
{
    int c = blockIdx.x * 16 + threadIdx.x, r = blockIdx.y * 16 + threadIdx.y;
    if (r < rows && c < cols) y[(long long)r * cols + c] = x[(long long)r * cols + c];
}
""",
}


@pytest.mark.usefixtures("launcher_in_use")
def test_a_two_dimensional_block_stays_on_the_callback(tmp_path: Path) -> None:
    import aotc
    import aotc.kernels
    from aotc.kernels import _jax_builtin

    ops = aotc.kernels.over(aotc.load(declared_library(tmp_path, write_project(tmp_path / "project", TILED)), backend="emulator"))
    family = ops.layout("fill")
    assert _jax_builtin.unlaunchable(family, family.kernels["fill_f32"]) == "its block (16, 16, 1) is not one-dimensional whole warps"
    text, calls = lowered_calls(family, jnp.ones((20, 30), jnp.float32))
    assert calls == [] and "xla_buffer_python_gpu_callback" in text
    np.testing.assert_array_equal(np.asarray(jax.jit(family)(jnp.full((20, 30), 3.0))), np.full((20, 30), 3.0))


@pytest.mark.parametrize(
    ("environ", "plugin", "in_use", "why"),
    [
        ({}, None, False, "no jax CUDA plugin is installed"),
        ({}, ("jax-cuda13-plugin", "0.10.2"), False, "jax-cuda13-plugin 0.10.2 has no module_image in its launcher's protobuf (it came in 0.11.1)"),
        ({}, ("jax-cuda13-plugin", "0.11.0"), False, "jax-cuda13-plugin 0.11.0 has no module_image"),
        ({}, ("jax-cuda12-plugin", "0.11.1"), True, "jax-cuda12-plugin 0.11.1 carries module_image (since 0.11.1)"),
        ({"AOTC_JAX_LAUNCHER": "auto"}, ("jax-cuda13-plugin", "0.12.0.1"), True, "jax-cuda13-plugin 0.12.0.1 carries module_image"),
        ({"AOTC_JAX_LAUNCHER": "Callback"}, ("jax-cuda13-plugin", "0.12.0.1"), False, "AOTC_JAX_LAUNCHER=callback"),
    ],
)
def test_the_route_is_read_from_the_plugins_version(monkeypatch: pytest.MonkeyPatch, environ: dict[str, str], plugin: Any, in_use: bool, why: str) -> None:
    monkeypatch.setattr(jax_route, "plugin_version", lambda: plugin)
    used, reason = jax_route.builtin_launcher(environ)
    assert used is in_use and reason.startswith(why)


def test_a_bad_launcher_setting_is_one_line_naming_it() -> None:
    with pytest.raises(ConfigurationError, match=r"^AOTC_JAX_LAUNCHER='triton' is not one of: auto, callback$"):
        jax_route.builtin_launcher({"AOTC_JAX_LAUNCHER": "triton"})
