"""Known bad inputs through the ``aotc`` command: one line naming the culprit, exit 1.

Each case runs the CLI in its own process, as a user would, so a traceback or
a hang anywhere below the command shows up here rather than in a bug report.
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import REPO, RunAotc

ROWOPS = REPO / "examples" / "rowops" / "kernels" / "manifest.yaml"

MANIFEST_HEAD = "library: x\nsemirings: {maxplus: {add: max, mul: add, zero: -inf, one: 0}}\n"


def _file(name: str, data: bytes) -> Callable[[Path], list[str]]:
    def setup(tmp: Path) -> list[str]:
        (tmp / name).write_bytes(data)
        return ["list", str(tmp / name)]

    return setup


def _index_bytes(data: bytes) -> Callable[[Path], list[str]]:
    def setup(tmp: Path) -> list[str]:
        (tmp / "lib").mkdir()
        (tmp / "lib" / "index.json").write_bytes(data)
        return ["inspect", str(tmp / "lib")]

    return setup


def _index(document: object) -> Callable[[Path], list[str]]:
    return _index_bytes(json.dumps(document).encode())


def _inspect_file(name: str, data: bytes) -> Callable[[Path], list[str]]:
    def setup(tmp: Path) -> list[str]:
        (tmp / name).write_bytes(data)
        return ["inspect", str(tmp / name)]

    return setup


def _wheel(members: dict[str, bytes]) -> Callable[[Path], list[str]]:
    def setup(tmp: Path) -> list[str]:
        with zipfile.ZipFile(tmp / "x-1-py3-none-any.whl", "w") as archive:
            for name, data in members.items():
                archive.writestr(name, data)
        return ["inspect", str(tmp / "x-1-py3-none-any.whl")]

    return setup


def _fifo(tmp: Path) -> list[str]:
    os.mkfifo(tmp / "m.yaml")
    return ["list", str(tmp / "m.yaml")]


def _link_to_fifo(tmp: Path) -> list[str]:
    os.mkfifo(tmp / "fifo")
    (tmp / "m.yaml").symlink_to(tmp / "fifo")
    return ["list", str(tmp / "m.yaml")]


def _sparse(tmp: Path) -> list[str]:
    with (tmp / "m.yaml").open("wb") as f:
        f.truncate(2 * 1024**3)  # 2 GiB of nothing: read up to the cap, never whole
    return ["list", str(tmp / "m.yaml")]


def _generate_into_a_file(tmp: Path) -> list[str]:
    (tmp / "out").write_text("a file, not a folder\n")
    return ["generate", str(ROWOPS), "-o", str(tmp / "out")]


# (case id, setup returning the argv, a fragment the one error line must hold)
CASES: list[tuple[str, Callable[[Path], list[str]], str]] = [
    ("list-missing-file", lambda t: ["list", str(t / "nope.yaml")], "nope.yaml: cannot read manifest"),
    ("list-a-directory", lambda t: ["list", str(t)], "cannot read manifest"),
    ("list-empty-file", _file("m.yaml", b""), "m.yaml:1"),
    ("list-not-utf8", _file("m.yaml", b"\x00\xff\xfe garbage"), "not UTF-8"),
    ("list-unclosed-list", _file("m.yaml", b"a: [1, 2\n"), "m.yaml:2"),
    ("list-missing-families", _file("m.yaml", b"library: x\n"), "'families'"),
    ("list-a-list-document", _file("m.yaml", b"- 1\n- 2\n"), "m.yaml:1"),
    ("list-python-tag", _file("m.yaml", b"library: !!python/object:os.system x\n"), "m.yaml:1"),
    ("list-duplicate-key", _file("m.yaml", MANIFEST_HEAD.encode() + b"library: y\n"), "library"),
    ("generate-bad-manifest", lambda t: ["generate", str(t / "nope.yaml"), "-o", str(t / "out")], "nope.yaml"),
    ("inspect-nothing-there", lambda t: ["inspect", str(t / "nope")], "not a wheel, a library folder"),
    ("inspect-not-a-zip", _inspect_file("w.whl", b"notzip"), "not a readable wheel"),
    ("inspect-wheel-without-library", _wheel({"a.txt": b"x"}), "holds no aotc kernel library"),
    ("inspect-wheel-bad-index", _wheel({"aotc/_lib/t/index.json": b"{"}), "index.json"),
    ("inspect-index-not-json", _index_bytes(b"{"), "index.json"),
    ("inspect-index-a-list", _index([]), "index.json"),
    ("inspect-index-other-schema", _index({"schema": 99, "kernels": {}}), "schema 99"),
    ("inspect-index-kernels-a-list", _index({"schema": 1, "kernels": []}), "index.json"),
    ("inspect-index-binary", _index_bytes(b"\xff\xfe\x00"), "index.json"),
    ("inspect-index-deeply-nested", _index_bytes(b"[" * 100_000 + b"]" * 100_000), "index.json"),
    ("warm-no-library", lambda t: ["warm", "--arch", "9.0", "--library", str(t / "nope")], "no kernel library"),
    # Issue 35: files that are not manifests, read through the untrusted-file reader (a FIFO hung `aotc list`).
    ("list-a-fifo", _fifo, "m.yaml: cannot read manifest: is a FIFO, not a regular file"),
    ("list-a-link-to-a-fifo", _link_to_fifo, "m.yaml: cannot read manifest: is a FIFO, not a regular file"),
    ("list-a-character-device", lambda t: ["list", "/dev/zero"], "/dev/zero: cannot read manifest: is a character device"),
    ("list-a-2-GiB-sparse-file", _sparse, "larger than 4096 KiB"),
    ("list-a-directory-names-it", lambda t: ["list", str(t)], "is a directory, not a regular file"),
    # `aotc generate -o <a file>` gave a FileExistsError traceback.
    ("generate-into-a-file", _generate_into_a_file, "out: exists and is not a folder"),
    ("generate-into-dev-null", lambda t: ["generate", str(ROWOPS), "-o", "/dev/null"], "/dev/null: exists and is not a folder"),
    # Names on the installed-library side.
    ("inspect-an-empty-name", lambda t: ["inspect", ""], "'': name a wheel, a library folder"),
    ("inspect-an-unknown-name", lambda t: ["inspect", "nosuchlib"], "no kernel library named 'nosuchlib'"),
    ("inspect-a-name-with-a-newline", lambda t: ["inspect", "nosuch\nlib"], "no kernel library named 'nosuch\\nlib'"),
    ("inspect-wheel-entry-point-to-nothing", _wheel({"x-1.dist-info/entry_points.txt": b"[aotc.libraries]\nx = xpkg._gone\n"}), "names 'xpkg._gone', but the wheel holds no xpkg/_gone/index.json"),
    ("inspect-wheel-entry-point-not-a-path", _wheel({"x-1.dist-info/entry_points.txt": b"[aotc.libraries]\nx = ../../etc\n"}), "but the wheel holds no such package folder"),
    ("inspect-wheel-entry-points-binary", _wheel({"x-1.dist-info/entry_points.txt": b"\xff\xfe[aotc"}), "entry_points.txt: unreadable"),
    ("inspect-wheel-entry-points-no-section", _wheel({"x-1.dist-info/entry_points.txt": b"x = y\n"}), "entry_points.txt: unreadable"),
    ("warm-an-unknown-name", lambda t: ["warm", "--arch", "9.0", "--library", "nosuchlib"], "no kernel library named 'nosuchlib'"),
]

ENV_CASES = [
    ("cache-size-not-a-number", ["cache", "prune"], {"AOTC_CACHE_MAX_BYTES": "2GB"}, "AOTC_CACHE_MAX_BYTES='2GB'"),
    ("cache-size-negative", ["cache", "prune"], {"AOTC_CACHE_MAX_BYTES": "-5"}, "AOTC_CACHE_MAX_BYTES"),
    ("cache-dir-is-a-file", ["cache", "prune"], {"AOTC_CACHE_DIR": "{tmp}/afile"}, "not a directory"),
    ("warm-bad-jit-policy", ["warm", "--arch", "9.0", "--library", "{tmp}"], {"AOTC_JIT": "sometimes"}, "AOTC_JIT='sometimes'"),
    ("warm-the-emulator-without-arch", ["warm", "--library", "{tmp}"], {"AOTC_BACKEND": "emulator"}, "--arch: the emulator backend compiles"),
    ("warm-a-bad-backend-without-arch", ["warm", "--library", "{tmp}"], {"AOTC_BACKEND": "bogus"}, "AOTC_BACKEND='bogus' is not one of"),
]


def assert_one_line_error(result, fragment: str) -> None:
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("aotc: error: ")
    assert fragment in lines[0]
    assert len(lines[0]) < 400
    assert result.returncode == 1


@pytest.mark.parametrize(("setup", "fragment"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_and_exit_1(
    run_aotc: RunAotc, tmp_path: Path, setup: Callable[[Path], list[str]], fragment: str
) -> None:
    argv = setup(tmp_path)
    assert_one_line_error(run_aotc(*argv), fragment)


@pytest.mark.parametrize(("argv", "env", "fragment"), [c[1:] for c in ENV_CASES], ids=[c[0] for c in ENV_CASES])
def test_bad_environment_is_one_line_and_exit_1(
    run_aotc: RunAotc, tmp_path: Path, argv: list[str], env: dict[str, str], fragment: str
) -> None:
    (tmp_path / "afile").write_text("")
    env = {key: value.format(tmp=tmp_path) for key, value in env.items()}
    argv = [arg.format(tmp=tmp_path) for arg in argv]
    assert_one_line_error(run_aotc(*argv, env={"AOTC_CACHE_DIR": str(tmp_path / "cache"), **env}), fragment)


# Usage errors: argparse's exit 2 and its one line, before anything is touched.
USAGE = [
    # `aotc cache prune --max-bytes -5` emptied the cache and exited 0.
    ("prune-to-minus-5", ["cache", "prune", "--max-bytes", "-5"], "argument --max-bytes: '-5' is not a size in bytes"),
    ("prune-to-1e9", ["cache", "prune", "--max-bytes", "1e9"], "argument --max-bytes: '1e9' is not a size in bytes"),
    ("prune-to-hex", ["cache", "prune", "--max-bytes", "0x10"], "'0x10' is not a size in bytes"),
    ("prune-to-25-digits", ["cache", "prune", "--max-bytes", "9" * 25], "is not a size in bytes"),
    ("build-prune-to-minus-1", ["cache", "--build", "prune", "--max-bytes", "-1"], "argument --max-bytes: '-1'"),
    ("warm-with-0-jobs", ["warm", "--arch", "9.0", "-j", "0"], "argument -j/--jobs: '0' is not a number of processes"),
    ("warm-with-minus-3-jobs", ["warm", "--arch", "9.0", "-j", "-3"], "argument -j/--jobs: '-3' is not a number of processes"),
    ("warm-with-a-million-jobs", ["warm", "--arch", "9.0", "-j", "1000000"], "is not a number of processes"),
    ("doctor-arch-0-0", ["doctor", "--arch", "0.0"], "argument --arch: '0.0' is not a compute capability"),
]


@pytest.mark.parametrize(("argv", "fragment"), [c[1:] for c in USAGE], ids=[c[0] for c in USAGE])
def test_a_bad_option_is_a_usage_error_that_touches_nothing(run_aotc: RunAotc, tmp_path: Path, argv: list[str], fragment: str) -> None:
    from aotc.runtime.cache import CacheKey, DiskCache

    cache = DiskCache(tmp_path / "cache")
    key = CacheKey.for_source(b"kernel", options=(), target="sm_80", compiler="test")
    assert cache.save(key, b"cubin")
    result = run_aotc(*argv, env={"AOTC_CACHE_DIR": str(tmp_path / "cache"), "AOTC_BUILD_CACHE_DIR": str(tmp_path / "cache")})
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert fragment in result.stderr.splitlines()[-1], result.stderr
    assert cache.load(key) == b"cubin"


# --- aotc generate never deletes a file it did not write ------------------------


def test_generate_keeps_every_file_it_did_not_write(run_aotc: RunAotc, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.cu").write_text("// a person's own kernel\n")
    (out / "notes.txt").write_text("keep\n")
    first = run_aotc("generate", str(ROWOPS), "-o", str(out))
    assert first.returncode == 0, first.stderr
    assert first.stdout == f"{out}: 16 written, 0 unchanged, 0 removed\n"
    assert (out / "mine.cu").read_text() == "// a person's own kernel\n"
    assert (out / "notes.txt").is_file()
    assert (out / ".aotc-generated").read_text().splitlines() == sorted(
        f"{p.stem}{suffix}" for p in out.glob("*.cu") if p.name != "mine.cu" for suffix in (".cu", ".lines")
    )


def test_generate_removes_only_the_sources_it_wrote_before(run_aotc: RunAotc, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "templates").symlink_to(ROWOPS.parent / "templates")
    text = ROWOPS.read_text()
    (project / "manifest.yaml").write_text(text)
    out = tmp_path / "out"
    assert run_aotc("generate", str(project / "manifest.yaml"), "-o", str(out)).returncode == 0
    (out / "mine.cu").write_text("// mine\n")
    # Scan loses its i64 kernel; only that source (and its line map) goes.
    (project / "manifest.yaml").write_text(text.replace("dtype: [f32, f64, i32, i64], threads: [256], items: [4]", "dtype: [f32, f64, i32], threads: [256], items: [4]"))
    second = run_aotc("generate", str(project / "manifest.yaml"), "-o", str(out))
    assert second.stdout == f"{out}: 0 written, 15 unchanged, 1 removed\n", second.stderr
    assert not (out / "scan_i64.cu").exists() and not (out / "scan_i64.lines").exists()
    assert (out / "mine.cu").read_text() == "// mine\n"


@pytest.mark.parametrize(
    "entry",
    ["../victim.cu", "/tmp/victim.cu", ".hidden.cu", "victim.txt", "sub/victim.cu", "victim.cu\x00", "linked.cu"],
)
def test_a_tampered_list_of_generated_files_deletes_nothing_else(run_aotc: RunAotc, tmp_path: Path, entry: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "sub").mkdir()
    for name in ("sub/victim.cu", "victim.txt", ".hidden.cu"):
        (out / name).write_text("keep\n")
    (tmp_path / "victim.cu").write_text("keep\n")
    (out / "linked.cu").symlink_to(tmp_path / "victim.cu")
    (out / ".aotc-generated").write_text(f"{entry}\n")
    result = run_aotc("generate", str(ROWOPS), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith(", 0 removed\n")
    assert (tmp_path / "victim.cu").read_text() == "keep\n"
    assert (out / "linked.cu").is_symlink()
    for name in ("sub/victim.cu", "victim.txt", ".hidden.cu"):
        assert (out / name).read_text() == "keep\n"


@pytest.mark.parametrize("fifo", [".aotc-generated", "softmax_f32.cu", "softmax_f32.lines"])
def test_a_fifo_in_the_output_folder_is_replaced_never_opened(run_aotc: RunAotc, tmp_path: Path, fifo: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / fifo)
    (out / "mine.cu").write_text("// mine\n")
    result = run_aotc("generate", str(ROWOPS), "-o", str(out))  # a plain open() blocks until a writer comes
    assert result.returncode == 0, result.stderr
    assert (out / fifo).is_file() and (out / "mine.cu").read_text() == "// mine\n"
