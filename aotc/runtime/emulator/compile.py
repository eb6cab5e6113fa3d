"""Compiles a kernel source into an emulator shared library with g++ and OpenMP.

g++ preprocesses the source with the shim, the constructs the emulator
cannot run are looked for in what the preprocessor kept, and g++ compiles
that. The result depends on the source bytes, the kernel symbols, and
:func:`toolchain`'s identity (compiler, version, target, flags, shim header,
translation schema, and the checks of ``AOTC_EMULATOR_CHECK``): a disk cache
keys on those. The caller chooses where the
library goes: :func:`compile_library` writes a path, :func:`compile_library_bytes`
returns the bytes.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from aotc.errors import BuildError, UnreadableFileError
from aotc._untrusted_files import KERNEL_FILE_LIMIT, read_regular
from aotc.runtime.emulator._source import find_unsupported, missing_cuda_header, translate_source
from aotc.runtime.emulator.checks import check_mask, requested_checks

__all__ = [
    "CHECKED_FLAGS",
    "COMPILE_FLAGS",
    "INCLUDE_DIR",
    "SHIM_HEADER",
    "TRANSLATION_SCHEMA",
    "Toolchain",
    "compile_library",
    "compile_library_bytes",
    "toolchain",
    "translation_unit",
]

# Bump when the rewrites in _source.py or the trampolines below change.
TRANSLATION_SCHEMA = 3
SHIM_HEADER = Path(__file__).resolve().with_name("aotc_emulator.h")
# The emulator's own versions of CUDA headers a kernel may include
# (cuda_fp16.h, cooperative_groups.h, ...), found before any other.
INCLUDE_DIR = SHIM_HEADER.with_name("include")
# Everything the shim includes or a kernel may; their bytes go into the toolchain identity.
_SHIM_FILES = (
    *sorted(SHIM_HEADER.parent.glob("aotc_emulator*.h")),
    *sorted(path for path in INCLUDE_DIR.rglob("*") if path.is_file()),
)
COMPILE_FLAGS: tuple[str, ...] = (
    "-std=c++17",
    "-O2",
    "-fopenmp",
    "-fPIC",
    "-shared",
    "-fvisibility=hidden",
    # CUDA code reinterprets buffers freely (float4 loads, shared byte arrays).
    "-fno-strict-aliasing",
    "-fno-math-errno",
    # A GPU build contracts a*b + c into one FMA unless told not to; the
    # kernels say where they want which (docs/design.md, "Floating point").
    "-ffp-contract=off",
    # Lets the static __shared__ objects of inline functions share the
    # section aotc_shared with the others (aotc_emulator.h).
    "-fno-weak",
    "-Wno-unknown-pragmas",
    "-Werror=return-type",
    "-Werror=sequence-point",
    "-Werror=aggressive-loop-optimizations",
)
# With AOTC_EMULATOR_CHECK: gcc's ThreadSanitizer instrumentation calls a
# hook at every load and store, and aotc_emulator_check.h supplies the hooks
# (no libtsan: -static-libtsan on a -shared link links none). -O1 keeps
# accesses as the source wrote them; -g names the shared objects; volatile
# accesses call hooks of their own (morally strong, as PTX has them: a spin
# on a volatile flag must let the other threads run).
CHECKED_FLAGS: tuple[str, ...] = (
    "-O1",
    "-g",
    "-fsanitize=thread",
    "-static-libtsan",
    "--param",
    "tsan-instrument-func-entry-exit=0",
    "--param",
    "tsan-distinguish-volatile=1",
)
# Under the checks, the kernel's own code keeps each load and store of a
# vector type (float4, int2, double2, ...) one access rather than one a
# component (gcc's scalar replacement of aggregates splits them, even at
# -O1), so that its hook sees the size and the alignment the type promises,
# and a misaligned one is found, as a GPU faults on it
# (check::misaligned_access). The emulator's code around it keeps the
# optimization: its checks cost a checked GEMM launch 1.3 % more
# instructions without it (benchmarks/RESULTS.md).
_KERNEL_CODE_BEGIN = '#if AOTC_EMU_CHECKS\n#pragma GCC push_options\n#pragma GCC optimize("no-tree-sra")\n#endif\n'
_KERNEL_CODE_END = "\n#if AOTC_EMU_CHECKS\n#pragma GCC pop_options\n#endif"
_COMPILER_ENV = "AOTC_EMULATOR_CXX"
_IDENTIFIER_RE = re.compile(r"[A-Za-z_]\w*")
_TRAMPOLINES = """\
extern "C" __attribute__((visibility("default"))) int aotc_emu_launch__{symbol}(
    const unsigned* grid, const unsigned* block, unsigned long long shared_bytes, void** args) {{
  return ::aotc_emu::launch(&{symbol}, grid, block, shared_bytes, args, {max_threads}, "{names}");
}}
extern "C" __attribute__((visibility("default"))) int aotc_emu_describe__{symbol}(
    unsigned long long* sizes, char* kinds, int capacity, unsigned* max_threads) {{
  *max_threads = {max_threads};
  return ::aotc_emu::describe(&{symbol}, sizes, kinds, capacity);
}}
"""


@dataclass(frozen=True)
class Toolchain:
    """What an emulator library's bytes depend on, besides its source."""

    compiler: str
    version: str
    target: str
    flags: tuple[str, ...]
    shim_sha256: str
    schema: int = TRANSLATION_SCHEMA
    checks: tuple[str, ...] = ()  # of aotc.runtime.emulator.checks.CHECKS; in flags too

    @property
    def identity(self) -> str:
        """One string for a cache key."""
        flags = " ".join(self.flags)
        return "\n".join([self.compiler, self.version, self.target, flags, self.shim_sha256, str(self.schema)])


