"""Hostile and broken manifests: each gives one error line naming file, line and
key, or the right result; nothing else escapes the loader.

The manifest loader runs in every build and in ``aotc list``, which a person
may point at a file they only downloaded. The cases below are the ones the
"Hardening" issue reported (alias bombs, deep nesting, huge numbers, non-string
keys, unhashable values, values and keys that would forge or flood the error
line) and their neighbours; the fuzzer at the end mutates a real manifest.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aotc import errors
from aotc.build.manifest import MAX_MANIFEST_BYTES, Manifest, load_manifest
from conftest import REPO, RunAotc

# tests/packages/mini with aotc's shipped templates, so no template file is needed.
BASE = (REPO / "tests" / "packages" / "mini" / "manifest.yaml").read_text().replace(
    "library: mini\n", "library: mini\ntemplates: aotc:tropical\n", 1
)
BASE_KERNELS = 7
# No error line may reach this, whatever the file holds, past the manifest's
# path (the user's, of any length: with it counted, a case near the bound
# passed or failed with the name of pytest's temporary folder).
LONG_LINE = 240
SENTINEL = "aotc-fault-tag-executed"


def edit(old: str, new: str) -> str:
    assert old in BASE, old
    return BASE.replace(old, new, 1)


def laughs(levels: int = 9) -> str:
    """A billion-laughs manifest: each level is ten aliases of the one before."""
    lines = ["lol0: &lol0 [lol, lol]"]
    for i in range(1, levels + 1):
        lines.append(f"lol{i}: &lol{i} [{', '.join([f'*lol{i - 1}'] * 10)}]")
    return "\n".join(lines) + f"\nlibrary: *lol{levels}\n"


def many_semirings(count: int) -> str:
    table = "".join(f"  semiring_number_{i}: {{add: max, mul: add, zero: -inf, one: 0}}\n" for i in range(count))
    names = ", ".join(f"semiring_number_{i}" for i in range(count))
    text = edit("semirings:\n", "semirings:\n" + table).replace("semiring: [maxplus, andor]", f"semiring: [maxplus, andor, {names}]")
    return text.replace("semiring: [maxplus]", "semiring: [maxplux]")


HUGE = "9" * 5000
BIG_VALUE = "x" * 200_000

# (id, manifest text or bytes, line, key, a fragment of the message)
FAULTS: list[tuple[str, str | bytes, int, str, str]] = [
    # Anchors and aliases: refused at the first one, before anything expands.
    ("billion-laughs", laughs(), 1, "(yaml)", "anchors and aliases are not allowed in a manifest"),
    ("alias-without-anchor", edit("library: mini", "library: *mini"), 1, "(yaml)", "anchors and aliases are not allowed"),
    ("anchor-on-a-semiring", edit("  maxplus: {", "  maxplus: &m {"), 7, "(yaml)", "anchors and aliases are not allowed"),
    ("merge-key-alias", edit("      - {semiring: [andor]", "      - {<<: *m, semiring: [andor]"), 21, "(yaml)", "anchors and aliases"),
    # Keys that are not strings.
    ("integer-key-at-root", edit("library: mini\n", "library: mini\n1: one\n"), 2, "(yaml)", "key 1 is not a string; quote it"),
    ("integer-semiring-name", edit("  andor: {", "  7: {"), 8, "semirings", "key 7 is not a string"),
    ("boolean-family-name", edit("  gemm:\n", "  on:\n"), 11, "families", "key True is not a string"),
    ("null-key-in-tiles", edit("      - {block_m: 32", "      - {~: 1, block_m: 32"), 25, "families.gemm.constants[0]", "key None is not a string"),
    ("float-key-in-archs", edit("  ptx: [80]", "  1.5: [80]"), 5, "archs", "key 1.5 is not a string"),
    ("list-key", edit("library: mini\n", "library: mini\n? [a, b]\n: c\n"), 2, "(yaml)", "key ['a', 'b'] is not a string"),
    # Numbers Python would refuse, and the arch values that crashed archs.py.
    ("inf-arch", edit("sass: [75, 80]", "sass: [75, .inf]"), 4, "archs.sass", "architecture inf is not of the form 80, 90a or 100f"),
    ("nan-arch", edit("sass: [75, 80]", "sass: [.nan]"), 4, "archs.sass", "architecture nan is not of the form"),
    ("minus-inf-ptx", edit("ptx: [80]", "ptx: [-.inf]"), 5, "archs.ptx", "architecture -inf is not of the form"),
    ("float-overflow-arch", edit("sass: [75, 80]", "sass: [75, 1.0e+400]"), 4, "archs.sass[1]", "'1.0e+400' is out of range"),
    ("huge-float-arch", edit("sass: [75, 80]", "sass: [75, 1.0e+300]"), 4, "archs.sass", "architecture 1e+300 is not of the form"),
    ("5000-digit-arch", edit("sass: [75, 80]", f"sass: [75, {HUGE}]"), 4, "archs.sass[1]", "is longer than 32 characters"),
    ("5000-digit-string-arch", edit("sass: [75, 80]", f"sass: [75, '{HUGE}']"), 4, "archs.sass", "is not of the form 80, 90a or 100f"),
    ("5000-digit-tile", edit("block_m: 32", f"block_m: {HUGE}"), 25, "families.gemm.constants[0].block_m", "longer than 32"),
    ("40-hex-digit-tile", edit("block_k: 8", "block_k: 0x" + "f" * 40), 25, "families.gemm.constants[0].block_k", "longer than 32"),
    ("tile-over-the-limit", edit("block_m: 32", "block_m: 70000"), 46, "families.gemm.launch.block", "is not a block CUDA launches"),
    ("tile-zero", edit("block_m: 32", "block_m: 0"), 45, "families.gemm.launch.grid[1]", "cdiv(a, b) needs b > 0"),
    ("tile-float", edit("block_m: 32", "block_m: 32.0"), 25, "families.gemm.constants[0].block_m", "expected an integer, true, false, -inf, +inf or a name, got float 32.0"),
    ("integer-without-digits", edit("block_k: 8", "block_k: 0x_"), 25, "families.gemm.constants[0].block_k", "'0x_' is not a number"),
    ("negative-arch", edit("sass: [75, 80]", "sass: [-80]"), 4, "archs.sass", "architecture '-80' is not of the form"),
    ("boolean-arch", edit("sass: [75, 80]", "sass: [true]"), 4, "archs.sass", "architecture must be a number like 80"),
    ("nan-constant", edit("zero: -inf, one: 0}", "zero: .nan, one: 0}"), 7, "semirings.maxplus.zero", "unknown constant nan"),
    ("overflowing-constant", edit("zero: -inf, one: 0}", "zero: -1.0e+999, one: 0}"), 7, "semirings.maxplus.zero", "out of range"),
    # Unhashable values where a name is expected.
    ("list-as-add", edit("add: max, mul: add", "add: [max], mul: add"), 7, "semirings.maxplus.add", "unknown operation ['max']"),
    ("mapping-as-mul", edit("add: max, mul: add", "add: max, mul: {op: add}"), 7, "semirings.maxplus.mul", "unknown operation {'op': 'add'}"),
    ("list-as-zero", edit("zero: -inf, one: 0}", "zero: [-inf], one: 0}"), 7, "semirings.maxplus.zero", "expected a constant, got a list"),
    ("nested-list-in-exclude", edit("{dtype: i32, variant: batched}", "{dtype: [[i32]], variant: batched}"), 23, "families.gemm.exclude[0].dtype", "['i32'] is not a value of this axis"),
    ("mapping-in-exclude", edit("{dtype: i32, variant: batched}", "{dtype: [{a: 1}]}"), 23, "families.gemm.exclude[0].dtype", "{'a': 1} is not a value of this axis"),
    ("list-in-matrix-axis", edit("dtype: [f32, i32]", "dtype: [[f32], i32]"), 20, "families.gemm.matrix[0].dtype", "['f32'] is not a value of this axis"),
    ("list-as-counting", edit("one: true}", "one: true, counting: [x]}"), 8, "semirings.andor.counting", "expected true or false, got a list"),
    ("list-as-template", edit("template: gemm.cu.j2", "template: [gemm.cu.j2]"), 12, "families.gemm.template", "expected a template file name, got a list"),
    ("list-as-templates", edit("templates: aotc:tropical", "templates: [aotc:tropical]"), 2, "templates", "got a list"),
    # Nesting.
    ("nesting-10000-deep-flow", edit("library: mini", "library: " + "[" * 10_000), 1, "(yaml)", "nested deeper than 32 levels"),
    ("nesting-40-deep-block", "library:\n" + "".join("  " * i + "- \n" for i in range(1, 41)), 33, "(yaml)", "nested deeper than 32 levels"),
    ("nesting-in-a-tile", edit("block_m: 32", "block_m: " + "{a: " * 40 + "1" + "}" * 40), 25, "(yaml)", "nested deeper"),
    # Long values and keys: echoed cut, on one line.
    ("200-KB-library-name", edit("library: mini", f"library: {BIG_VALUE}"), 1, "library", "xxxx...x' is longer than 40 characters"),
    ("200-KB-unknown-key", edit("library: mini\n", f"library: mini\n? {BIG_VALUE}\n: 1\n"), 2, "'xxxx", "unknown key (known:"),
    ("200-KB-semiring-name", edit("  andor: {", f"  ? {BIG_VALUE}\n  : {{"), 8, "semirings.'xxx", "is longer than 40 characters"),
    ("200-KB-operation", edit("add: max, mul: add", f"add: {BIG_VALUE}, mul: add"), 7, "semirings.maxplus.add", "unknown operation 'xxx"),
    ("200-KB-template", edit("template: gemm.cu.j2", f"template: {BIG_VALUE}"), 12, "families.gemm.template", "not found in"),
    ("200-KB-templates-folder", edit("templates: aotc:tropical", f"templates: {BIG_VALUE}"), 2, "templates", "not found beside the manifest"),
    ("200-KB-tag", edit("library: mini", f"library: !<{BIG_VALUE}> mini"), 1, "(yaml)", "are not allowed in a manifest"),
    ("41-character-library", edit("library: mini", "library: " + "a" * 41), 1, "library", "is longer than 40 characters"),
    ("long-known-list-is-cut", many_semirings(30), 50, "families.gemm.matrix[0].semiring", ", ... (32 in all))"),
    # Keys and values that would forge a second error line.
    ("newline-in-a-key", edit("library: mini\n", 'library: mini\n"libary\\nmanifest.yaml:1: forged": 1\n'), 2, "'libary\\nmanifest.yaml:1: forged'", "unknown key"),
    ("newline-in-a-semiring-name", edit("  andor: {", '  "and\\nor": {'), 8, "semirings.'and\\nor'", "is not a C identifier"),
    ("escape-in-a-family-name", edit("  gemm:\n", '  "\\e[31mgemm":\n'), 11, "families.'\\x1b[31mgemm'", "is not a C identifier"),
    ("newline-in-a-value", edit("library: mini", 'library: "mini\\nforged: line"'), 1, "library", "'mini\\nforged: line' is not a C identifier"),
    ("carriage-return-in-an-arch", edit("sass: [75, 80]", 'sass: ["8\\r0"]'), 4, "archs.sass", "architecture '8\\r0' is not of the form"),
    # Tags: refused before anything is built from them.
    ("python-object-tag", edit("library: mini", f'library: !!python/object/apply:os.system ["touch {SENTINEL}"]'), 1, "(yaml)", "tags such as"),
    ("set-tag", edit("add: max, mul: add", "add: !!set {max}, mul: add"), 7, "(yaml)", "tags such as 'tag:yaml.org,2002:set'"),
    ("binary-tag", edit("library: mini", "library: !!binary bWluaQ=="), 1, "(yaml)", "tags such as"),
    ("int-tag-on-text", edit("block_m: 32", "block_m: !!int thirty-two"), 25, "(yaml)", "tags such as"),
    # The file itself.
    ("over-the-size-cap", BASE + "#" * MAX_MANIFEST_BYTES, 1, "(file)", f"larger than {MAX_MANIFEST_BYTES // 1024} KiB, the limit of bytes a manifest (limits.manifest_bytes"),
    # Raised only by a limits: block that opens the file: it is read before the rest.
    ("size-raised-too-late", BASE + "limits: {manifest_bytes: 8388608}\n" + "#" * MAX_MANIFEST_BYTES, 1, "(file)", f"larger than {MAX_MANIFEST_BYTES // 1024} KiB"),
    ("size-raised-past-its-ceiling", "limits: {manifest_bytes: 1000000000}\n" + BASE + "#" * MAX_MANIFEST_BYTES, 1, "limits.manifest_bytes", "expected 1 to 67108864 bytes a manifest (default 4194304), got int 1000000000"),
    ("size-raised-by-a-broken-block", "limits: {manifest_bytes: [\n" + BASE + "#" * MAX_MANIFEST_BYTES, 2, "(yaml)", "expected the node content, but found '<stream end>'"),
    ("not-utf8", edit("library: mini", "library: mini\xff").encode("latin-1"), 1, "(file)", "not UTF-8 text"),
    ("nul-byte", edit("library: mini", "library: mi\x00ni"), 1, "(yaml)", "special characters are not allowed"),
    ("empty", "", 1, "(root)", "the manifest is empty"),
    ("only-a-comment", "# nothing\n", 1, "(root)", "the manifest is empty"),
    ("root-is-a-list", "- library: mini\n", 1, "(root)", "expected a mapping, got a list"),
    ("root-is-text", "library\n", 1, "(root)", "expected a mapping, got str 'library'"),
    ("second-document", BASE + "---\nlibrary: other\n", 48, "(yaml)", "but found another document"),
    ("tab-indentation", edit("  ptx: [80]", "\tptx: [80]"), 5, "(yaml)", "found character '\\t' that cannot start any token"),
    ("unclosed-quote", edit("library: mini", 'library: "mini'), 18, "(yaml)", "expected <block end>, but found '<scalar>'"),  # it closes at the name pattern's quote
    # Structure in the wrong place.
    ("duplicate-semiring", edit("  andor: {", "  maxplus: {"), 8, "semirings.maxplus", "duplicate key (first defined on line 7)"),
    ("duplicate-tile-key", edit("block_m: 32,", "block_m: 32, block_m: 64,"), 25, "families.gemm.constants[0].block_m", "duplicate key"),
    ("semirings-a-list", BASE.replace(BASE[BASE.index("semirings:") : BASE.index("dtypes:")], "semirings: [maxplus, andor]\n"), 6, "semirings", "expected a mapping, got a list"),
    ("dtypes-a-scalar", edit("dtypes: [f32, i32, bool]", "dtypes: f32"), 9, "dtypes", "expected a list, got str 'f32'"),
    ("date-as-library", edit("library: mini", "library: 2024-13-45"), 1, "library", "'2024-13-45' is not a C identifier"),
    ("template-with-nul", edit("template: gemm.cu.j2", 'template: "gemm\\0.cu.j2"'), 12, "families.gemm.template", "not found in"),
    ("exclude-not-in-matrix", edit("{dtype: i32, variant: batched}", "{dtype: f64}"), 23, "families.gemm.exclude[0].dtype", "'f64' is not a value of this axis"),
]


def write(tmp_path: Path, text: str | bytes, name: str = "manifest.yaml") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(("text", "line", "key", "fragment"), [f[1:] for f in FAULTS], ids=[f[0] for f in FAULTS])
def test_fault_is_one_line_naming_file_line_and_key(tmp_path: Path, text: str | bytes, line: int, key: str, fragment: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(errors.ManifestError) as info:
        load_manifest(path)
    message = str(info.value)
    assert "\n" not in message and "\r" not in message
    assert len(message) - len(str(path)) < LONG_LINE, message
    assert message.startswith(f"{path}:{line}: {key}"), message
    assert fragment in message, message
    assert not (tmp_path / SENTINEL).exists(), "a YAML tag ran code"


def test_the_fault_table_is_at_least_fifty_distinct_manifests() -> None:
    assert len({f[0] for f in FAULTS}) == len(FAULTS)
    assert len({f[1] for f in FAULTS}) >= 50


# (id, manifest text, what the loaded manifest must show)
ACCEPTED: list[tuple[str, str, object]] = [
    ("base", BASE, ("kernels", BASE_KERNELS)),
    ("spelled-out-infinity", edit("zero: -inf, one: 0}", "zero: -.inf, one: 0}"), ("zero", "-inf")),
    ("quoted-and-hex-archs", edit("sass: [75, 80]", "sass: ['80', 0x5a, 90a]"), ("sass", ("80", "90", "90a"))),
    ("quoted-keys", edit("  gemm:\n", '  "gemm":\n'), ("kernels", BASE_KERNELS)),
    ("crlf-line-ends", BASE.replace("\n", "\r\n"), ("kernels", BASE_KERNELS)),
    ("just-under-the-size-cap", BASE + "#" * (MAX_MANIFEST_BYTES - len(BASE) - 1) + "\n", ("kernels", BASE_KERNELS)),
    ("size-raised-in-a-block-that-opens-the-file", "# big\n\nlimits:\n  manifest_bytes: 8388608\n" + BASE + "#" * MAX_MANIFEST_BYTES + "\n", ("kernels", BASE_KERNELS)),
    ("unicode-comment", "# Ωμέγα ✓\n" + BASE, ("kernels", BASE_KERNELS)),
    ("40-character-library", edit("library: mini", "library: " + "a" * 40), ("library", "a" * 40)),
]


def _shows(manifest: Manifest, what: str) -> object:
    return {
        "kernels": lambda: len(manifest.kernels),
        "zero": lambda: manifest.semirings[0].zero,
        "sass": lambda: manifest.archs.sass,
        "library": lambda: manifest.library,
    }[what]()


@pytest.mark.parametrize(("text", "expected"), [a[1:] for a in ACCEPTED], ids=[a[0] for a in ACCEPTED])
def test_accepted_manifest_gives_the_right_result(tmp_path: Path, text: str, expected: tuple[str, object]) -> None:
    what, value = expected
    assert _shows(load_manifest(write(tmp_path, text)), what) == value


CLI_FAULTS = ["billion-laughs", "nesting-10000-deep-flow", "5000-digit-tile", "integer-semiring-name", "200-KB-library-name", "newline-in-a-key"]


@pytest.mark.parametrize("fault", CLI_FAULTS)
def test_aotc_list_prints_one_line_and_no_traceback(tmp_path: Path, run_aotc: RunAotc, fault: str) -> None:
    _, text, line, key, _ = next(f for f in FAULTS if f[0] == fault)
    path = write(tmp_path, text)
    result = run_aotc("list", str(path))
    assert result.returncode in (1, 2), result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and len(lines[0]) - len(str(path)) < LONG_LINE + 20, result.stderr[:2000]
    assert lines[0].startswith(f"aotc: error: {path}:{line}: {key}"), lines[0]


# --- the fuzzer ---------------------------------------------------------------

REAL = (REPO / "kernels" / "manifest.yaml").read_text()
FUZZ_EXAMPLES = 300
# Fragments a mutation splices into the text: YAML's sharp edges and the
# values the issue reported.
SPLICES = [
    "&a ", "*a", "<<: *a", "!!set ", "!!python/name:os.system ", "? [1, 2]\n: x", "[", "]", "{", "}", ": ", "- ", "\t",
    ".inf", "-.nan", "1.0e+999", "9" * 5000, "0x_", "~", "yes", "on", "2024-13-45", '"a\\nb"', "'", '"', "#", "\n", "\n  ",
    "x" * 5000, "[" * 200, "{a: " * 50, "---\n", "%YAML 1.1\n", "\x00", "\x1b[31m", "\u2028", "\ufeff",
]


# Any code point but lone surrogates (a manifest is UTF-8 text). Named without a
# codec: hypothesis 6.170's utf-8 codec check warns about characters that do
# round-trip, and the suite runs with warnings as errors.
_TEXT = st.characters(exclude_categories=("Cs",))


@st.composite
def text_mutations(draw: st.DrawFn) -> str:
    """The real manifest with a few splices, deletions and line swaps."""
    text = REAL
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["splice", "splice", "delete", "duplicate-line", "random"]))
        if action == "splice":
            text = text[:at] + draw(st.sampled_from(SPLICES)) + text[at:]
        elif action == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 200)) :]
        elif action == "duplicate-line":
            lines = text.splitlines(keepends=True)
            index = draw(st.integers(0, max(len(lines) - 1, 0)))
            text = "".join(lines[: index + 1] + lines[index:])
        else:
            text = text[:at] + draw(st.text(_TEXT, max_size=20)) + text[at:]
    return text


SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**40), 10**40), st.floats(allow_nan=True, allow_infinity=True),
    st.text(_TEXT, max_size=30), st.sampled_from(["max", "add", "or", "and", "f32", "bool", "forward", "80", "90a", "-inf", "gemm.cu.j2"]),
)  # fmt: skip
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(SCALARS, inner, max_size=4), max_leaves=12)


def _paths(node: object, prefix: tuple = ()) -> list[tuple]:
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, (*prefix, index))
    return found


@st.composite
def structure_mutations(draw: st.DrawFn) -> str:
    """The real manifest's data with values replaced, keys dropped or added, dumped back to YAML."""
    data = yaml.safe_load(REAL)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(data)[1:]))
        parent = data
        for step in path[:-1]:
            parent = parent[step]
        action = draw(st.sampled_from(["replace", "replace", "drop", "add"]))
        if action == "replace":
            parent[path[-1]] = draw(VALUES)
        elif action == "drop":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(SCALARS)] = draw(VALUES)
        else:
            parent.append(draw(VALUES))
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False)


