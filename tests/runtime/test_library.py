"""aotc.load() and Library: lazy per-kernel loading, the per-call path, thread safety."""

from __future__ import annotations

import builtins
import hashlib
import json
import re
import shutil
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aotc
from aotc import tropical
from aotc.errors import AotcError, DamagedLibraryError, IndexFormatError, NoKernelImageError
from aotc.runtime.library import Library, load
from aotc.runtime.select import ImageKind
from conftest import aotc_env
from runtime_support import RecordingBackend, make_library, rewrite_index

FORWARD = "gemm_maxplus_f32_forward"
BATCHED = "gemm_maxplus_f32_forward_batched"
MINPLUS = "gemm_minplus_f32_forward"


@pytest.fixture(scope="module")
def shared_lib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A library the tests only read."""
    return make_library(tmp_path_factory.mktemp("rt"))


@pytest.fixture
def lib_dir(tmp_path: Path, shared_lib: Path) -> Path:
    """A copy the test may change."""
    return Path(shutil.copytree(shared_lib, tmp_path / "lib"))


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "cache"
    monkeypatch.setenv("AOTC_CACHE_DIR", str(path))
    return path


def forward_args(m: int = 100, n: int = 300, k: int = 7) -> tuple[int, ...]:
    return (0x1000, 0x2000, 0x3000, m, n, k, k, n, n)


# -- loading reads the index only; a kernel's first use reads its own files only --

_OPENS_SCRIPT = """
import json, sys
opened = []
sys.addaudithook(lambda event, args: opened.append(str(args[0])) if event == "open" and isinstance(args[0], str) else None)
lib_dir = sys.argv[1]
from aotc.runtime.backends.noop import NoopBackend
import aotc
from aotc import tropical
backend = NoopBackend()
def under_lib():
    found = [p for p in opened if p.startswith(lib_dir)]
    opened.clear()
    return [p[len(lib_dir) + 1:] for p in found]
