"""``import aotc`` stays cheap: no backend, NumPy, PyTorch, Jinja2, PyYAML or CUDA module."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import aotc_env

FORBIDDEN = ("aotc.runtime", "aotc.build.manifest", "aotc.build.codegen", "cuda", "pycuda", "numpy", "torch", "jax", "jaxlib", "jinja2", "yaml", "ctypes")


def imported_by(code: str, *, site: bool = False) -> list[str]:
    """Every module ``code`` imports, from ``-X importtime`` (``-S``: no site-packages
    noise, unless ``site``: NumPy lives there)."""
    flags = ["-X", "importtime"] if site else ["-S", "-X", "importtime"]
    result = subprocess.run([sys.executable, *flags, "-c", code], capture_output=True, text=True, env=aotc_env(), timeout=60)
    assert result.returncode == 0, result.stderr
    return re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s+(\S+)", result.stderr, re.MULTILINE)


def test_import_aotc_imports_nothing_heavy() -> None:
    modules = imported_by("import aotc")
    assert "aotc" in modules and "aotc._version" in modules
    heavy = [m for m in modules if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]
    assert heavy == []
    # Not even typing or pathlib: `import aotc` is on every worker's start-up path.
    assert not {"typing", "pathlib", "aotc._locations"} & set(modules)


def test_aotc_load_is_there_without_importing_the_runtime() -> None:
    modules = imported_by("import aotc; assert callable(aotc.load)")
    assert not [m for m in modules if m.startswith("aotc.runtime")]


# What `import aotc.tropical` may load besides aotc's own modules: the API is
# imported by every training script, and NumPy, PyTorch, the runtime, ctypes
# or typing come only with the first call that needs them.
# os and what it imports are loaded by every interpreter started without -S.
TROPICAL_MAY_IMPORT = {"__future__", "os", "stat", "_stat", "posixpath", "ntpath", "genericpath", "_collections_abc"}


def test_import_aotc_tropical_imports_only_its_own_modules() -> None:
    start = set(imported_by("pass"))  # what the interpreter loads before any code runs
    modules = [m for m in imported_by("import aotc.tropical") if m not in start]
    assert {"aotc.tropical", "aotc.tropical._api", "aotc.kernels", "aotc.errors"} <= set(modules)
    assert [m for m in modules if m.split(".")[0] != "aotc" and m not in TROPICAL_MAY_IMPORT] == []
    # The library, the arrays, the binder's layouts and its torch ops and JAX
    # route load with the first call that needs them.
    later = ("aotc.runtime", "aotc.build", "aotc.arrays", "aotc.kernels._binding", "aotc.kernels._torch", "aotc.kernels._jax", "aotc.tropical._packed")
    assert [m for m in modules if m.startswith(later)] == []


# What a process imports on its way to its first launch must leave these out:
# with what they pull in (inspect brings dis, ast and tokenize; pathlib
# fnmatch, urllib.parse and ipaddress), they cost more than the rest of the
# start-up together (benchmarks/RESULTS.md, issue 21).
FIRST_LAUNCH_MUST_NOT_IMPORT = ("dataclasses", "inspect", "typing", "subprocess", "pathlib", "urllib")

_FIRST_LAUNCH = """
import sys
import numpy
import aotc, aotc.tropical
library = aotc.load(sys.argv[1], backend="noop")
for name in list(library)[:5]:
    library.kernel(name)
a = numpy.ones((4, 4), numpy.float32)
aotc.tropical.over(library).matmul(a, a)
aotc.tropical.over(library).matmul(a, a, out=numpy.empty((4, 4), numpy.float32))
"""


def test_the_first_launch_imports_no_dataclasses_inspect_typing_subprocess_pathlib_or_urllib(tmp_path: Path) -> None:
    from runtime.runtime_support import make_library

    library = make_library(tmp_path)
    pytest.importorskip("numpy", reason="NumPy is not installed (the test extra has it)")
    before = set(imported_by("import numpy", site=True))  # NumPy's and site's own imports are not aotc's to hold
    code = f"import sys; sys.argv[1:] = [{str(library)!r}]\n{_FIRST_LAUNCH}"
    modules = [m for m in imported_by(code, site=True) if m not in before]
    assert {"aotc.runtime.library", "aotc.index.library_index", "aotc.runtime.launcher", "aotc.kernels._launch"} <= set(modules)
    banned = [m for m in modules if m.split(".")[0] in FIRST_LAUNCH_MUST_NOT_IMPORT]
    assert banned == []
    # Nor what only a gradient or a tensor needs: the binder imports those where they are used.
    assert [m for m in modules if m.startswith(("aotc.kernels._gradients", "aotc.kernels._torch", "aotc.kernels._jax"))] == []


# What a start-up (`import aotc.tropical`, `aotc.load`, the first use of five
# kernels) must not import: json (with re, enum, functools and collections,
# 31 M instructions), hashlib (OpenSSL: 10 M) and the rest below cost more
# than the whole start-up may (issue 39: 1000x the peer's NVRTC start,
# benchmarks/RESULTS.md). hashlib is spared where the kernels' files are on
# the record of files already verified (aotc.index._verified), as they are
# from a library's second start on.
START_MUST_NOT_IMPORT = (
    "json", "re", "enum", "functools", "collections", "contextlib", "hashlib", "_hashlib", "importlib", "warnings",
    "types", "operator", "reprlib", "dataclasses", "inspect", "typing", "subprocess", "pathlib", "threading",
)  # fmt: skip

_START = """
import sys
import aotc, aotc.tropical
library = aotc.load(sys.argv[1], backend="noop")
for name in sys.argv[2].split(","):
    library.kernel(name)
"""


def test_a_start_up_imports_no_json_re_enum_hashlib_or_the_modules_they_bring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from runtime.runtime_support import make_library

    from aotc.runtime.library import Library

    library = make_library(tmp_path)
    names = list(Library(library, backend="noop"))[:5]
    monkeypatch.setenv("AOTC_CACHE_DIR", str(tmp_path / "cache"))
    time.sleep(2.1)  # files settle (are kept on the record once hashed) two seconds after their last change
    code = f"import sys; sys.argv[1:] = [{str(library)!r}, {','.join(names)!r}]\n{_START}"
    imported_by(code)  # the library's first start: it hashes the files, and keeps them on the record
    start = set(imported_by("pass"))
    modules = [m for m in imported_by(code) if m not in start]
    assert {"aotc.runtime.library", "aotc.index.library_index", "aotc.runtime.launcher"} <= set(modules)
    banned = [m for m in modules if m.split(".")[0] in START_MUST_NOT_IMPORT]
    assert banned == []
