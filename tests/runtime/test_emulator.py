"""The CPU emulator: CUDA sources compiled with g++ and OpenMP, run through ctypes."""

from __future__ import annotations

import ctypes
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from aotc.errors import BuildError
from aotc.runtime.emulator.compile import (
    COMPILE_FLAGS,
    INCLUDE_DIR,
    SHIM_HEADER,
    compile_library,
    compile_library_bytes,
    toolchain,
    translation_unit,
)
from aotc.runtime.emulator.launch import EmulatorLibrary, load_library, load_library_bytes

KERNELS = Path(__file__).parent / "emulator_kernels"
THREADINGS = ["fibers", "os-threads"]

if shutil.which("g++") is None:  # pragma: no cover - the test image has g++
    pytest.skip("the emulator needs g++ with OpenMP, which is not installed", allow_module_level=True)


@pytest.fixture(scope="module")
def built() -> dict[tuple[str, tuple[str, ...]], bytes]:
    """Compiled libraries by (file, symbols), so each source compiles once."""
    return {}


def load(built: dict, name: str, symbols: tuple[str, ...], threading: str = "fibers") -> EmulatorLibrary:
    key = (name, symbols)
    if key not in built:
        built[key] = compile_library_bytes(KERNELS / name, symbols)
    # Each load is its own copy of the library, so threading settings do not mix.
    return load_library_bytes(built[key], threading=threading)