def test_fuzz_the_manifest_loader(tmp_path: Path, record_fuzz: Callable[[str, str], None]) -> None:
    seen: list[str] = []
    outcomes = {"loaded": 0, "refused": 0}

    @settings(
        derandomize=True, max_examples=FUZZ_EXAMPLES, deadline=None, database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )  # fmt: skip
    @given(st.one_of(text_mutations(), structure_mutations()))
    def load(text: str) -> None:
        seen.append(text)
        path = tmp_path / "manifest.yaml"
        path.write_bytes(text.encode("utf-8", "surrogatepass"))
        start = time.perf_counter()
        try:
            load_manifest(path)
        except errors.AotcError as exc:
            message = str(exc)
            assert "\n" not in message and "\r" not in message, message
            assert len(message) - len(str(path)) < LONG_LINE, message
            assert message.startswith(f"{path}"), message
            outcomes["refused"] += 1
        else:
            outcomes["loaded"] += 1
        # A hang guard, not a speed claim: every example loads in well under a
        # second; the issue's fuzzer once found one over 2 s (an uncapped matrix).
        assert time.perf_counter() - start < 5, text[:300]

    load()
    record_fuzz("manifest", f"{len(seen)} examples ({outcomes['loaded']} loaded, {outcomes['refused']} refused)")
    assert len(seen) == FUZZ_EXAMPLES
    assert len(set(seen)) > FUZZ_EXAMPLES // 2  # hypothesis repeats some small inputs
    assert outcomes["loaded"] > 0 and outcomes["refused"] > FUZZ_EXAMPLES // 2

