from __future__ import annotations

import functools
import struct
import tempfile
from pathlib import Path
from typing import Any

import pytest

from aotc.build.index_writer import dumps, kernel_entry, seal
from aotc.build.manifest import Manifest, load_manifest
from aotc.errors import AotcError, IndexFormatError
from aotc.index import SCHEMA, LibraryIndex
from aotc.runtime.launcher import KernelSignature, Launcher
from tropical_manifest import tropical_manifest

# The tropical family at a 32x64 block tile of 4x8 per thread, without its
# split offsets: these tests count and pack the launcher's parameters.
MANIFEST = tropical_manifest(
    "lib",
    {"maxplus": "{add: max, mul: add, zero: -inf, one: 0}"},
    ["{semiring: maxplus, dtype: f32, pass: [forward, argmax, backward_a, backward_b], variant: [single, batched]}"],
    tile="{block_m: 32, block_n: 64, block_k: 8, thread_m: 4, thread_n: 8}",
    head="templates: aotc:tropical",
    splits=False,
)


@functools.cache
def _manifest() -> Manifest:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "manifest.yaml"
        path.write_text(MANIFEST)
        return load_manifest(path)


def index_entry(pass_name: str = "forward", variant: str = "single") -> dict[str, Any]:
    """An index entry as the build writes it, from the same writer."""
    manifest = _manifest()
    kernel = next(k for k in manifest.kernels if dict(k.axes)["pass"] == pass_name and dict(k.axes)["variant"] == variant)
    return kernel_entry(kernel, manifest, b"", b"", {})


def signature(entry: dict[str, Any], name: str = "gemm") -> KernelSignature:
    """The signature the runtime builds: through a sealed, validated index."""
    semirings = {"maxplus": {"add": "max", "mul": "add", "zero": "-inf", "one": "0", "counting": False}}
    document = {"schema": SCHEMA, "library": "lib", "nvcc_version": "13.0.88", "semirings": semirings, "kernels": {name: entry}}
    return KernelSignature.from_kernel(LibraryIndex(dumps(seal(document)), "lib/index.json").kernel(name))


class RecordingBackend:
    """Records every launch instead of running it."""

    def __init__(self) -> None:
        self.launches: list[tuple[Any, ...]] = []

    def launch(self, function: Any, shape: Any, stream: Any, params: bytes) -> None:
        grid, block, shared = shape
        self.launches.append((function, grid, block, shared, stream, params))

    def grids(self) -> list[Any]:
        return [launch[1] for launch in self.launches]


def make_launcher(entry: dict[str, Any] | None = None, name: str = "gemm") -> tuple[Launcher, RecordingBackend]:
    backend = RecordingBackend()
    return Launcher(signature(entry or index_entry(), name), backend, "module", "function", choice=None, image="sm_80 SASS"), backend


def test_signature_from_index() -> None:
    sig = signature(index_entry())
    assert sig.symbol == "gemm_maxplus_f32_forward"
    assert sig.params == ("A", "B", "C", "M", "N", "K", "lda", "ldb", "ldc")
    assert sig.kinds == ("ptr",) * 3 + ("i32",) * 3 + ("i64",) * 3
    assert sig.format == "@QQQiiiqqq"
    assert sig.block == (8, 8, 1)
    assert sig.grid == (("N", 64), ("M", 32), ("1", 1))
    assert sig.shared_bytes_dynamic == 0


def test_one_call_is_one_launch_with_one_packed_block() -> None:
    launcher, backend = make_launcher()
    args = (0x1000, 0x2000, 0x3000, 100, 130, 7, 7, 130, 130)
    launcher(*args, stream=5)
    assert backend.launches == [("function", (3, 4, 1), (8, 8, 1), 0, 5, struct.pack("@QQQiiiqqq", *args))]


def test_grid_is_ceil_of_extent_over_tile_per_axis() -> None:
    launcher, backend = make_launcher()
    launcher(0, 0, 0, 32, 64, 1, 0, 0, 0)
    launcher(0, 0, 0, 33, 65, 1, 0, 0, 0)
    launcher(0, 0, 0, 1000, 1, 1, 0, 0, 0)
    assert backend.grids() == [(1, 1, 1), (2, 2, 1), (1, 32, 1)]


def test_batched_grid_counts_the_batch() -> None:
    launcher, backend = make_launcher(index_entry("forward", "batched"))
    args = (1, 2, 3, 10, 10, 10, 10, 10, 10, 6, 100, 0, 100)
    launcher(*args)
    assert backend.grids() == [(1, 1, 6)]


def test_shared_bytes_come_from_the_dynamic_size() -> None:
    entry = index_entry()
    entry["launch"]["shared_bytes_dynamic"] = 4096
    launcher, backend = make_launcher(entry)
    launcher(1, 2, 3, 1, 1, 1, 1, 1, 1)
    assert backend.launches[0][3] == 4096


