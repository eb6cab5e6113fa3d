"""The steps aotc's CMake functions run: plan, generate, index.

Compiling is not here: ``aotc.build.compile`` runs once per batch of kernels and
must start fast, so it imports neither Jinja2 nor PyYAML; nor does the index
step import Jinja2, which only codegen needs.

This is an internal command line (``python -m aotc.build.tool``); its only
caller is ``aotcConfig.cmake``. Each step reads the manifest itself, so the
build never passes kernel data through CMake strings.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path

from aotc.archs import MIN_ARCH, MIN_ARCH_CUDA12, parse_arch_list
from aotc.errors import ArchError
from aotc.build._files import write_if_changed
from aotc.errors import AotcError, BuildError, ManifestError
from aotc.build._index_memo import IndexMemo
from aotc.build.index_writer import build_index, dumps, entry_of
from aotc.index.schema import CHECKSUM_KEY, INDEX_NAME, SOURCE_DIR
from aotc.build.manifest import Manifest, load_manifest

__all__ = ["main"]


def _cmake_list(values: tuple[str, ...] | list[str]) -> str:
    return ";".join(values)


def _load(args: argparse.Namespace) -> Manifest:
    manifest = load_manifest(args.manifest)
    overrides = {}
    min_arch = MIN_ARCH_CUDA12 if args.cuda == "12" else MIN_ARCH
    for key, value, source in (("sass", args.archs, args.archs_source), ("ptx", args.ptx, args.ptx_source)):
        if value:
            try:
                overrides[key] = parse_arch_list(value, min_arch)
            except ArchError as exc:
                msg = f"{source}={value!r}: {exc}"
                raise ManifestError(msg) from None
    return manifest.with_archs(**overrides)


def _plan(args: argparse.Namespace) -> None:
    """Write a CMake include file listing the kernels and the resolved archs."""
    manifest = _load(args)
    if args.library != manifest.library:
        msg = f"{manifest.path}: library is {manifest.library!r}, but aotc_add_kernel_library() names {args.library!r}"
        raise ManifestError(msg)
    templates = sorted(str(p.resolve()) for p in manifest.templates_dir.rglob("*") if p.is_file())
    lines = [
        "# Written by aotc at configure time; do not edit.",
        f'set(_aotc_kernels "{_cmake_list([k.name for k in manifest.kernels])}")',
        f'set(_aotc_sass "{_cmake_list(manifest.archs.sass)}")',
        f'set(_aotc_ptx "{_cmake_list(manifest.archs.ptx)}")',
        f'set(_aotc_templates "{_cmake_list(templates)}")',
    ]
    write_if_changed(Path(args.out), ("\n".join(lines) + "\n").encode("utf-8"))
    if args.stamp:  # the build-time check ran (its output may be untouched: ninja restats it)
        Path(args.stamp).write_text(f"{len(manifest.kernels)} kernels\n")


def _generate(args: argparse.Namespace) -> None:
    from aotc.build.codegen import generate  # Jinja2: only this step renders

    manifest = _load(args)
    result = generate(manifest, args.out_dir)
    if args.stamp:
        Path(args.stamp).write_text(f"{len(result.written)} written, {len(result.unchanged)} unchanged\n")
    for path in result.written:
        print(f"aotc: generated {path.name}")


def _toolkit(args: argparse.Namespace) -> dict[str, object]:
    """What built the images, and the oldest driver that loads them (cuDriverGetVersion units)."""
    return {
        "compiler": args.compiler,
        "version": args.compiler_version,
        "cuda_major": int(args.cuda),
        "min_driver": int(args.min_driver),
        "wheel": args.wheel,
        "compression": args.compression,
    }


def _stage(staged: str, built: str) -> None:
    """Put ``built`` at ``staged``: a hard link where the file system allows, so a
    staged file that is already the built one costs a stat, not a read; else a
    copy, rewritten only when its bytes change."""
    try:
        if os.path.samestat(os.lstat(staged), os.stat(built)):  # lstat: a link planted there is replaced
            return
    except OSError:
        pass
    temp = f"{staged}.{os.getpid()}.link"
    try:
        os.makedirs(os.path.dirname(staged), exist_ok=True)
        os.link(built, temp)
        os.replace(temp, staged)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        write_if_changed(Path(staged), Path(built).read_bytes())


def _remove_stale(stage: str, keep: set[str]) -> None:
    """Remove the staged fatbins and sources no kernel of the library names."""
    for folder, suffix in ((stage, ".fatbin"), (os.path.join(stage, SOURCE_DIR), ".cu")):
        try:
            names = os.listdir(folder)
        except FileNotFoundError:
            continue
        for name in names:
            relative = name if folder == stage else f"{SOURCE_DIR}/{name}"
            if name.endswith(suffix) and relative not in keep:
                os.unlink(os.path.join(folder, name))


def _index(args: argparse.Namespace) -> None:
    """Stage fatbins and sources under their installed names, then index them.

    The memo (``aotc.build._index_memo``) spares the files and entries that did
    not change since the last run; the index is the same bytes without it."""
    manifest = _load(args)
    memo = IndexMemo(args.memo)
    stage = str(args.stage)
    index_path = os.path.join(stage, INDEX_NAME)
    sealed = memo.sealed_entries(index_path)
    entries, current = {}, set()
    # os.path, not pathlib, in this loop: it runs for every kernel of the library.
    for kernel in manifest.kernels:
        fatbin_path = os.path.join(args.fatbin_dir, f"{kernel.name}.fatbin")
        fatbin = memo.file_digest(fatbin_path, f"{fatbin_path}: no compiled fatbin for kernel {kernel.name}")
        source_path = os.path.join(args.gen_dir, f"{kernel.name}.cu")  # codegen.source_name
        source = memo.file_digest(source_path, f"{source_path}: no generated source for kernel {kernel.name}")
        try:
            resources = memo.resources(os.path.join(args.gen_dir, f"{kernel.name}.resources.txt"), kernel.symbol)
        except BuildError as exc:  # the template's declaration is at fault: name it
            raise BuildError(f"{manifest.templates_dir / kernel.template}: {exc}") from None
        entry = entry_of(kernel, manifest, fatbin, source, resources)
        old = sealed.get(kernel.name)
        if isinstance(old, dict) and CHECKSUM_KEY in old and {k: v for k, v in old.items() if k != CHECKSUM_KEY} == entry:
            entry[CHECKSUM_KEY] = old[CHECKSUM_KEY]
            current.add(kernel.name)
        _stage(os.path.join(stage, entry["fatbin"]["file"]), fatbin_path)
        _stage(os.path.join(stage, entry["source"]["file"]), source_path)
        entries[kernel.name] = entry
    _remove_stale(stage, {e[part]["file"] for e in entries.values() for part in ("fatbin", "source")})
    data = dumps(build_index(manifest, entries, _toolkit(args), current))
    if not write_if_changed(Path(index_path), data):
        # The build tool judges this step by index.json's age: mark it current.
        os.utime(index_path)
    memo.save(data)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m aotc.build.tool")
    steps = parser.add_subparsers(dest="step", required=True)
    for name, func in (("plan", _plan), ("generate", _generate), ("index", _index)):
        step = steps.add_parser(name)
        step.set_defaults(func=func)
        step.add_argument("--manifest", required=True)
        step.add_argument("--archs", default="")
        step.add_argument("--archs-source", default="ARCHS")
        step.add_argument("--ptx", default="")
        step.add_argument("--ptx-source", default="PTX")
        step.add_argument("--cuda", default="13", help="the CUDA lane: 12 also builds sm_70 and sm_72")
        if name == "plan":
            step.add_argument("--library", required=True)
            step.add_argument("--out", required=True)
            step.add_argument("--stamp", default="")
        elif name == "generate":
            step.add_argument("--out-dir", required=True)
            step.add_argument("--stamp", default="")
        else:
            step.add_argument("--fatbin-dir", required=True)
            step.add_argument("--gen-dir", required=True)
            step.add_argument("--stage", required=True)
            step.add_argument("--compiler", required=True)
            step.add_argument("--compiler-version", required=True)
            step.add_argument("--min-driver", required=True)
            step.add_argument("--wheel", default="")
            step.add_argument("--compression", default="")
            step.add_argument("--memo", default="", help="the index step's memo file (aotc.build._index_memo); none if empty")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        args.func(args)
    except AotcError as exc:
        print(f"aotc: error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, ManifestError) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
