"""The ``aotc`` command line.

Exit codes: 0 ok, 1 an expected failure (any ``AotcError``: a malformed
manifest, a checksum mismatch, a missing library), 2 a usage error that
argparse reports. Expected failures print one line and no traceback;
anything else escaping is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from collections.abc import Sequence

from aotc._version import __version__
from aotc.errors import AotcError

__all__ = ["main"]


def _table(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


def _cmd_list(args: argparse.Namespace) -> int:
    from aotc.build.manifest import load_manifest

    manifest = load_manifest(args.manifest)
    print(f"library {manifest.library}: {len(manifest.kernels)} kernels")
    print(f"SASS {', '.join(manifest.archs.sass)}; PTX {', '.join(manifest.archs.ptx)}")
    rows = [("kernel", "family", "axes", "template", "parameters", "grid", "block", "static smem", "dynamic smem")]
    for k in manifest.kernels:
        axes = " ".join(f"{axis}={value}" for axis, value in k.axes)
        params = ", ".join(f"{p.ctype} {p.name}" for p in k.params)
        launch = k.launch
        grid = ", ".join(extent if tile == 1 else f"cdiv({extent}, {tile})" for extent, tile in launch.grid)
        block = "x".join(map(str, launch.block))
        rows.append((k.name, k.family, axes, k.template, params, grid, block, str(launch.shared_bytes_static), str(launch.shared_bytes_dynamic)))
    print(_table(rows))
    return 0


def _cmd_generate(args: argparse.Namespace) -> int:
    from aotc.build.codegen import generate
    from aotc.build.manifest import load_manifest

    result = generate(load_manifest(args.manifest), args.output)
    print(
        f"{args.output}: {len(result.written)} written, {len(result.unchanged)} unchanged, "
        f"{len(result.removed)} removed"
    )
    return 0


def _cmd_inspect(args: argparse.Namespace) -> int:
    from aotc.inspect import inspect_target
    from aotc._units import byte_size

    failed = False
    for report in inspect_target(args.target):
        index = report.index
        print(
            f"{index.get('library', '?')}: {report.where} "
            f"(aotc {index.get('aotc_version', '?')}, {index.toolkit_label()})"
        )
        archs = report.archs()
        rows = [("kernel", *(f"sm_{a}" for a in archs), "regs", "spill", "size", "check")]
        for k in report.kernels:
            cells = []
            for arch in archs:
                kinds = [kind for kind, present in (("SASS", arch in k.sass), ("PTX", arch in k.ptx)) if present]
                cells.append("+".join(kinds) or "missing")
            usage = ["-" if v is None else str(v) for v in (k.max_registers, k.spill_stores)]
            rows.append((k.name, *cells, *usage, byte_size(k.size), "FAILED" if k.problems else "ok"))
        print(_table(rows))
        total = sum(k.size for k in report.kernels)
        for problem in report.problems:
            print(f"aotc: error: {problem}", file=sys.stderr)
        if report.problems:
            failed = True
            print(f"{len(report.kernels)} kernels, {byte_size(total)}; {len(report.problems)} problems")
        else:
            print(
                f"{len(report.kernels)} kernels, {byte_size(total)}; the index's checksums hold "
                "and every fatbin and source matches its sha256"
            )
    return 1 if failed else 0


def _capability(text: str) -> tuple[int, int]:
    """``--arch 8.7``: a compute capability, written the way NVIDIA writes it."""
    major, dot, minor = text.strip().partition(".")
    if not (dot and major.isdigit() and minor.isdigit() and len(minor) == 1 and int(major) >= 1):
        msg = f"{text!r} is not a compute capability; write it as X.Y, e.g. 8.7"
        raise argparse.ArgumentTypeError(msg)
    return int(major), int(minor)


def _byte_count(text: str) -> int:
    """``--max-bytes``: a whole number of bytes, 0 or more (-5 once emptied the cache)."""
    value = text.strip()
    if not value.isdigit() or len(value) > 20:
        msg = f"{text!r} is not a size in bytes (a whole number, 0 or more)"
        raise argparse.ArgumentTypeError(msg)
    return int(value)


def _jobs(text: str) -> int:
    """``-j``: how many compiler processes, 1 or more."""
    value = text.strip()
    if not value.isdigit() or len(value) > 6 or int(value) < 1:
        msg = f"{text!r} is not a number of processes (1 or more)"
        raise argparse.ArgumentTypeError(msg)
    return int(value)


def _cmd_doctor(args: argparse.Namespace) -> int:
    from aotc.errors import CacheWarning
    from aotc.runtime.doctor import diagnose

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheWarning)  # the report states the cache and its reason itself
        report = diagnose(arch=args.arch, driver=args.driver, libraries=args.library)
    print("\n".join(report.lines))
    if report.no_device and args.arch is None:
        # Asked about this machine, which has no GPU: the way out is the last line, and a failure.
        # (--arch asks about a device that is not here: no GPU is then the expected case.)
        print(f"aotc: error: {report.no_device}", file=sys.stderr)
        return 1
    return 1 if report.problems else 0


def _cmd_warm(args: argparse.Namespace) -> int:
    from aotc.runtime.cache import default_cache
    from aotc.runtime.select import jit_policy_from_env
    from aotc.runtime.warm import COMPILED, FAILED, HIT, NOT_NEEDED, plan_warm, run_warm
    from aotc.runtime.warm_report import make_report

    capability = args.arch
    if capability is None:  # this machine's GPU, or the one-line reason there is none
        from aotc.errors import ConfigurationError
        from aotc.runtime.backends import get_backend

        backend = get_backend()
        capability = backend.device().capability
        if backend.image_format == "source":
            msg = f"--arch: the {backend.name} backend compiles each kernel's source itself and JITs nothing; name a GPU's arch (--arch X.Y)"
            raise ConfigurationError(msg)
    plan = plan_warm(args.library, capability, kernels=args.kernel, policy=jit_policy_from_env(os.environ))
    cache = default_cache()
    arch = f"sm_{capability[0]}{capability[1]}"
    print(
        f"warming {plan.library} ({plan.directory}) for {arch} with NVRTC "
        f"{plan.nvrtc.version[0]}.{plan.nvrtc.version[1]} into {cache.directory}"
    )
    start = time.perf_counter()
    counts = dict.fromkeys((COMPILED, HIT, NOT_NEEDED, FAILED), 0)
    report = make_report(plan.order, sys.stdout, sys.stderr)  # progress in place on a terminal
    try:
        for result in run_warm(plan, cache=cache, jobs=args.jobs):
            counts[result.outcome] += 1
            report.result(result)
    finally:
        report.finish()
    summary = ", ".join(f"{n} {'hits' if outcome == HIT else outcome}" for outcome, n in counts.items())
    noun = "kernel" if len(plan.order) == 1 else "kernels"
    print(f"{len(plan.order)} {noun}: {summary} ({time.perf_counter() - start:.1f} s)")
    return 1 if counts[FAILED] else 0


def _cmd_cache(args: argparse.Namespace) -> int:
    import warnings

    from aotc.errors import CacheWarning
    from aotc._units import byte_size

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheWarning)  # info prints the state and its reason itself
        if args.build:
            from aotc._cache import DiskCache
            from aotc.build.fatbin_cache import ENV_MAX_BYTES, build_cache, build_cache_dir

            # Off (AOTC_BUILD_CACHE=0) for builds, but still there to look at and clear.
            cache, cap_setting = build_cache() or DiskCache(build_cache_dir()), ENV_MAX_BYTES
        else:
            from aotc.runtime.cache import default_cache

            cache, cap_setting = default_cache(), "AOTC_CACHE_MAX_BYTES"
        if args.action == "info":
            info = cache.info()
            print(f"directory: {info.directory}")
            print(f"state:     {info.state}" + (f" ({info.reason})" if info.reason else ""))
            print(f"entries:   {info.entries}, {byte_size(info.total_bytes)} of {byte_size(info.max_bytes)} ({cap_setting})")
        elif args.action == "clear":
            removed = cache.clear()
            extra = ""
            if not args.build:
                from aotc.runtime.cache import answers_cache

                answers = answers_cache()  # NVRTC's answers, in a folder of the cache's own
                extra = f" (and {answers.clear()} NVRTC answers)" if answers.directory.is_dir() else ""
                from aotc._entry_points import forget
                from aotc.index._verified import forget as forget_verified

                forgotten = forget()  # the kept aotc.libraries entry points
                extra += f" (and {forgotten} kept library-name lookups)" if forgotten else ""
                verified = forget_verified()  # the records of kernel files already hashed
                extra += f" (and {verified} records of verified files)" if verified else ""
            print(f"{cache.directory}: removed {removed} entries{extra}")
        else:
            removed = cache.prune(args.max_bytes)
            info = cache.info()
            print(f"{cache.directory}: removed {removed} entries; {info.entries} entries, {byte_size(info.total_bytes)} remain")
    return 0


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

    doctor_cmd = commands.add_parser(
        "doctor", help="print the backend, device, NVRTC, cache, and which image every kernel would load"
    )
    doctor_cmd.add_argument("--arch", type=_capability, metavar="X.Y", help="decide for a device of this compute capability")
    doctor_cmd.add_argument("--driver", type=_capability, metavar="X.Y", help="the CUDA version of that device's driver")
    doctor_cmd.add_argument(
        "--library", action="append", default=[], metavar="NAME", help="an installed library or a folder (repeatable)"
    )
    doctor_cmd.set_defaults(func=_cmd_doctor)

    warm_cmd = commands.add_parser(
        "warm", help="NVRTC-compile into the cache what a device of --arch (default: this GPU) would JIT, ahead of time"
    )
    warm_cmd.add_argument(
        "--arch", type=_capability, metavar="X.Y", help="the target compute capability (default: this machine's GPU)"
    )
    warm_cmd.add_argument("--kernel", action="append", default=[], metavar="NAME", help="only this kernel (repeatable)")
    warm_cmd.add_argument("--library", default="tropical", metavar="NAME", help="an installed library or a folder")
    warm_cmd.add_argument("-j", "--jobs", type=_jobs, default=None, help="compiler processes (default: one per CPU)")
    warm_cmd.set_defaults(func=_cmd_warm)

    cache_cmd = commands.add_parser(
        "cache", help="the disk cache of JIT products (AOTC_CACHE_DIR), or with --build the build's fatbin cache"
    )
    which = argparse.ArgumentParser(add_help=False)
    which.add_argument(
        "--build", action="store_true", default=argparse.SUPPRESS,
        help="the build's fatbin cache (AOTC_BUILD_CACHE_DIR) instead of the JIT cache",
    )  # fmt: skip
    cache_cmd.add_argument("--build", action="store_true", help="the build's fatbin cache (AOTC_BUILD_CACHE_DIR)")
    cache_actions = cache_cmd.add_subparsers(dest="action", required=True, metavar="ACTION")
    cache_actions.add_parser("info", parents=[which], help="where it is, its state, entries and size")
    cache_actions.add_parser("clear", parents=[which], help="remove every entry")
    prune_cmd = cache_actions.add_parser(
        "prune", parents=[which], help="evict least recently used entries down to the size cap"
    )
    prune_cmd.add_argument(
        "--max-bytes", type=_byte_count, default=None,
        help="the cap to prune to (default: AOTC_CACHE_MAX_BYTES, or AOTC_BUILD_CACHE_MAX_BYTES with --build)",
    )  # fmt: skip
    cache_cmd.set_defaults(func=_cmd_cache)
    return parser


def _print_warning(message: Warning | str, category: type[Warning], *_where: object, **_line: object) -> None:
    """A warning on the command line is one line a person can act on, never
    Python's file path, line number and source line."""
    text = str(message).strip().splitlines()[0] if str(message).strip() else category.__name__
    print(f"aotc: warning: {text.removeprefix('aotc: ')}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    with warnings.catch_warnings():
        warnings.showwarning = _print_warning
        try:
            return args.func(args)
        except AotcError as exc:
            print(f"aotc: error: {exc}", file=sys.stderr)
            return 1
        except BrokenPipeError:
            return 1
