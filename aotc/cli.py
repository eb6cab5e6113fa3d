"""The ``aotc`` command line.

Exit codes: 0 ok, 1 failure (for example a checksum mismatch), 2 usage or
input error (for example a malformed manifest). Expected failures print one
line and no traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from aotc._version import __version__
from aotc.errors import AotcError, ManifestError

__all__ = ["main"]


def _table(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


def _size(n: int) -> str:
    return f"{n / 1024:.1f} KiB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.2f} MiB"


def _cmd_list(args: argparse.Namespace) -> int:
    from aotc.manifest import load_manifest

    manifest = load_manifest(args.manifest)
    print(f"library {manifest.library}: {len(manifest.kernels)} kernels")
    print(f"SASS {', '.join(manifest.archs.sass)}; PTX {', '.join(manifest.archs.ptx)}")
    rows = [("kernel", "semiring", "dtype", "pass", "variant", "template", "tile (MxNxK/thread)", "threads", "smem")]
    for k in manifest.kernels:
        t = k.tile
        tile = f"{t.block_m}x{t.block_n}x{t.block_k}/{t.thread_m}x{t.thread_n}"
        smem = str(k.launch.shared_bytes_static)
        rows.append((k.name, k.semiring.name, k.dtype.name, k.pass_name, k.variant, k.template, tile, str(t.threads), smem))
    print(_table(rows))
    return 0


def _cmd_generate(args: argparse.Namespace) -> int:
    from aotc.codegen import generate
    from aotc.manifest import load_manifest

    result = generate(load_manifest(args.manifest), args.output)
    print(
        f"{args.output}: {len(result.written)} written, {len(result.unchanged)} unchanged, "
        f"{len(result.removed)} removed"
    )
    return 0


def _cmd_inspect(args: argparse.Namespace) -> int:
    from aotc.inspect import inspect_target

    failed = False
    for report in inspect_target(args.target):
        index = report.index
        print(
            f"{index.get('library', '?')}: {report.where} "
            f"(aotc {index.get('aotc_version', '?')}, nvcc {index.get('nvcc_version', '?')})"
        )
        archs = report.archs()
        rows = [("kernel", *(f"sm_{a}" for a in archs), "size", "check")]
        for k in report.kernels:
            cells = []
            for arch in archs:
                kinds = [kind for kind, present in (("SASS", arch in k.sass), ("PTX", arch in k.ptx)) if present]
                cells.append("+".join(kinds) or "missing")
            rows.append((k.name, *cells, _size(k.size), "FAILED" if k.problems else "ok"))
        print(_table(rows))
        total = sum(k.size for k in report.kernels)
        for problem in report.problems:
            print(f"aotc: error: {problem}", file=sys.stderr)
        if report.problems:
            failed = True
            print(f"{len(report.kernels)} kernels, {_size(total)}; {len(report.problems)} problems")
        else:
            print(f"{len(report.kernels)} kernels, {_size(total)}; every fatbin and source matches its sha256")
    return 1 if failed else 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="aotc", description="Ahead-of-time compiled CUDA kernel libraries.")
    parser.add_argument("--version", action="version", version=f"aotc {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    list_cmd = commands.add_parser("list", help="print the kernels a manifest expands to")
    list_cmd.add_argument("manifest")
    list_cmd.set_defaults(func=_cmd_list)

    gen_cmd = commands.add_parser("generate", help="render a manifest's kernel sources, without compiling")
    gen_cmd.add_argument("manifest")
    gen_cmd.add_argument("-o", "--output", required=True, help="folder for the .cu files")
    gen_cmd.set_defaults(func=_cmd_generate)

    inspect_cmd = commands.add_parser(
        "inspect", help="print a library's kernels x architectures and verify every checksum"
    )
    inspect_cmd.add_argument("target", help="a wheel, a library folder, an index.json, or an installed library name")
    inspect_cmd.set_defaults(func=_cmd_inspect)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return args.func(args)
    except ManifestError as exc:
        print(f"aotc: error: {exc}", file=sys.stderr)
        return 2
    except AotcError as exc:
        print(f"aotc: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 1
