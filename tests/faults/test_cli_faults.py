"""Known bad inputs through the ``aotc`` command: one line naming the culprit, exit 1.

Each case runs the CLI in its own process, as a user would, so a traceback or
a hang anywhere below the command shows up here rather than in a bug report.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import RunAotc

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
]

ENV_CASES = [
    ("cache-size-not-a-number", ["cache", "prune"], {"AOTC_CACHE_MAX_BYTES": "2GB"}, "AOTC_CACHE_MAX_BYTES='2GB'"),
    ("cache-size-negative", ["cache", "prune"], {"AOTC_CACHE_MAX_BYTES": "-5"}, "AOTC_CACHE_MAX_BYTES"),
    ("cache-dir-is-a-file", ["cache", "prune"], {"AOTC_CACHE_DIR": "{tmp}/afile"}, "not a directory"),
    ("warm-bad-jit-policy", ["warm", "--arch", "9.0", "--library", "{tmp}"], {"AOTC_JIT": "sometimes"}, "AOTC_JIT='sometimes'"),
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
