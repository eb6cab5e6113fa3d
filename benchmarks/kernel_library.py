"""Write a synthetic kernel library of N tiny kernels: a project to build, list and load at scale.

Each kernel is ``y[i] = x[i] * a + b`` over f32 (one per point of a family
whose axes exist only to make points), the smallest kernel a real library
holds: what it costs to build, index, load and call is aotc's own overhead,
not the compiler's work on a heavy kernel. The points are spread over as few
axes of at most 64 values as N needs, and a last matrix block makes the count
exact, so any N is one family::

    python benchmarks/kernel_library.py 2048 /tmp/lib2048            # the project
    aotc list /tmp/lib2048/kernels/manifest.yaml
    cmake -S /tmp/lib2048 -B /tmp/lib2048/build -G Ninja -DAOTC_ARCHS=80 && cmake --build /tmp/lib2048/build

The project is a scikit-build-core package (``pip install /tmp/lib2048``
builds a wheel named ``scale-kernels-<n>``, its library found by name through
the ``aotc.libraries`` entry point as ``scale<n>``) and a plain CMake project
(``find_package(aotc)``). ``--edit K`` rewrites kernel K's constant only, the
one-kernel manifest edit the incremental-build figures time.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

__all__ = ["axes_for", "point_of", "write_library"]

AXIS_VALUES = 64  # each axis of the synthetic family holds at most this many values

TEMPLATE = """\
// {{ kernel_name }}: y = x * a + b, point {{ point }} of a synthetic library.
extern "C" __global__ void __launch_bounds__(256) {{ kernel_name }}({{ params }})
{
    const long long i = (long long)blockIdx.x * 256 + threadIdx.x;
    if (i < n) y[i] = x[i] * a + b + {{ bias }}.0f;
}
"""


def axes_for(count: int) -> list[int]:
    """How many values each axis takes so that their product is at least ``count``."""
    axes = []
    left = max(count, 1)
    while left > 1 or not axes:
        size = min(AXIS_VALUES, left)
        axes.append(size)
        left = math.ceil(left / size)
    return axes


def _matrix(sizes: list[int], count: int) -> list[dict[str, list[int]]]:
    """Matrix blocks over axes of ``sizes`` whose points number exactly ``count``:
    whole slabs along the last axis, then the rest of the last slab, recursively."""
    if len(sizes) == 1:
        return [{"p0": list(range(count))}]
    inner = math.prod(sizes[:-1])
    last = f"p{len(sizes) - 1}"
    full, rest = divmod(count, inner)
    blocks: list[dict[str, list[int]]] = []
    if full:
        blocks.append({last: list(range(full))})
    if rest:
        for block in _matrix(sizes[:-1], rest):
            blocks.append({**block, last: [full]})
    return blocks


def manifest_text(count: int, library: str, archs: str, edit: int | None = None) -> str:
    sizes = axes_for(count)
    lines = [
        f"# {count} kernels of y = x * a + b, written by benchmarks/kernel_library.py.",
        f"library: {library}",
        "templates: templates",
        f"archs: {{sass: [{archs}], ptx: [{archs.split(',')[-1]}]}}",
        "families:",
        "  axpb:",
        "    template: axpb.cu.j2",
        "    axes:",
        *(f"      p{i}: [{', '.join(map(str, range(size)))}]" for i, size in enumerate(sizes)),
        f"    name: \"axpb_{'_'.join(f'{{p{i}}}' for i in range(len(sizes)))}\"",
        "    constants:",
        "      - {bias: 0}",
    ]
    if edit is not None:
        point = point_of(edit, sizes)
        lines.append(f"      - {{when: {{{', '.join(f'p{i}: {v}' for i, v in enumerate(point))}}}, bias: 1}}")
    lines += [
        "    signature:",
        "      x: {array: f32, role: in, shape: [n]}",
        "      y: {array: f32, role: out, shape: [n]}",
        "      n: i32",
        "      a: f32",
        "      b: f32",
        "    launch:",
        "      grid: [\"cdiv(n, 256)\"]",
        "      block: [256]",
    ]
    blocks = _matrix(sizes, count)
    if len(blocks) > 1 or math.prod(sizes) != count:
        lines.append("    matrix:")
        for block in blocks:
            lines.append("      - {" + ", ".join(f"{axis}: [{', '.join(map(str, values))}]" for axis, values in block.items()) + "}")
    return "\n".join(lines) + "\n"


def point_of(index: int, sizes: list[int]) -> list[int]:
    """The axis values of the ``index``-th point, the first axis fastest."""
    point = []
    for size in sizes:
        index, value = divmod(index, size)
        point.append(value)
    return point


def _write(path: Path, text: str) -> None:
    """Write ``path`` only where its text changes, as an editor saving one file leaves
    the others: a rewritten CMakeLists.txt would make every edit a reconfigure."""
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)


def write_library(root: Path, count: int, *, library: str | None = None, archs: str = "80", edit: int | None = None) -> Path:
    """Write the project of ``count`` kernels under ``root`` (only the files whose text
    changes, so ``edit=`` touches the manifest alone); returns its manifest's path."""
    library = library or f"scale{count}"
    (root / "kernels" / "templates").mkdir(parents=True, exist_ok=True)
    _write(root / "kernels" / "templates" / "axpb.cu.j2", TEMPLATE.replace("{{ point }}", "{{ p0 }}"))
    manifest = root / "kernels" / "manifest.yaml"
    _write(manifest, manifest_text(count, library, archs, edit))
    package = root / library
    package.mkdir(exist_ok=True)
    _write(package / "__init__.py", f'"""{count} synthetic kernels (benchmarks/kernel_library.py)."""\n')
    _write(
        root / "CMakeLists.txt",
        "cmake_minimum_required(VERSION 3.24)\n"
        f"project({library} LANGUAGES NONE)\n"
        "find_package(aotc CONFIG REQUIRED)\n"
        f"aotc_add_kernel_library({library} MANIFEST kernels/manifest.yaml INSTALL_DIR {library}/_kernels)\n"
    )
    _write(
        root / "pyproject.toml",
        '[build-system]\nrequires = ["scikit-build-core>=0.10", "aotc"]\nbuild-backend = "scikit_build_core.build"\n\n'
        f'[project]\nname = "scale-kernels-{count}"\nversion = "0.1.0"\nrequires-python = ">=3.10"\ndependencies = ["aotc"]\n\n'
        f'[project.entry-points."aotc.libraries"]\n{library} = "{library}._kernels"\n\n'
        f'[tool.scikit-build]\nbuild-dir = "build/{{wheel_tag}}"\nwheel.packages = ["{library}"]\nwheel.py-api = "py3"\nwheel.platlib = false\n'
    )
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("count", type=int, help="how many kernels")
    parser.add_argument("root", type=Path, help="the project's folder (made if missing)")
    parser.add_argument("--library", help="the library's name (default: scale<count>)")
    parser.add_argument("--archs", default="80", help="the manifest's SASS architectures, comma-separated (default 80)")
    parser.add_argument("--edit", type=int, metavar="K", help="give kernel K (0-based) another constant: a one-kernel edit")
    args = parser.parse_args(argv)
    if args.count < 1:
        parser.error("count must be at least 1")
    manifest = write_library(args.root, args.count, library=args.library, archs=args.archs, edit=args.edit)
    print(manifest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