def ptr(array: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(array.ctypes.data)


def aligned(values: np.ndarray, alignment: int = 64) -> np.ndarray:
    raw = np.empty(values.nbytes + alignment, dtype=np.uint8)
    start = -raw.ctypes.data % alignment
    out = raw[start : start + values.nbytes].view(values.dtype).reshape(values.shape)
    out[...] = values
    return out


# ---- (a) and (b): a tiled GEMM, and the same GEMM missing a barrier ---------------------


def run_matmul(library: EmulatorLibrary, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    (m, k), n = a.shape, b.shape[1]
    c = np.full((m, n), np.nan, dtype=np.float32)
    args = [ptr(a), ptr(b), ptr(c), ctypes.c_int(m), ctypes.c_int(n), ctypes.c_int(k)]
    args += [ctypes.c_longlong(a.strides[0] // 4), ctypes.c_longlong(b.strides[0] // 4), ctypes.c_longlong(n)]
    library.launch("tiled_matmul", ((n + 15) // 16, (m + 15) // 16), (16, 16), 0, args)
    return c


@pytest.mark.parametrize("threading", THREADINGS)
@pytest.mark.parametrize("shape", [(1, 1, 1), (7, 13, 5), (65, 33, 129), (16, 16, 16)])
def test_tiled_matmul_matches_numpy(built: dict, threading: str, shape: tuple[int, int, int]) -> None:
    m, n, k = shape
    library = load(built, "tiled_matmul.cu", ("tiled_matmul",), threading)
    rng = np.random.default_rng(sum(shape))
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    np.testing.assert_allclose(run_matmul(library, a, b), a @ b, rtol=1e-5, atol=1e-4)


def test_tiled_matmul_with_strided_inputs(built: dict) -> None:
    library = load(built, "tiled_matmul.cu", ("tiled_matmul",))
    rng = np.random.default_rng(7)
    a = rng.standard_normal((40, 50)).astype(np.float32)[:, 3:36]  # lda 50, K 33
    b = rng.standard_normal((33, 70)).astype(np.float32)[:, :19]  # ldb 70
    np.testing.assert_allclose(run_matmul(library, a, b), a @ b, rtol=1e-5, atol=1e-4)


def test_tiled_matmul_128x130(built: dict) -> None:
    library = load(built, "tiled_matmul.cu", ("tiled_matmul",))
    rng = np.random.default_rng(3)
    a = rng.standard_normal((128, 64)).astype(np.float32)
    b = rng.standard_normal((64, 130)).astype(np.float32)
    np.testing.assert_allclose(run_matmul(library, a, b), a @ b, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("threading", THREADINGS)
def test_removing_a_barrier_breaks_the_gemm(threading: str) -> None:
    source = (KERNELS / "tiled_matmul.cu").read_text()
    barrier = "__syncthreads();  // barrier: tile loaded"
    assert source.count(barrier) == 1
    broken = source.replace(barrier, "/* barrier removed */")
    library = load_library_bytes(compile_library_bytes(broken.encode(), ["tiled_matmul"]), threading=threading)
    rng = np.random.default_rng(11)
    a = rng.standard_normal((40, 96)).astype(np.float32)  # six K tiles
    b = rng.standard_normal((96, 36)).astype(np.float32)
    assert not np.allclose(run_matmul(library, a, b), a @ b, rtol=1e-3, atol=1e-3)


# ---- (c) dynamic shared memory ---------------------------------------------------------------


def test_extern_shared_is_sized_at_launch(built: dict) -> None:
    library = load(built, "dynamic_shared.cu", ("reverse_chunks", "carve_shared", "read_unwritten"))
    n, block = 1000, 128
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(n, dtype=np.float32)
    grid = (n + block - 1) // block
    library.launch("reverse_chunks", grid, block, block * 4, [ptr(x), ptr(out), ctypes.c_int(n)])
    j = np.arange(n)
    source = j // block * block + block - 1 - j % block  # where out[j] comes from
    expected = np.where(source < n, x[np.minimum(source, n - 1)], -1.0)
    np.testing.assert_array_equal(out, expected)


def test_extern_shared_carved_into_two_arrays(built: dict) -> None:
    library = load(built, "dynamic_shared.cu", ("reverse_chunks", "carve_shared", "read_unwritten"))
    blocks, threads, count = 3, 100, 7
    sums = np.zeros((blocks, count), dtype=np.float32)
    counts = np.zeros((blocks, count), dtype=np.int32)
    library.launch("carve_shared", blocks, threads, count * 8, [ptr(sums), ptr(counts), ctypes.c_int(count)])
    per_slot = np.bincount(np.arange(threads) % count, minlength=count)
    np.testing.assert_array_equal(counts, np.tile(per_slot, (blocks, 1)))
    np.testing.assert_array_equal(sums, np.tile(per_slot * 0.5, (blocks, 1)).astype(np.float32))


def test_dynamic_shared_memory_starts_poisoned(built: dict) -> None:
    library = load(built, "dynamic_shared.cu", ("reverse_chunks", "carve_shared", "read_unwritten"))
    out = np.zeros(32, dtype=np.uint32)
    library.launch("read_unwritten", 1, 32, 32 * 4, [ptr(out)])
    assert (out == 0xFFFFFFFF).all()


def test_static_shared_memory_starts_poisoned_at_every_launch(built: dict) -> None:
    # Static __shared__ arrays, the kernel's and an inline helper's, start as
    # 0xFF bytes, launch after launch, though the last launch wrote them.
    library = load(built, "checked.cu", ("read_static_unwritten",))
    for _ in range(2):
        out = np.zeros(64, dtype=np.uint32)
        library.launch("read_static_unwritten", 1, 32, 0, [ptr(out)])
        assert (out == 0xFFFFFFFF).all(), out


def _mappings() -> int:
    with open("/proc/self/maps") as maps:
        return sum(1 for _ in maps)


@pytest.mark.skipif(not Path("/proc/self/maps").is_file(), reason="counts Linux's /proc/self/maps")
def test_a_librarys_fiber_stacks_are_a_few_mappings(built: dict) -> None:
    # A process may hold vm.max_map_count (65530) mappings. A guard page per
    # fiber took 512 for a 256-thread block, per library: the full suite, which
    # loads a few hundred kernel libraries, ran out (dlopen and malloc failed).
    libraries = [load(built, "fiber_stacks.cu", ("touch", "overflow")) for _ in range(4)]
    before = _mappings()
    for library in libraries:
        out = np.zeros(256, dtype=np.int32)
        library.launch("touch", 1, 256, 0, [ptr(out)])
        assert out.tolist() == list(range(256))
    assert _mappings() - before <= 4 * 4, "each library's 256 fiber stacks should take a few mappings"


def test_a_fiber_stack_overflow_is_reported(built: dict) -> None:
    library = load(built, "fiber_stacks.cu", ("touch", "overflow"))
    out = np.zeros(64, dtype=np.int32)
    with pytest.raises(RuntimeError, match="overflowed its 256 KiB fiber stack"):
        library.launch("overflow", 1, 64, 0, [ptr(out)])


def test_too_much_dynamic_shared_memory_is_refused(built: dict) -> None:
    library = load(built, "dynamic_shared.cu", ("reverse_chunks", "carve_shared", "read_unwritten"))
    out = np.zeros(32, dtype=np.uint32)
    with pytest.raises(ValueError, match="dynamic shared memory exceed"):
        library.launch("read_unwritten", 1, 32, library.max_dynamic_shared_bytes + 1, [ptr(out)])


# ---- (d) atomics ------------------------------------------------------------------------------


@pytest.mark.parametrize("threading", THREADINGS)
def test_atomics_under_contention_are_exact(built: dict, threading: str) -> None:
    library = load(built, "atomics.cu", ("contend", "block_tally"), threading)
    blocks, threads, rounds = 13, 256, 3 if threading == "fibers" else 2
    total = blocks * threads * rounds
    last = blocks * threads - 1
    f_sum, d_sum = np.zeros(1, np.float32), np.zeros(1, np.float64)
    i_sum, u_sum = np.zeros(1, np.int32), np.zeros(1, np.uint32)
    ull_sum, ll_sum = np.zeros(1, np.uint64), np.full(1, 5, np.int64)
    i_max, i_min = np.full(1, -1, np.int32), np.zeros(1, np.int32)
    ll_max, ll_min = np.zeros(1, np.int64), np.zeros(1, np.int64)
    u_max, cas_counter, f_max = np.zeros(1, np.uint32), np.zeros(1, np.int32), np.full(1, -1.0, np.float32)
    arrays = [f_sum, d_sum, i_sum, u_sum, ull_sum, ll_sum, i_max, i_min, ll_max, ll_min, u_max, cas_counter, f_max]
    library.launch("contend", blocks, threads, 0, [*map(ptr, arrays), ctypes.c_int(rounds)])
    assert f_sum[0] == total  # exact: every partial sum is an integer below 2**24
    assert d_sum[0] == total * 0.25
    assert i_sum[0] == total
    assert u_sum[0] == 2 * total
    assert int(ull_sum[0]) == (total * 1000000007) % 2**64
    assert ll_sum[0] == 5 - 3 * total
    assert i_max[0] == last * 7 + rounds - 1
    assert i_min[0] == -last - (rounds - 1)
    assert ll_max[0] == last << 33
    assert ll_min[0] == -(last << 33)
    assert u_max[0] == last * 3
    assert cas_counter[0] == total
    assert f_max[0] == last * 0.5


@pytest.mark.parametrize("threading", THREADINGS)
def test_shared_atomics_and_syncthreads_count(built: dict, threading: str) -> None:
    library = load(built, "atomics.cu", ("contend", "block_tally"), threading)
    blocks, threads = 5, 192
    flags = (np.random.default_rng(5).random(blocks * threads) < 0.3).astype(np.int32)
    hits, counts = np.full(blocks, -1, np.int32), np.full(blocks, -1, np.int32)
    library.launch("block_tally", blocks, threads, 0, [ptr(flags), ptr(hits), ptr(counts)])
    expected = flags.reshape(blocks, threads).sum(axis=1)
    np.testing.assert_array_equal(hits, expected)
    np.testing.assert_array_equal(counts, expected)


# ---- (e) indexing ------------------------------------------------------------------------------

COORDINATES = np.dtype([(f, np.uint32, 3) for f in ("thread", "block", "block_dim", "grid_dim")])


def test_three_dimensional_blocks_and_grids(built: dict) -> None:
    library = load(built, "indexing.cu", ("record_coordinates", "early_exit_sum"))
    grid, block = (3, 2, 2), (4, 4, 2)
    count = int(np.prod(grid) * np.prod(block))
    out = np.zeros(count + 5, dtype=COORDINATES)
    library.launch("record_coordinates", grid, block, 0, [ptr(out), ctypes.c_longlong(5)])
    out = out[5:]
    ids = np.arange(count)
    in_block, block_id = ids % np.prod(block), ids // np.prod(block)
    expected_thread = np.stack([in_block % 4, in_block // 4 % 4, in_block // 16], axis=1)
    expected_block = np.stack([block_id % 3, block_id // 3 % 2, block_id // 6], axis=1)
    np.testing.assert_array_equal(out["thread"], expected_thread)
    np.testing.assert_array_equal(out["block"], expected_block)
    assert (out["block_dim"] == block).all()
    assert (out["grid_dim"] == grid).all()


def test_one_dimensional_launch_fills_y_and_z_with_one(built: dict) -> None:
    library = load(built, "indexing.cu", ("record_coordinates", "early_exit_sum"))
    out = np.zeros(2 * 64, dtype=COORDINATES)
    library.launch("record_coordinates", 2, 64, 0, [ptr(out), ctypes.c_longlong(0)])
    np.testing.assert_array_equal(out["thread"][:, 0], np.tile(np.arange(64), 2))
    np.testing.assert_array_equal(out["block"][:, 0], np.repeat(np.arange(2), 64))
    assert (out["thread"][:, 1:] == 0).all()
    assert (out["block_dim"] == (64, 1, 1)).all()
    assert (out["grid_dim"] == (2, 1, 1)).all()


@pytest.mark.parametrize("threading", THREADINGS)
def test_threads_that_return_early_leave_the_barrier(built: dict, threading: str) -> None:
    library = load(built, "indexing.cu", ("record_coordinates", "early_exit_sum"), threading)
    n, block = 300, 128
    values = np.arange(n, dtype=np.int32)
    out = np.zeros(3, dtype=np.int32)
    library.launch("early_exit_sum", 3, block, 0, [ptr(values), ptr(out), ctypes.c_int(n)])
    np.testing.assert_array_equal(out, [values[i : i + block].sum() for i in range(0, n, block)])


# ---- (f) vector loads and intrinsics ----------------------------------------------------------


def test_vector_loads(built: dict) -> None:
    library = load(built, "vector_loads.cu", ("vector_sums", "intrinsics"))
    n4 = 37
    rng = np.random.default_rng(2)
    f = aligned(rng.standard_normal(4 * n4).astype(np.float32))
    i = aligned(rng.integers(-1000, 1000, 4 * n4).astype(np.int32))
    d = aligned(rng.standard_normal(2 * n4))
    ll = aligned(rng.integers(-(2**62), 2**62, 2 * n4).astype(np.int64))
    f_out, i_out = np.zeros(n4, np.float32), np.zeros(n4, np.int32)
    d_out, ll_out = np.zeros(n4), np.zeros(n4, np.int64)
    f4_out = aligned(np.zeros((n4, 4), np.float32))
    arrays = [f, i, d, ll, f_out, i_out, d_out, ll_out, f4_out]
    library.launch("vector_sums", 2, 32, 0, [*map(ptr, arrays), ctypes.c_int(n4)])
    fq = f.reshape(n4, 4)
    np.testing.assert_array_equal(f_out, ((fq[:, 0] + fq[:, 1]) + fq[:, 2]) + fq[:, 3])
    np.testing.assert_array_equal(i_out, i.reshape(n4, 4).sum(axis=1))
    np.testing.assert_array_equal(d_out, d[0::2] - d[1::2])
    np.testing.assert_array_equal(ll_out, ll[0::2] - ll[1::2])
    np.testing.assert_array_equal(f4_out, fq[:, ::-1])


def test_math_intrinsics_follow_cuda(built: dict) -> None:
    library = load(built, "vector_loads.cu", ("vector_sums", "intrinsics"))
    x = np.array([1.0, np.nan, -np.inf, 2.0, np.inf, -0.5], np.float32)
    y = np.array([np.nan, 3.0, 1.0, 2.5, 0.0, -0.25], np.float32)
    out, flags = np.zeros((x.size, 4), np.float32), np.zeros((x.size, 2), np.int32)
    library.launch("intrinsics", 1, 8, 0, [ptr(x), ptr(y), ptr(out), ptr(flags), ctypes.c_int(x.size)])
    np.testing.assert_array_equal(out[:, 0], np.fmax(x, y))
    np.testing.assert_array_equal(out[:, 1], np.fmin(x, y))
    np.testing.assert_array_equal(out[:, 2], np.fmax(x, y))
    np.testing.assert_array_equal(out[:, 3], x)
    np.testing.assert_array_equal(flags[:, 0], np.where(np.isnan(x), 1, np.where(np.isinf(x), 2, 0)))
    np.testing.assert_array_equal(flags[:, 1], np.where(x == np.inf, 1, np.where(x == -np.inf, -1, 0)))


def test_helpers_shared_memory_and_counting_barriers(built: dict) -> None:
    library = load(built, "constructs.cu", ("constructs",))
    values = np.arange(1, 65, dtype=np.int32)
    out = np.zeros(8, np.int64)
    library.launch("constructs", 1, 64, 0, [ptr(values), ptr(out)])
    assert out.tolist() == [2080, 2080, 1, 1, 3, 2, 3, 8 + 31 + 4]
    values[10] = -1
    out = np.zeros((2, 8), np.int64)
    library.launch("constructs", 2, 64, 0, [ptr(values), ptr(out)])
    assert out[:, :5].tolist() == [[2068, 2068, 0, 1, 3], [2068, 2068, 0, 1, 5]]


# ---- launch checks -----------------------------------------------------------------------------


def test_launch_bounds_and_block_limits_are_enforced(built: dict) -> None:
    library = load(built, "indexing.cu", ("record_coordinates", "early_exit_sum"))
    out = np.zeros(4096, dtype=COORDINATES)
    args = [ptr(out), ctypes.c_longlong(0)]
    assert library.kernel("record_coordinates").max_threads == 64
    with pytest.raises(ValueError, match=re.escape("more than __launch_bounds__(64) of record_coordinates")):
        library.launch("record_coordinates", 1, (8, 8, 2), 0, args)
    values, sums = np.zeros(2048, np.int32), np.zeros(2, np.int32)
    with pytest.raises(ValueError, match="CUDA allows at most 1024"):
        library.launch("early_exit_sum", 1, (32, 33), 0, [ptr(values), ptr(sums), ctypes.c_int(1)])
    with pytest.raises(ValueError, match="grid"):
        library.launch("early_exit_sum", (1, 0), 32, 0, [ptr(values), ptr(sums), ctypes.c_int(1)])


def test_arguments_are_checked_against_the_kernel(built: dict) -> None:
    library = load(built, "indexing.cu", ("record_coordinates", "early_exit_sum"))
    out = np.zeros(64, dtype=COORDINATES)
    with pytest.raises(TypeError, match="takes 2 arguments, got 1"):
        library.launch("record_coordinates", 1, 1, 0, [ptr(out)])
    with pytest.raises(TypeError, match=r"argument 1 .* 8 bytes, got c_int \(4 bytes\)"):
        library.launch("record_coordinates", 1, 1, 0, [ptr(out), ctypes.c_int(0)])
    with pytest.raises(TypeError, match=r"argument 1 .* an integer"):
        library.launch("record_coordinates", 1, 1, 0, [ptr(out), ctypes.c_double(0)])
    with pytest.raises(TypeError, match=r"argument 0 .* a pointer"):
        library.launch("record_coordinates", 1, 1, 0, [ctypes.c_ulonglong(out.ctypes.data), ctypes.c_longlong(0)])
    with pytest.raises(KeyError, match="no kernel 'missing'"):
        library.kernel("missing")


def test_params_built_by_the_caller(built: dict) -> None:
    library = load(built, "indexing.cu", ("record_coordinates", "early_exit_sum"))
    values, sums = np.arange(10, dtype=np.int32), np.zeros(1, np.int32)
    args = [ptr(values), ptr(sums), ctypes.c_int(10)]
    params = (ctypes.c_void_p * 3)(*map(ctypes.addressof, args))
    library.kernel("early_exit_sum").launch_params(1, 32, 0, params)
    assert sums[0] == 45


# ---- (g) and (h): compile-time failures ---------------------------------------------------------


def kernel_source(body: str) -> str:
    return f'extern "C" __global__ void k(float* out) {{\n  float v = out[threadIdx.x];\n{body}\n}}\n'


@pytest.mark.parametrize(
    ("construct", "name", "reason"),
    [
        ("  v = __shfl(v, 0);", "__shfl", "removed for sm_70 and later in CUDA 9: use its _sync form"),
        ("  if (__ballot(v > 0)) v = 0;", "__ballot", "removed for sm_70 and later in CUDA 9"),
        ('  asm volatile("membar.gl;");', "asm", "inline PTX assembly"),
        ("  long long t = clock64();", "clock64", "GPU clocks"),
        ("  cooperative_groups::this_grid().sync();", "this_grid", "grid-wide and cluster cooperative groups"),
        ("  v = tex1Dfetch<float>(0, 0);", "tex1Dfetch", "textures"),
        ("  nvcuda::wmma::fill_fragment(f, 0.0f);", "nvcuda", "tensor-core (wmma/mma)"),
        ("  __pipeline_arrive_on(&bar);", "__pipeline_arrive_on", "asynchronous barriers are not emulated"),
        ("  __nv_fp8_e4m3 q(v);", "__nv_fp8_e4m3", "8-, 6- and 4-bit float types"),
        ("  auto c = cooperative_groups::this_cluster();", "this_cluster", "cluster cooperative groups"),
        ("  auto p = cg::binary_partition(tile, v > 0);", "binary_partition", "binary_partition, labeled_partition"),
        ("  auto p = cg::labeled_partition(tile, 3);", "labeled_partition", "binary_partition, labeled_partition"),
        ("  cg::invoke_one(block, [&] { v = 0; });", "invoke_one", "invoke_one are not emulated"),
        ("  v = cg::invoke_one_broadcast(tile, [] { return 1.0f; });", "invoke_one_broadcast", "invoke_one are not"),
    ],
)
def test_unsupported_constructs_fail_at_compile_time(tmp_path: Path, construct: str, name: str, reason: str) -> None:
    source = tmp_path / "kernel.cu"
    source.write_text(kernel_source(construct + "\n  out[threadIdx.x] = v;"))
    with pytest.raises(BuildError) as raised:
        compile_library(source, ["k"], tmp_path / "k.so")
    message = str(raised.value)
    assert message.startswith(f"{source}:3: unsupported on the emulator: {name} (")
    assert reason in message
    assert "\n" not in message


def test_unsupported_names_in_comments_and_strings_are_fine(tmp_path: Path) -> None:
    body = '  // no __shfl_sync here\n  /* nor asm( */\n  if (v < -1e30f) printf("__ballot_sync %f\\n", v);\n'
    library = load_library(compile_library(kernel_source(body).encode(), ["k"], tmp_path / "k.so"))
    out = np.ones(4, np.float32)
    library.launch("k", 1, 4, 0, [ptr(out)])


def test_only_code_the_preprocessor_keeps_is_checked(tmp_path: Path) -> None:
    body = (
        "#if defined(__CUDA_ARCH__)\n"
        '  asm("max.NaN.f32 %0, %1, %2;" : "=f"(v) : "f"(v), "f"(v));\n'
        "#endif\n"
        "#define BROADCAST(x) __shfl(x, 0)\n"
        "  out[threadIdx.x] = v;"
    )
    library = load_library(compile_library(kernel_source(body).encode(), ["k"], tmp_path / "k.so"))
    out = np.ones(4, np.float32)
    library.launch("k", 1, 4, 0, [ptr(out)])
    used = tmp_path / "used.cu"
    used.write_text(kernel_source(body.replace("out[threadIdx.x] = v;", "out[0] = BROADCAST(v);")))
    with pytest.raises(BuildError, match=rf"^{re.escape(str(used))}:7: unsupported on the emulator: __shfl \("):
        compile_library(used, ["k"], tmp_path / "k.so")


def test_cuda_device_headers_are_named(tmp_path: Path) -> None:
    source = tmp_path / "tensor_cores.cu"
    source.write_text("#include <mma.h>\n" + kernel_source(""))
    message = f"{source}:1: unsupported on the emulator: #include <mma.h> (CUDA device headers"
    with pytest.raises(BuildError, match=f"^{re.escape(message)}"):
        compile_library(source, ["k"], tmp_path / "k.so")


def test_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    source = tmp_path / "broken.cu"
    source.write_text(kernel_source("  float w = ;"))
    with pytest.raises(BuildError, match=rf"^{re.escape(str(source))}:3:\d+: error: .*\[emulator build: g\+\+"):
        compile_library(source, ["k"], tmp_path / "k.so")


def test_undefined_function_is_a_build_error(tmp_path: Path) -> None:
    source = tmp_path / "undefined.cu"
    source.write_text('__device__ float helper(float);\n' + kernel_source("  out[0] = helper(v);"))
    with pytest.raises(BuildError, match="undefined reference to `helper"):
        compile_library(source, ["k"], tmp_path / "k.so")


def test_missing_kernel_symbol_is_a_build_error(tmp_path: Path) -> None:
    with pytest.raises(BuildError, match="kernel 'absent' is not defined"):
        compile_library_bytes(kernel_source("").encode(), ["absent"])


def test_toolchain_identity_names_compiler_flags_and_shim() -> None:
    tools = toolchain()
    assert tools.flags[: len(COMPILE_FLAGS)] == COMPILE_FLAGS
    assert "-fopenmp" in tools.flags
    assert re.search(r"\d+\.\d+", tools.version)
    for part in (tools.compiler, tools.version, tools.target, tools.shim_sha256):
        assert part in tools.identity


def test_every_header_a_kernel_may_include_is_in_the_toolchain_identity() -> None:
    """The emulator's cuda_fp16.h, cooperative_groups.h, ... change what a library
    holds, so their bytes (and names) go into the key, as the shim's do."""
    from aotc.runtime.emulator import compile as emulator_compile

    headers = {path for path in INCLUDE_DIR.rglob("*") if path.is_file()}
    assert {"cuda_fp16.h", "cuda_bf16.h", "cooperative_groups.h", "pipeline"} <= {path.name for path in headers}
    assert headers | {SHIM_HEADER} <= set(emulator_compile._SHIM_FILES)  # noqa: SLF001


def test_translation_unit_keeps_line_numbers() -> None:
    unit = translation_unit(KERNELS / "tiled_matmul.cu", ["tiled_matmul"])
    # The kernel's code comes first, numbered from its line 1 (after the checked build's pragmas).
    head = f'#line 1 "{KERNELS / "tiled_matmul.cu"}"\n'
    assert unit.index(head) == unit.index("#line")
    assert "aotc_emu_launch__tiled_matmul" in unit
    original = (KERNELS / "tiled_matmul.cu").read_text().splitlines()
    translated = unit[unit.index(head) + len(head) :].splitlines()
    line = next(i for i, text in enumerate(original) if "barrier: tile loaded" in text)
    assert "__syncthreads();" in translated[line]