opened.clear()
lib = aotc.load(lib_dir, backend=backend)
steps = {"load": under_lib()}
lib.kernel("gemm_maxplus_f32_forward")
steps["first use"] = under_lib()
lib.kernel("gemm_maxplus_f32_forward")(1, 2, 3, 4, 5, 6, 6, 5, 5)
steps["second use"] = under_lib()
lib.kernel("gemm_minplus_f32_forward")
steps["other kernel"] = under_lib()
print(json.dumps(steps))
"""


def test_loading_one_kernel_opens_only_the_index_and_its_fatbin(lib_dir: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", _OPENS_SCRIPT, str(lib_dir)], capture_output=True, text=True, env=aotc_env(), timeout=120
    )
    assert result.returncode == 0, result.stderr
    # Load reads the index's top level; the first kernel's use reads the directory
    # (once a library), then that kernel's own line of index.json (aotc.index._lines),
    # then its fatbin.
    assert json.loads(result.stdout) == {
        "load": ["index.json"],
        "first use": ["index.json", "index.json", "gemm_maxplus_f32_forward.fatbin"],
        "second use": [],
        "other kernel": ["index.json", "gemm_minplus_f32_forward.fatbin"],
    }


def test_load_imports_no_backend_and_nothing_heavy(lib_dir: Path) -> None:
    script = (
        "import sys, aotc\n"
        f"lib = aotc.load({str(lib_dir)!r})\n"
        "print(len(lib))\n"
        "heavy = ('cuda', 'pycuda', 'numpy', 'jinja2', 'yaml', 'aotc.build.manifest', 'aotc.build.codegen')\n"
        "shared = ('aotc.runtime.backends.base', 'aotc.runtime.backends.params')  # what backends share, no backend\n"
        "backends = [m for m in sys.modules if m.startswith('aotc.runtime.backends.') and m not in shared]\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy or m in heavy) + backends)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=aotc_env(), timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["3", "[]"]


def test_load_by_folder_index_path_and_name(lib_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    by_folder = load(lib_dir, backend=RecordingBackend())
    by_index = load(lib_dir / "index.json", backend=RecordingBackend())
    assert by_folder.directory == by_index.directory == lib_dir.resolve()
    assert by_folder.name == "rt"
    assert list(by_folder) == [FORWARD, BATCHED, MINPLUS]
    assert FORWARD in by_folder and "nope" not in by_folder
    import aotc._locations as locations

    monkeypatch.setattr(locations, "library_folder", lambda name: str(lib_dir) if name == "rt" else "/nonexistent")
    assert load("rt", backend=RecordingBackend()).directory == lib_dir


def test_load_with_defaults_returns_the_same_library_until_the_index_changes(lib_dir: Path) -> None:
    first = aotc.load(str(lib_dir))
    assert aotc.load(str(lib_dir)) is first
    rewrite_index(lib_dir, lambda index: index.update(aotc_version="0.0.0+changed"))
    assert aotc.load(str(lib_dir)) is not first


def test_missing_library_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(AotcError, match=r"no kernel library at .*index\.json not found") as info:
        load(tmp_path / "nothing-here")
    assert "\n" not in str(info.value)


def test_unknown_kernel_names_the_close_ones(lib_dir: Path) -> None:
    lib = load(lib_dir, backend=RecordingBackend())
    with pytest.raises(KeyError, match="gemm_maxplus_f32_forward, gemm_maxplus_f32_forward_batched"):
        lib.kernel("gemm_maxplus_f32_forwar")


def test_two_kernels_of_one_point_of_a_family_are_refused(lib_dir: Path) -> None:
    # Resealed as a build would: only the family's grouping can tell.
    rewrite_index(lib_dir, lambda index: index["kernels"][FORWARD + "_batched"]["axes"].update(variant="single"))
    lib = load(lib_dir, backend=RecordingBackend())
    message = rf"^{re.escape(str(lib_dir))}/index\.json: kernels\.{FORWARD}(_batched)?: has the axes of kernel '{FORWARD}(_batched)?', in family gemm$"
    with pytest.raises(IndexFormatError, match=message):
        tropical.over(lib).matmul(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32))


def test_damaged_fatbin_is_refused_in_one_line(lib_dir: Path) -> None:
    path = lib_dir / f"{FORWARD}.fatbin"
    data = path.read_bytes()
    path.write_bytes(bytes([data[0] ^ 1]) + data[1:])  # same size, one bit flipped
    lib = load(lib_dir, backend=RecordingBackend())
    with pytest.raises(DamagedLibraryError, match=rf"^{re.escape(str(path))}: sha256 [0-9a-f]{{12}}\.\.\. does not match index\.json") as info:
        lib.kernel(FORWARD)
    assert "\n" not in str(info.value)
    lib.kernel(MINPLUS)  # the others still load


def test_a_fatbin_of_another_size_is_refused_before_it_is_read(lib_dir: Path) -> None:
    path = lib_dir / f"{FORWARD}.fatbin"
    path.write_bytes(b"flipped")
    lib = load(lib_dir, backend=RecordingBackend())
    with pytest.raises(DamagedLibraryError, match=rf"^{re.escape(str(path))}: size 7 bytes, index\.json says \d+; the library is damaged"):
        lib.kernel(FORWARD)


def test_a_symlinked_fatbin_is_refused(lib_dir: Path, tmp_path: Path) -> None:
    path = lib_dir / f"{FORWARD}.fatbin"
    outside = tmp_path / "elsewhere.fatbin"
    outside.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(outside)
    lib = load(lib_dir, backend=RecordingBackend())
    with pytest.raises(DamagedLibraryError, match=rf"^{re.escape(str(path))}: is a symbolic link, not a regular file; the library is damaged"):
        lib.kernel(FORWARD)


def test_malformed_entry_is_refused_at_first_use_naming_the_field(lib_dir: Path) -> None:
    rewrite_index(lib_dir, lambda index: index["kernels"][FORWARD]["params"][0].update(pack="i"))
    lib = load(lib_dir, backend=RecordingBackend())  # only the library-wide fields are checked at load
    with pytest.raises(IndexFormatError, match=rf"kernels\.{FORWARD}\.params\[0\]\.pack: 'i' is not the pack code of kind 'ptr' \('Q'\)$"):
        lib.kernel(FORWARD)


def test_an_edited_block_size_is_refused_at_first_use(lib_dir: Path) -> None:
    rewrite_index(lib_dir, lambda index: index["kernels"][FORWARD]["launch"].update(block=[32, 8, 1]), reseal=False)
    backend = RecordingBackend()
    lib = load(lib_dir, backend=backend)
    with pytest.raises(IndexFormatError, match=rf"^{re.escape(str(lib_dir))}/index\.json: kernels\.{FORWARD}\.launch: checksum mismatch: edited after the build \(rebuild or reinstall the library\)$"):
        tropical.over(lib).matmul(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32))  # found by its axes: checked before it is used, too
    assert backend.modules == []  # no image was read or loaded


def test_a_tampered_unused_kernel_loads_and_fails_in_one_line_when_used(lib_dir: Path) -> None:
    # The trust model (docs/design.md): no field of a kernel is used before its checksums are.
    rewrite_index(lib_dir, lambda index: index["kernels"][MINPLUS]["launch"].update(block=[1024, 1, 1]), reseal=False)
    lib = load(lib_dir, backend=RecordingBackend())
    lib.kernel(FORWARD)(*forward_args())  # the untouched kernels work
    assert MINPLUS in lib and len(lib) == len(json.loads((lib_dir / "index.json").read_text())["kernels"])
    with pytest.raises(IndexFormatError) as info:
        lib.kernel(MINPLUS)
    assert str(info.value) == (
        f"{lib_dir}/index.json: kernels.{MINPLUS}.launch: checksum mismatch: edited after the build (rebuild or reinstall the library)"
    )
    assert "\n" not in str(info.value) and lib.loaded == (FORWARD,)


def test_a_broken_line_of_an_unused_kernel_fails_only_that_kernel(lib_dir: Path) -> None:
    path = lib_dir / "index.json"
    text = path.read_text()
    start = text.index(f'\n"{MINPLUS}": ') + 1
    end = text.index("\n", start)
    path.write_text(text[:start] + text[start:end].replace('"launch": {', '"launch": {{', 1) + text[end:])
    lib = load(lib_dir, backend=RecordingBackend())
    lib.kernel(FORWARD)
    with pytest.raises(IndexFormatError, match=rf"^{re.escape(str(lib_dir))}/index\.json: kernels\.{MINPLUS}: not a valid index \(Expecting property name"):
        lib.kernel(MINPLUS)


def test_aotc_inspect_still_checks_every_kernel(lib_dir: Path) -> None:
    from aotc.inspect import inspect_target

    rewrite_index(lib_dir, lambda index: index["kernels"][MINPLUS]["launch"].update(block=[1024, 1, 1]), reseal=False)
    with pytest.raises(IndexFormatError, match=rf"kernels\.{MINPLUS}\.launch: checksum mismatch"):
        inspect_target(str(lib_dir))


# -- choosing the image --------------------------------------------------------


def test_exact_sass_loads_the_fatbin(lib_dir: Path) -> None:
    backend = RecordingBackend((8, 0))
    launcher = load(lib_dir, backend=backend).kernel(FORWARD)
    assert launcher.choice is not None and launcher.choice.kind is ImageKind.SASS_EXACT
    fatbin = (lib_dir / f"{FORWARD}.fatbin").read_bytes()
    assert backend.modules == [(FORWARD, hashlib.sha256(fatbin).hexdigest())]
    assert "sass_exact 80" in launcher.image


def test_no_nvrtc_probe_when_sass_fits(lib_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from aotc.runtime import jit

    def refuse() -> None:
        raise AssertionError("NVRTC was consulted although SASS fits")

    monkeypatch.setattr(jit, "nvrtc_info", refuse)
    launcher = load(lib_dir, backend=RecordingBackend((8, 6))).kernel(FORWARD)
    assert launcher.choice is not None and launcher.choice.kind is ImageKind.SASS_COMPATIBLE


def test_driver_jit_loads_the_fatbin_when_policy_says_driver(lib_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AOTC_JIT", "driver")
    backend = RecordingBackend((9, 0))
    launcher = load(lib_dir, backend=backend).kernel(FORWARD)
    assert launcher.choice is not None and launcher.choice.kind is ImageKind.DRIVER_JIT
    assert backend.modules[0][1] == hashlib.sha256((lib_dir / f"{FORWARD}.fatbin").read_bytes()).hexdigest()


def test_no_image_is_one_line(lib_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AOTC_JIT", "off")
    with pytest.raises(NoKernelImageError, match="sm_90") as info:
        load(lib_dir, backend=RecordingBackend((9, 0))).kernel(FORWARD)
    assert "\n" not in str(info.value)


def test_nvrtc_jit_compiles_once_then_hits_the_cache(lib_dir: Path, cache_dir: Path) -> None:
    backend = RecordingBackend((9, 0))  # the library holds SASS and PTX for 8.0 only
    launcher = load(lib_dir, backend=backend).kernel(FORWARD)
    assert launcher.choice is not None and launcher.choice.kind is ImageKind.NVRTC_JIT
    assert "compiled now" in launcher.image
    assert len(backend.modules) == 1
    assert list(cache_dir.glob("*.entry"))

    again = RecordingBackend((9, 0))
    relaunched = Library(lib_dir, backend=again).kernel(FORWARD)
    assert "from the disk cache" in relaunched.image
    assert again.modules == backend.modules  # the same cubin bytes


class SourceBackend(RecordingBackend):
    """Stands in for the emulator: it wants the .cu, not a fatbin."""

    name = "source-test"
    image_format = "source"


def test_source_backend_gets_the_kernel_source_and_skips_selection(lib_dir: Path) -> None:
    backend = SourceBackend((1, 0))  # a capability no image could serve
    launcher = load(lib_dir, backend=backend).kernel(FORWARD)
    source = (lib_dir / "src" / f"{FORWARD}.cu").read_bytes()
    assert backend.modules == [(FORWARD, hashlib.sha256(source).hexdigest())]
    assert launcher.choice is None
    assert "source-test backend" in launcher.image


# -- the per-call path -----------------------------------------------------------


def test_a_call_packs_the_parameters_in_c_layout_and_computes_the_grid(lib_dir: Path) -> None:
    backend = RecordingBackend()
    lib = load(lib_dir, backend=backend)
    entry = lib.index["kernels"][FORWARD]
    lib.kernel(FORWARD)(*forward_args(m=100, n=300, k=7), stream=5)
    function, grid, block, shared, stream, params = backend.launches[-1]
    assert function == FORWARD
    assert grid == (10, 4, 1)  # ceil(N / 32), ceil(M / 32), 1
    assert block == tuple(entry["launch"]["block"])
    assert shared == entry["launch"]["shared_bytes_dynamic"] == 0
    assert stream == 5
    # A C compiler's layout: three pointers, three ints, 4 bytes of padding, three long longs.
    assert params == struct.pack("@QQQiiiqqq", *forward_args(m=100, n=300, k=7))
    assert len(params) == 3 * 8 + 3 * 4 + 4 + 3 * 8


def test_batched_grid_covers_the_batch(lib_dir: Path) -> None:
    backend = RecordingBackend()
    launcher = load(lib_dir, backend=backend).kernel("gemm_maxplus_f32_forward_batched")
    assert launcher.params == (
        "A", "B", "C", "M", "N", "K", "lda", "ldb", "ldc", "batch", "batch_stride_A", "batch_stride_B", "batch_stride_C",
    )  # fmt: skip
    args = (1, 2, 3, 33, 64, 5, 5, 64, 64, 6, 0, 320, 2112)
    launcher(*args)
    assert backend.launches[-1][1] == (2, 2, 6)


def test_empty_sizes_launch_nothing_and_negative_sizes_raise(lib_dir: Path) -> None:
    backend = RecordingBackend()
    launcher = load(lib_dir, backend=backend).kernel(FORWARD)
    launcher(*forward_args(m=0))
    launcher(*forward_args(n=0))
    assert backend.launches == []
    with pytest.raises(ValueError, match=r"a size is negative .*M=-5"):
        launcher(*forward_args(m=-5))


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        pytest.param((1, 2, 3), TypeError, r"takes 9 arguments \(A, B, C, M, N, K, lda, ldb, ldc\), got 3", id="count"),
        pytest.param((1, 2, -3, 4, 5, 6, 6, 5, 5), ValueError, "argument C must be a device pointer", id="negative-pointer"),
        pytest.param((1, 2, 3, 2**31, 5, 6, 6, 5, 5), ValueError, "argument M must be an i32 int", id="int-overflow"),
        pytest.param((1, 2, 3, 4.0, 5, 6, 6, 5, 5), TypeError, "argument M must be an i32 int, got 4.0", id="float"),
    ],
)
def test_bad_arguments_are_one_line(lib_dir: Path, args: tuple[Any, ...], error: type, match: str) -> None:
    launcher = load(lib_dir, backend=RecordingBackend()).kernel(FORWARD)
    with pytest.raises(error, match=match):
        launcher(*args)


def test_launch_at_launches_the_grid_it_is_given_and_packs_as_a_call_does(lib_dir: Path) -> None:
    """A part of a grid past CUDA's limits (the binder splits it): the grid as
    given, the parameter block a call with these arguments would pack, and a
    bad argument refused in the call's own line."""
    backend = RecordingBackend()
    launcher = load(lib_dir, backend=backend).kernel(FORWARD)
    launcher(*forward_args(m=100, n=300, k=7))
    launcher.launch_at((3, 5, 1), forward_args(m=100, n=300, k=7), stream=9)
    (_, _, block, shared, _, whole), (_, grid, part_block, part_shared, stream, part) = backend.launches[-2:]
    assert (grid, stream, part) == ((3, 5, 1), 9, whole) and (part_block, part_shared) == (block, shared)
    with pytest.raises(ValueError, match="argument M must be an i32 int"):
        launcher.launch_at((1, 1, 1), (1, 2, 3, 2**31, 5, 6, 6, 5, 5))


