"""The steps aotc's CMake functions run: plan, generate, index.

Compiling is not here: ``aotc.build.compile`` runs once per kernel and must start
fast, so it imports neither Jinja2 nor PyYAML.

This is an internal command line (``python -m aotc.build.tool``); its only
caller is ``aotcConfig.cmake``. Each step reads the manifest itself, so the
build never passes kernel data through CMake strings.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from aotc.build.resources import parse_resource_report
from aotc.archs import MIN_ARCH, MIN_ARCH_CUDA12, parse_arch_list
from aotc.errors import ArchError
from aotc.build._files import write_if_changed
from aotc.build.codegen import generate, source_name
from aotc.errors import AotcError, BuildError, ManifestError
from aotc.build.index_writer import build_index, dumps, kernel_entry
from aotc.index.schema import INDEX_NAME, SOURCE_DIR
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


def _generate(args: argparse.Namespace) -> None:
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


def _index(args: argparse.Namespace) -> None:
    """Stage fatbins and sources under their installed names, then index them."""
    manifest = _load(args)
    stage = Path(args.stage)
    gen_dir = Path(args.gen_dir)
    fatbin_dir = Path(args.fatbin_dir)
    entries = {}
    for kernel in manifest.kernels:
        fatbin_path = fatbin_dir / f"{kernel.name}.fatbin"
        if not fatbin_path.is_file():
            msg = f"{fatbin_path}: no compiled fatbin for kernel {kernel.name}"
            raise BuildError(msg)
        fatbin = fatbin_path.read_bytes()
        source = (gen_dir / source_name(kernel)).read_bytes()
        report = gen_dir / f"{kernel.name}.resources.txt"
        resources = parse_resource_report(report.read_text(errors="replace"), kernel.symbol) if report.is_file() else {}
        entry = kernel_entry(kernel, manifest, fatbin, source, resources)
        write_if_changed(stage / entry["fatbin"]["file"], fatbin)
        write_if_changed(stage / entry["source"]["file"], source)
        entries[kernel.name] = entry
    keep = {e[part]["file"] for e in entries.values() for part in ("fatbin", "source")} | {INDEX_NAME}
    for stale in [*stage.glob("*.fatbin"), *(stage / SOURCE_DIR).glob("*.cu")]:
        if stale.relative_to(stage).as_posix() not in keep:
            stale.unlink()
    index = build_index(manifest, entries, _toolkit(args))
    index_path = stage / INDEX_NAME
    if not write_if_changed(index_path, dumps(index)):
        # The build tool judges this step by index.json's age: mark it current.
        os.utime(index_path)


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
