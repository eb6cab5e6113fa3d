from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import aotc

# Every test file under a folder pytest is given must be collected (see the plugin).
pytest_plugins = ["collection_guard"]

REPO = Path(__file__).resolve().parents[1]
# The aotc under test: the installed wheel under tox, the source tree otherwise.
AOTC_IMPORT_ROOT = Path(aotc.__file__).resolve().parents[1]


def aotc_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """An environment whose Python imports the same aotc these tests import."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(AOTC_IMPORT_ROOT), env.get("PYTHONPATH")]))
    env.update(extra or {})
    return env


def first_fault(error: BaseException | str) -> str:
    """A checked launch's KernelFaultError without the count of the launch's other
    faults that ends it ("; 12 more faults in this launch"), where it has one."""
    text = str(error)
    head, _, count = text.rpartition("; ")
    return head if head and count.endswith(" in this launch") and count.split()[0].isdigit() else text


RunAotc = Callable[..., subprocess.CompletedProcess]


@functools.cache
def gpu_problem() -> str:
    """Why no CUDA GPU can be used here, in one line, or "" when one can.

    The one probe every GPU test asks, run at most once per session: the
    cuda-python backend must find cuda-bindings, a driver and a device.
    """
    from aotc.errors import BackendError
    from aotc.runtime.backends.cuda_python import CudaPythonBackend

    try:
        CudaPythonBackend().device()
    except BackendError as exc:  # NoDeviceError, or no cuda-bindings
        return str(exc)
    return ""


def gpu_skip_reason(problem: str) -> str:
    return f"needs a CUDA GPU ({problem})"


def require_gpu() -> None:
    """Skip the calling test, saying why, where no CUDA GPU can be used."""
    problem = gpu_problem()
    if problem:
        pytest.skip(gpu_skip_reason(problem))


def require_nvrtc(major: int = 13) -> None:
    """Skip the calling test, saying why, where this interpreter has no NVRTC and nvFatbin of CUDA ``major``
    (the wheels nvidia-cuda-nvrtc and nvidia-nvfatbin; -cu12 for 12)."""
    from aotc.build._nvrtc_libs import load_toolchain
    from aotc.errors import BuildError

    try:
        load_toolchain(major)
    except BuildError as exc:
        pytest.skip(f"no CUDA {major} NVRTC/nvFatbin in this interpreter: {exc}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``gpu`` skip, with the probe's reason, where there is no GPU;
    the probe runs only when such a test was collected."""
    marked = [item for item in items if item.get_closest_marker("gpu") is not None]
    if marked and gpu_problem():
        skip = pytest.mark.skip(reason=gpu_skip_reason(gpu_problem()))
        for item in marked:
            item.add_marker(skip, append=False)  # before any other skip mark, so this reason is shown


@pytest.fixture
def full_path() -> Iterator[list[str]]:
    """The layouts' names, one per launch through the binder's full path
    (aotc.kernels._launch.launch), during the test: a call a plan answered adds none."""
    from aotc.kernels import _launch

    seen: list[str] = []
    hook = lambda layout: seen.append(layout.name)  # noqa: E731 - one expression, removed below by identity
    _launch.FULL_PATH_HOOKS.append(hook)
    yield seen
    _launch.FULL_PATH_HOOKS.remove(hook)


@pytest.fixture
def run_aotc(tmp_path: Path) -> RunAotc:
    """Run the ``aotc`` CLI in a subprocess, as a user would."""

    def run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "aotc", *args],
            cwd=cwd or tmp_path,
            env=aotc_env(env),
            capture_output=True,
            text=True,
            timeout=300,
        )

    return run


def installed_library(*, allow_override: bool = True) -> Path:
    """The tropical library under test: AOTC_TEST_LIBRARY (a built library folder,
    for running from a checkout) unless ``allow_override`` is False, else the
    installed one. Skips the calling
    module, saying why, when there is none, unless AOTC_REQUIRE_INSTALLED=1
    (tox), where a missing library is an error."""
    override = os.environ.get("AOTC_TEST_LIBRARY") if allow_override else None
    library = Path(override or aotc.library_dir("tropical"))
    if not (library / "index.json").is_file():
        reason = f"no tropical library at {library}: run through tox, pip install ., or set AOTC_TEST_LIBRARY"
        if os.environ.get("AOTC_REQUIRE_INSTALLED") == "1":
            raise RuntimeError(reason)
        pytest.skip(reason, allow_module_level=True)
    return library


@pytest.fixture(scope="session")
def emulated_tropical(tmp_path_factory: pytest.TempPathFactory) -> object:
    """The tropical library on the CPU emulator, one per test session, with its
    own cache so each kernel compiles once per run and never touches the user's."""
    from aotc.runtime.cache import DiskCache
    from aotc.runtime.emulator.backend import EmulatorBackend
    from aotc.runtime.library import Library

    backend = EmulatorBackend(cache=DiskCache(tmp_path_factory.mktemp("emulator-cache")))
    return Library(installed_library(), backend=backend)


@pytest.fixture
def tropical_on_emulator(emulated_tropical: object) -> Iterator[None]:
    """aotc.tropical's module functions on the emulated library, for one test."""
    from aotc import tropical

    tropical.set_library(emulated_tropical)
    yield
    tropical.set_library(None)


# Example counts of the seeded hypothesis fuzzers (tests/faults/), printed at the
# end of every run, so CI's log shows how much each one exercised.
FUZZ_COUNTS: dict[str, str] = {}


@pytest.fixture
def record_fuzz() -> Callable[[str, str], None]:
    """``record_fuzz(name, "300 examples ...")``: one line in the run's summary."""
    return FUZZ_COUNTS.__setitem__


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if FUZZ_COUNTS:
        terminalreporter.section("hypothesis fuzzers (fixed seed and budget)")
        for name, text in sorted(FUZZ_COUNTS.items()):
            terminalreporter.write_line(f"fuzz {name}: {text}")


@pytest.fixture(autouse=True)
def private_build_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fatbin cache of this test's own (``aotc.build.fatbin_cache``): no test reads
    another's entries or the user's, and builds a test starts compile for real."""
    directory = tmp_path_factory.mktemp("fatbin-cache") / "cache"
    monkeypatch.setenv("AOTC_BUILD_CACHE_DIR", str(directory))
    monkeypatch.delenv("AOTC_BUILD_CACHE", raising=False)
    for name in ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN"):
        monkeypatch.delenv(name, raising=False)
    return directory


@pytest.fixture(scope="session", autouse=True)
def settled_hypothesis_utf8_table() -> None:
    """Hypothesis computes, once a process and then from a file in its storage
    folder, which characters of a codec do not round-trip, and warns (an error
    here: filterwarnings) when a text strategy could draw one. UTF-8 has none.
    In one CI run the table came out of a mid-run computation with U+0020 in
    it, and every ``@given`` test after that failed on a
    NonRoundTrippableCharactersWarning. So the table is made here, before the
    first test runs (not at configure time, where Hypothesis refuses storage
    access), and a file that says otherwise is made again."""
    try:
        from hypothesis.internal import charmap
    except ImportError:  # the fuzz and rule tests need hypothesis; without it they are not collected
        return
    try:
        _, non_roundtrip = charmap.intervals_from_codec("utf-8")
        if non_roundtrip:
            Path(charmap.charmap_file("codec-v2-utf-8")).unlink(missing_ok=True)
            charmap.intervals_from_codec.cache_clear()
            charmap.intervals_from_codec("utf-8")
    except AttributeError:  # another Hypothesis keeps its tables elsewhere
        return
