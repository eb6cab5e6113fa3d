"""Reads a kernel source for the emulator: rewrites dynamic shared memory,
finds each kernel's ``__launch_bounds__``, and, once g++ has preprocessed it,
refuses what cannot run on a CPU.

Every rewrite keeps the line count, so compiler messages point at the right
line of the original ``.cu``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from aotc.errors import BuildError

__all__ = [
    "UNSUPPORTED",
    "EmulatorSource",
    "find_unsupported",
    "missing_cuda_header",
    "translate_source",
]

# (regex over preprocessed code without literals, why it cannot be emulated).
# The message names the matched identifier and the line.
_CUDA9_REMOVED = "removed for sm_70 and later in CUDA 9: use its _sync form with a mask"
UNSUPPORTED: tuple[tuple[str, str], ...] = (
    (r"\b__(?:shfl(?:_up|_down|_xor)?|ballot|any|all|uni)\b(?!_sync)", _CUDA9_REMOVED),
    (r"\b(?:this_grid|this_multi_grid|grid_group|multi_grid_group|this_cluster|cluster_group)\b",
     "grid-wide and cluster cooperative groups are not emulated (blocks run one at a time)"),
    (r"\b(?:binary_partition|labeled_partition|invoke_one(?:_broadcast)?)\b",
     "cooperative groups' binary_partition, labeled_partition and invoke_one are not emulated"),
    (r"\b(?:asm|__asm__|__asm)\b", "inline PTX assembly cannot run on a CPU"),
    (r"\btex(?:1D|2D|3D|Cubemap)\w*", "textures are not emulated"),
    (r"\btexture\s*<|\bcudaTextureObject_t\b", "textures are not emulated"),
    (r"\bsurf(?:1D|2D|3D|Cubemap)\w*|\bcudaSurfaceObject_t\b", "surfaces are not emulated"),
    (r"\bclock(?:64)?\s*\(|\b__globaltimer\b", "GPU clocks have no meaning on the emulator"),
    (r"\b__nanosleep\b", "GPU clocks have no meaning on the emulator"),
    (r"\b__(?:trap|brkpt)\b", "a device trap would end the Python process"),
    (r"\b__(?:isGlobal|isShared|isConstant|isLocal|isGridConstant|cvta_\w+)\b",
     "address-space queries have no CPU equivalent"),
    (r"\b(?:pipeline_shared_state|__pipeline_arrive_on|__mbarrier\w*|awbarrier)\b",
     "block-scoped pipelines and asynchronous barriers are not emulated (use __pipeline_wait_prior or a thread-scope cuda::pipeline)"),
    (r"\b__cluster_dims__\b", "thread block clusters are not emulated"),
    (r"\b(?:wmma|nvcuda|mma_sync|__hmma\w*|__imma\w*)\b", "tensor-core (wmma/mma) operations are not emulated"),
    (r"\b__nv_fp8\w*|\b__nv_fp6\w*|\b__nv_fp4\w*", "8-, 6- and 4-bit float types are not emulated"),
    (r"<<<", "device-side kernel launches (dynamic parallelism) are not emulated"),
)
_UNSUPPORTED_RE = re.compile("|".join(f"(?P<u{i}>{p})" for i, (p, _) in enumerate(UNSUPPORTED)))
# Device headers the emulator does not provide (it provides cuda_fp16.h,
# cuda_bf16.h, cooperative_groups.h and its reduce, scan and memcpy_async
# parts, cuda_pipeline.h, cuda_pipeline_primitives.h and <cuda/pipeline>).
_CUDA_HEADER_RE = re.compile(
    r"(?:cooperative_groups|mma|cuda_fp16|cuda_bf16|cuda_fp8|cuda_fp6|cuda_fp4|cuda_pipeline|cuda_awbarrier|"
    r"sm_\d+_intrinsics|cuda/|cub/|thrust/)"
)
_MISSING_HEADER_RE = re.compile(
    r"^(?P<location>.+?:\d+):\d+: fatal error: (?P<header>[^:]+): No such file or directory"
)
_EXTERN_SHARED_RE = re.compile(r"\bextern\s+__shared__\b(?P<declaration>[^;]*);")
_ALIGNMENT_RE = re.compile(r"\b(?:__align__|alignas)\s*\(\s*[^()]*\)")
_UNBOUNDED_ARRAY_RE = re.compile(r"^(?P<type>.*\S)\s*\b(?P<name>[A-Za-z_]\w*)\s*\[\s*\]\s*$", re.DOTALL)
_STATIC_SHARED_RE = re.compile(r"\bstatic(?=\s+__shared__\b)")
_LAUNCH_BOUNDS_RE = re.compile(r"\b__launch_bounds__\s*\(")
_FUNCTION_NAME_RE = re.compile(r"[^;{}()]*?\b(?P<name>[A-Za-z_]\w*)\s*\(")


@dataclass(frozen=True)
class EmulatorSource:
    """A kernel source ready for g++: comments removed, rewrites applied."""

    code: str
    # kernel name -> the C++ expression of its __launch_bounds__ thread limit
    launch_bounds: dict[str, str] = field(default_factory=dict)
    # code with comments, string and character literals blanked, for lookups
    bare_code: str = ""


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _blank(text: str) -> str:
    return re.sub(r"[^\n]", " ", text)


def _strip(text: str) -> tuple[str, str]:
    """Returns (text without comments, text without comments and literals).

    Both keep every newline and every column.
    """
    code, bare = [], []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            code.append(_blank(text[i:end]))
            bare.append(_blank(text[i:end]))
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            code.append(_blank(text[i:end]))
            bare.append(_blank(text[i:end]))
        elif c in "\"'" and not (c == "'" and i > 0 and text[i - 1].isalnum()):
            # A quote right after a digit is a digit separator (1'000), not a literal.
            end = i + 1
            while end < n and text[end] != c and text[end] != "\n":
                end += 2 if text[end] == "\\" else 1
            end = min(end + 1, n)
            code.append(text[i:end])
            bare.append(c + _blank(text[i + 1 : end - 1]) + text[end - 1 : end])
        else:
            end = i + 1
            code.append(c)
            bare.append(c)
        i = end
    return "".join(code), "".join(bare)


_LINE_MARKER_RE = re.compile(r'^# (?P<line>\d+) "(?P<file>(?:[^"\\]|\\.)*)"')


def find_unsupported(preprocessed: str, quoted_name: str, source_name: str) -> None:
    """Raises BuildError for the first unsupported construct in g++ -E output.

    Only lines that the line markers attribute to the kernel source are read
    (``quoted_name`` is its name as written in ``#line``), so code that the
    preprocessor dropped (``#if __CUDA_ARCH__ >= 800``) or that comes from
    system headers does not count, and a macro counts where it is used.
    """
    current, line = "", 0
    for text in preprocessed.splitlines():
        marker = _LINE_MARKER_RE.match(text)
        if marker is not None:
            current, line = marker["file"], int(marker["line"])
            continue
        if current == quoted_name and (match := _UNSUPPORTED_RE.search(_strip(text)[1])) is not None:
            reason = UNSUPPORTED[int(match.lastgroup[1:])][1]
            name = re.match(r"\w+|<<<", match.group()).group()
            msg = f"{source_name}:{line}: unsupported on the emulator: {name} ({reason})"
            raise BuildError(msg)
        line += 1


def missing_cuda_header(error_line: str) -> str | None:
    """The message for g++ failing to find a CUDA device header, or None."""
    match = _MISSING_HEADER_RE.match(error_line)
    if match is None or _CUDA_HEADER_RE.match(match["header"]) is None:
        return None
    header = match["header"]
    reason = "CUDA device headers are not emulated"
    return f"{match['location']}: unsupported on the emulator: #include <{header}> ({reason})"


def _rewrite_extern_shared(code: str, source_name: str) -> str:
    def replace(match: re.Match[str]) -> str:
        declaration = _ALIGNMENT_RE.sub(" ", match["declaration"])
        parts = _UNBOUNDED_ARRAY_RE.match(declaration)
        if parts is None:
            line = _line_of(code, match.start())
            msg = (
                f"{source_name}:{line}: unsupported on the emulator: this extern __shared__ "
                "declaration (write one array of unknown size: extern __shared__ T name[];)"
            )
            raise BuildError(msg)
        kind, name = " ".join(parts["type"].split()), parts["name"]
        buffer = "::aotc_emu::dynamic_shared_memory()"
        rewritten = f"{kind} (&{name})[] = *reinterpret_cast<{kind} (*)[]>({buffer});"
        return rewritten + "\n" * match.group().count("\n")

    return _EXTERN_SHARED_RE.sub(replace, code)


def _closing_paren(text: str, open_index: int) -> int:
    depth = 0
    for i in range(open_index, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _first_argument(arguments: str) -> str:
    depth = 0
    for i, c in enumerate(arguments):
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "," and depth == 0:
            return arguments[:i]
    return arguments


def _launch_bounds(bare: str) -> dict[str, str]:
    bounds = {}
    for match in _LAUNCH_BOUNDS_RE.finditer(bare):
        line_start = bare.rfind("\n", 0, match.start()) + 1
        if bare[line_start : match.start()].lstrip().startswith("#"):
            continue  # inside a macro definition
        close = _closing_paren(bare, match.end() - 1)
        name = _FUNCTION_NAME_RE.match(bare, close + 1) if close >= 0 else None
        if name is not None:
            bounds[name["name"]] = " ".join(_first_argument(bare[match.end() : close]).split())
    return bounds


def translate_source(text: str, source_name: str) -> EmulatorSource:
    """Rewrites one kernel source; raises BuildError naming the line."""
    code, bare = _strip(text)
    code = _STATIC_SHARED_RE.sub("      ", code)
    code = _rewrite_extern_shared(code, source_name)
    return EmulatorSource(code=code, launch_bounds=_launch_bounds(bare), bare_code=bare)