def toolchain(checks: tuple[str, ...] | None = None) -> Toolchain:
    """The compiler in use (``$AOTC_EMULATOR_CXX``, else ``g++``), building in
    ``checks`` (default: those ``$AOTC_EMULATOR_CHECK`` names)."""
    checks = requested_checks() if checks is None else checks
    return _probe(os.environ.get(_COMPILER_ENV) or "g++", tuple(checks))


@functools.lru_cache(maxsize=None)
def _probe(compiler: str, checks: tuple[str, ...] = ()) -> Toolchain:
    path = shutil.which(compiler)
    if path is None:
        msg = f"no C++ compiler for the emulator: {compiler!r} not found (install g++ or set {_COMPILER_ENV})"
        raise BuildError(msg)
    version = _run_quietly([path, "--version"]).splitlines()[0].strip()
    target = _run_quietly([path, "-dumpmachine"]).strip()
    shim = hashlib.sha256()
    for header in _SHIM_FILES:
        shim.update(header.relative_to(SHIM_HEADER.parent).as_posix().encode() + b"\0")
        shim.update(header.read_bytes())
    shim_sha256 = shim.hexdigest()
    flags = COMPILE_FLAGS
    if checks:
        # The later -O1 wins over COMPILE_FLAGS' -O2.
        flags = (*flags, *CHECKED_FLAGS, f"-DAOTC_EMU_CHECKS={check_mask(checks)}")
    if "linux" in target:
        # A call to a function nobody defines fails here rather than at load time.
        flags = (*flags, "-Wl,--no-undefined")
    return Toolchain(path, version, target, flags, shim_sha256, checks=checks)


def _compiler_environment() -> dict[str, str]:
    """The environment for g++: without LD_PRELOAD, which the memory check sets
    for Python (libasan), not for the compiler."""
    return {name: value for name, value in os.environ.items() if name != "LD_PRELOAD"}


def _run_quietly(command: list[str]) -> str:
    result = subprocess.run(command, capture_output=True, text=True, errors="replace", check=False, env=_compiler_environment())
    if result.returncode != 0:
        msg = f"{command[0]} {command[1]} failed: {_first_error_line(result.stderr)}"
        raise BuildError(msg)
    return result.stdout


def _source_name(source: str | os.PathLike[str] | bytes, source_name: str | None) -> str:
    if source_name:
        return source_name
    return "<kernel source>" if isinstance(source, bytes) else os.fspath(source)


def _read_source(source: str | os.PathLike[str] | bytes, source_name: str | None) -> tuple[str, str]:
    name = _source_name(source, source_name)
    if isinstance(source, bytes):
        data = source
    else:
        try:
            data = read_regular(source, KERNEL_FILE_LIMIT)
        except UnreadableFileError as error:
            msg = f"cannot read kernel source {error}"
            raise BuildError(msg) from None
    return data.decode("utf-8", errors="surrogateescape"), name


def translation_unit(
    source: str | os.PathLike[str] | bytes, symbols: Sequence[str], *, source_name: str | None = None
) -> str:
    """The C++ that g++ compiles (after the force-included shim).

    ``source`` is a path (str or PathLike) or the source's bytes. Raises
    BuildError for a symbol the source does not define. Unsupported constructs
    are found later, in the preprocessed unit.
    """
    text, name = _read_source(source, source_name)
    translated = translate_source(text, name)
    trampolines = []
    for symbol in symbols:
        if not _IDENTIFIER_RE.fullmatch(symbol):
            msg = f"{name}: kernel symbol {symbol!r} is not a C identifier (kernels must be extern \"C\")"
            raise BuildError(msg)
        if not re.search(rf"\b{symbol}\s*\(", translated.bare_code):
            msg = f"{name}: kernel {symbol!r} is not defined in this source"
            raise BuildError(msg)
        bound = translated.launch_bounds.get(symbol)
        max_threads = f"static_cast<unsigned>({bound})" if bound else "1024u"
        names = ",".join(_parameter_names(translated.bare_code, symbol))
        trampolines.append(_TRAMPOLINES.format(symbol=symbol, max_threads=max_threads, names=names))
    return "".join(
        [
            _KERNEL_CODE_BEGIN,
            f'#line 1 "{_quoted(name)}"\n',
            translated.code,
            _KERNEL_CODE_END,
            "\n#line 1 \"<aotc emulator trampolines>\"\n",
            *trampolines,
        ]
    )