@pytest.mark.parametrize("sizes", [(0, 5, 5), (5, 0, 5)])
def test_size_zero_launches_nothing(sizes: tuple[int, int, int]) -> None:
    launcher, backend = make_launcher()
    launcher(1, 2, 3, *sizes, 1, 1, 1)
    assert backend.launches == []


def test_batch_zero_launches_nothing() -> None:
    launcher, backend = make_launcher(index_entry("forward", "batched"))
    launcher(1, 2, 3, 4, 4, 4, 4, 4, 4, 0, 16, 16, 16)
    assert backend.launches == []


def test_negative_size_is_an_error_not_an_empty_launch() -> None:
    launcher, backend = make_launcher()
    with pytest.raises(ValueError, match=r"^gemm: a size is negative \(N=5, M=-1\)$"):
        launcher(1, 2, 3, -1, 5, 5, 1, 1, 1)
    assert backend.launches == []


def test_wrong_argument_count_names_the_parameters() -> None:
    launcher, backend = make_launcher()
    with pytest.raises(TypeError, match=r"^gemm takes 9 arguments \(A, B, C, M, N, K, lda, ldb, ldc\), got 2$"):
        launcher(1, 2)
    assert backend.launches == []


def test_an_argument_of_the_wrong_type_is_named() -> None:
    launcher, _ = make_launcher()
    with pytest.raises(TypeError, match=r"^gemm: argument B must be a device pointer \(int\), got 'x'$"):
        launcher(1, "x", 3, 1, 1, 1, 1, 1, 1)  # type: ignore[arg-type]


def test_an_argument_out_of_range_is_a_value_error() -> None:
    launcher, _ = make_launcher()
    with pytest.raises(ValueError, match=r"^gemm: argument M must be an i32 int, got 4294967296$"):
        launcher(1, 2, 3, 2**32, 1, 1, 1, 1, 1)


def test_name_params_and_repr() -> None:
    launcher, _ = make_launcher()
    assert launcher.name == "gemm"
    assert launcher.params == launcher.signature.params
    assert repr(launcher) == "<Launcher gemm(A, B, C, M, N, K, lda, ldb, ldc): sm_80 SASS>"


def test_a_fixed_extent_gives_a_fixed_grid() -> None:
    entry = index_entry()
    entry["launch"]["grid"][0] = {"extent": "100", "tile": 64}
    launcher, backend = make_launcher(entry)
    launcher(0, 0, 0, 33, 0, 1, 0, 0, 0)  # N = 0 would launch nothing, were N the extent
    assert backend.grids() == [(2, 2, 1)]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda e: e.pop("launch"), r"kernels\.gemm\.launch: missing$"),
        (lambda e: e["params"][3].update(pack="q"), r"kernels\.gemm\.params\[3\]\.pack: 'q' is not the pack code of kind 'i32' \('i'\)$"),
        (lambda e: e["launch"]["grid"][1].update(extent="A"), r"kernels\.gemm\.launch\.grid\[1\]\.extent: 'A' is neither a size parameter, a number, nor a product of them$"),
        (lambda e: e["launch"].update(block=[8, 8]), r"kernels\.gemm\.launch\.block: needs 3 axes$"),
    ],
)
def test_a_malformed_entry_never_becomes_a_signature(change: Any, message: str) -> None:
    entry = index_entry()
    change(entry)
    with pytest.raises(IndexFormatError, match=r"^lib/index\.json: " + message) as info:
        signature(entry)
    assert isinstance(info.value, AotcError)


def test_grid_is_what_a_call_would_launch() -> None:
    launcher, backend = make_launcher()
    launcher(0, 0, 0, 33, 65, 1, 0, 0, 0)
    assert launcher.grid(0, 0, 0, 33, 65, 1, 0, 0, 0) == backend.grids()[0] == (2, 2, 1)


def test_a_bound_launch_sends_what_the_full_call_sends() -> None:
    launcher, backend = make_launcher()
    args = (0x1000, 0x2000, 0x3000, 100, 130, 7, 7, 130, 130)
    bound = launcher.bind(args, 3)
    assert bound is not None
    launcher(0x5000, 0x6000, 0x7000, *args[3:], stream=0)
    bound(0, 0x5000, 0x6000, 0x7000)
    assert backend.launches[0] == backend.launches[1]
    assert backend.launches[1][-1] == struct.pack("@QQQiiiqqq", 0x5000, 0x6000, 0x7000, *args[3:])


def test_an_empty_grid_binds_nothing_and_bad_sizes_raise_as_a_call_does() -> None:
    launcher, backend = make_launcher()
    assert launcher.bind((1, 2, 3, 0, 5, 5, 1, 1, 1), 3) is None
    with pytest.raises(ValueError, match=r"^gemm: argument M must be an i32 int, got 4294967296$"):
        launcher.bind((1, 2, 3, 2**32, 1, 1, 1, 1, 1), 3)
    assert backend.launches == []