def test_calls_import_hash_and_open_nothing(lib_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = load(lib_dir, backend=RecordingBackend())
    launcher = lib.kernel(FORWARD)  # first use: everything expensive happens here
    lib.kernel(FORWARD)

    real_import = builtins.__import__
    imports: list[str] = []
    calling = False

    def counting_import(name: str, *rest: Any, **kw: Any) -> Any:
        if calling:
            imports.append(name)
        return real_import(name, *rest, **kw)

    def no_hashing(*_: Any, **__: Any) -> Any:
        raise AssertionError("hashed on a call")

    def no_open(*_: Any, **__: Any) -> Any:
        raise AssertionError("opened a file on a call")

    monkeypatch.setattr(hashlib, "sha256", no_hashing)
    monkeypatch.setattr(builtins, "open", no_open)
    monkeypatch.setattr(builtins, "__import__", counting_import)
    calling = True
    for _ in range(100):
        launcher(*forward_args())
        lib.kernel(FORWARD)(*forward_args())
        lib.launch(FORWARD, *forward_args())
    calling = False
    monkeypatch.undo()
    assert imports == []
    assert len(lib.backend.launches) == 300  # type: ignore[attr-defined]


# -- thread safety ------------------------------------------------------------------


class SlowBackend(RecordingBackend):
    """Loading takes long enough that racing threads all arrive before it ends."""

    def load_module(self, image: bytes, *, name: str, symbols: tuple[str, ...] = ()) -> Any:
        time.sleep(0.2)
        return super().load_module(image, name=name, symbols=symbols)


def test_racing_threads_load_a_kernel_once(lib_dir: Path) -> None:
    backend = SlowBackend()
    lib = load(lib_dir, backend=backend)
    threads = 8
    start = threading.Barrier(threads)
    got: list[object] = []

    def use(name: str) -> None:
        start.wait()
        got.append(lib.kernel(name))

    workers = [threading.Thread(target=use, args=(FORWARD if i % 2 else MINPLUS,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert sorted(name for name, _ in backend.modules) == [FORWARD, MINPLUS]
    assert len({id(launcher) for launcher in got}) == 2
    assert sorted(lib.loaded) == [FORWARD, MINPLUS]


# -- a library built by CMake and nvcc -------------------------------------------------------


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_a_library_built_with_nvcc_loads_its_fatbins_and_jits_its_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from runtime_support import build_library

    built = build_library(tmp_path / "built", arch="80")
    monkeypatch.setenv("AOTC_CACHE_DIR", str(tmp_path / "cache"))

    on_80 = RecordingBackend((8, 0))
    launcher = load(built, backend=on_80).kernel(FORWARD)
    assert launcher.choice is not None and launcher.choice.kind is ImageKind.SASS_EXACT
    fatbin = (built / f"{FORWARD}.fatbin").read_bytes()
    assert on_80.modules == [(FORWARD, hashlib.sha256(fatbin).hexdigest())]

    on_90 = RecordingBackend((9, 0))
    jitted = load(built, backend=on_90).kernel(BATCHED)
    assert jitted.choice is not None and jitted.choice.kind is ImageKind.NVRTC_JIT
    (entry,) = list((tmp_path / "cache").glob("*.entry"))
    assert b"\x7fELF" in entry.read_bytes()[:128]


def test_an_index_replaced_after_load_is_refused_at_first_use(lib_dir: Path) -> None:
    lib = load(lib_dir, backend=RecordingBackend())
    rewrite_index(lib_dir, lambda index: index.update(aotc_version="0.0.0+reinstalled"))
    with pytest.raises(IndexFormatError, match=rf"^{re.escape(str(lib_dir))}/index\.json: changed since it was loaded; load the library again$"):
        lib.kernel(FORWARD)  # its line is read now: from the file that was loaded, or not at all


def test_pickling_a_library_or_a_handle_over_it_is_refused_in_one_line(emulated_tropical: Any) -> None:
    """A DataLoader worker that is handed a library (or a bindings or tropical
    handle over one) is told in one line to load it there, not a deep TypeError."""
    import pickle

    import aotc.kernels

    for handle in (emulated_tropical, aotc.kernels.over(emulated_tropical), tropical.over(emulated_tropical)):
        with pytest.raises(TypeError) as refused:
            pickle.dumps(handle)
        text = str(refused.value)
        assert "\n" not in text and text.startswith("an aotc library ('tropical' at ") and f"aotc.load({emulated_tropical.folder!r})" in text