_PARAMETER_NAME_RE = re.compile(r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*$")


def _parameter_names(bare_code: str, symbol: str) -> list[str]:
    """The names of ``symbol``'s parameters, as its definition spells them, for
    fault reports; ``?`` where one has none."""
    for match in re.finditer(rf"\b{symbol}\s*\(", bare_code):
        depth, start = 0, match.end()
        for end in range(match.end() - 1, len(bare_code)):
            depth += {"(": 1, ")": -1}.get(bare_code[end], 0)
            if depth == 0:
                break
        if not bare_code[end + 1 :].lstrip().startswith("{"):
            continue  # a declaration or a call; the definition names its parameters
        parts, depth, current = [], 0, []
        for char in bare_code[start:end]:
            depth += {"(": 1, "<": 1, "[": 1, ")": -1, ">": -1, "]": -1}.get(char, 0)
            if char == "," and depth == 0:
                parts.append("".join(current))
                current = []
            else:
                current.append(char)
        parts.append("".join(current))
        names = [_PARAMETER_NAME_RE.search(part.strip()) for part in parts if part.strip() not in ("", "void")]
        return [name.group(1) if name else "?" for name in names]
    return []


def _quoted(name: str) -> str:
    """``name`` as a C string literal's contents, as #line and g++'s line markers write it."""
    return name.replace("\\", "\\\\").replace('"', '\\"')


def _run_compiler(command: list[str], source_label: str, cwd: str | None = None) -> None:
    result = subprocess.run(
        command, capture_output=True, text=True, errors="replace", check=False, env=_compiler_environment(), cwd=cwd
    )
    if result.returncode == 0:
        return
    error = _first_error_line(result.stderr)
    if "undefined reference" in error:  # the linker names the object file, not the .cu
        error = f"{source_label}: {error[error.index('undefined reference') :]}"
    unsupported = missing_cuda_header(error)
    if unsupported is not None:
        raise BuildError(unsupported)
    msg = f"{error} [emulator build: {Path(command[0]).name} exited with {result.returncode}]"
    raise BuildError(msg)


def _first_error_line(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if re.search(r"\berror:|undefined reference", line)]
    # collect2's "ld returned 1" only says that the linker's message came before.
    useful = [line for line in errors if not line.startswith("collect2")] or errors or lines[-1:]
    return useful[0] if useful else "no diagnostic"


def compile_library(
    source: str | os.PathLike[str] | bytes,
    symbols: Sequence[str],
    output: str | os.PathLike[str],
    *,
    source_name: str | None = None,
) -> Path:
    """Compiles ``source`` into the shared library ``output`` (replaced atomically)."""
    tools = toolchain()
    name = _source_name(source, source_name)
    unit = translation_unit(source, symbols, source_name=source_name)
    output = Path(output)
    with tempfile.TemporaryDirectory(prefix="aotc-emu-") as work:
        unit_path = Path(work) / "kernel.cpp"
        preprocessed, built = unit_path.with_suffix(".ii"), unit_path.with_suffix(".so")
        unit_path.write_text(unit, encoding="utf-8", errors="surrogateescape")
        # Preprocess once, check what survives the preprocessor, compile that.
        # -I, searched before CPATH and -isystem: a CUDA toolkit there must not win.
        shim = ["-I", str(INCLUDE_DIR), "-include", str(SHIM_HEADER)]
        command = [tools.compiler, *tools.flags, "-E", *shim, "-x", "c++", str(unit_path)]
        _run_compiler([*command, "-o", str(preprocessed)], name, cwd=work)
        text = preprocessed.read_text(encoding="utf-8", errors="surrogateescape")
        find_unsupported(text, _quoted(name), name)
        # Checked builds carry debug lines for fault reports: relative to "."
        # rather than to this temporary folder, so the bytes do not depend on it.
        debug = [f"-fdebug-prefix-map={work}=."] if tools.checks else []
        command = [tools.compiler, *tools.flags, *debug, "-x", "c++-cpp-output", str(preprocessed)]
        _run_compiler([*command, "-o", str(built)], name, cwd=work)
        output.parent.mkdir(parents=True, exist_ok=True)
        handle, staging = tempfile.mkstemp(prefix=f".{output.name}.", suffix=".tmp", dir=output.parent)
        os.close(handle)
        try:
            shutil.copyfile(built, staging)
            os.replace(staging, output)
        except BaseException:
            Path(staging).unlink(missing_ok=True)
            raise
    return output


def compile_library_bytes(
    source: str | os.PathLike[str] | bytes, symbols: Sequence[str], *, source_name: str | None = None
) -> bytes:
    """Compiles ``source`` and returns the shared library's bytes."""
    with tempfile.TemporaryDirectory(prefix="aotc-emu-") as work:
        library = compile_library(source, symbols, Path(work) / "kernel.so", source_name=source_name)
        return library.read_bytes()
