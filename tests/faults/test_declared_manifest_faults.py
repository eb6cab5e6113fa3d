"""Hostile declared-family manifests (issue 35): each gives one error line naming
file, line and key, before anything is generated, or the right result.

The issue's cases first (names that match only up to a trailing newline,
reserved words, a kernel count and launch expressions without bounds), then
this side's own: names the bindings, torch.ops or the index would trip on,
and every value the index would refuse after a whole build.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from aotc import errors
from aotc.build import _checks
from aotc.build.manifest import load_manifest

BASE = """\
library: probe
templates: templates
archs: {sass: [80], ptx: [80]}
families:
  fam:
    template: k.cu.j2
    axes: {dtype: [f32, f64], threads: [128]}
    name: "fam_{dtype}"
    signature:
      x: {array: dtype, role: in, shape: [rows, n]}
      y: {array: dtype, role: out, shape: [rows, n]}
      rows: i32
      n: i32
    launch:
      grid: ["cdiv(rows * n, threads)"]
      block: [threads]
"""
TEMPLATE = 'extern "C" __global__ void {{ kernel_name }}({{ params }}) {}\n'
LONG_LINE = 240  # past the manifest's path (test_manifest_faults.LONG_LINE)
GRID = '"cdiv(rows * n, threads)"'
PARAMS = "      n: i32\n"


def edit(old: str, new: str) -> str:
    assert old in BASE, old
    return BASE.replace(old, new, 1)


def axes(count: int, values: int) -> str:
    return ", ".join(f"a{k}: [" + ", ".join(f"v{i}" for i in range(values)) + "]" for k in range(count))


# (id, manifest text, line, key, a fragment of the message)
FAULTS: list[tuple[str, str, int, str, str]] = [
    # Names: whole-string matches. `$` matched before a final newline, and the build then failed in ninja or cc1plus.
    ("kernel-name-with-newline", edit('"fam_{dtype}"', '"fam_{dtype}\\n"'), 8, "families.fam.name", "'fam_f32\\n' is not a C identifier"),
    ("library-with-newline", edit("library: probe", 'library: "probe\\n"'), 1, "library", "'probe\\n' is not a C identifier"),
    ("family-with-newline", edit("  fam:\n", '  "fam\\n":\n'), 5, "families.'fam\\n'", "is not a C identifier"),
    ("parameter-with-newline", edit(PARAMS, PARAMS + '      "m\\n": i32\n'), 14, "families.fam.signature.'m\\n'", "is not a C identifier"),
    ("axis-value-with-newline", edit("dtype: [f32, f64]", 'dtype: [f32, "f64\\n"]'), 7, "families.fam.axes.dtype", "'f64\\n' is not a C identifier"),
    ("axis-name-with-newline", edit("threads: [128]", '"threads\\n": [128]'), 7, "families.fam.axes.'threads\\n'", "is not a C identifier"),
    ("saves-with-newline", edit("    launch:\n", '    backward: {family: fam2, saves: ["y\\n"]}\n    launch:\n'), 14, "families.fam.backward.saves", "is not a C identifier"),
    # Reserved words: the build once blamed another parameter (`parameter x (1 of 5) must be const double*`).
    ("parameter-int", edit(PARAMS, PARAMS + "      int: i32\n"), 14, "families.fam.signature.int", "'int' is a reserved word of C, C++ or CUDA"),
    ("parameter-float", edit(PARAMS, PARAMS + "      float: f32\n"), 14, "families.fam.signature.float", "'float' is a reserved word"),
    ("parameter-class", edit(PARAMS, PARAMS + "      class: i32\n"), 14, "families.fam.signature.class", "'class' is a reserved word"),
    ("parameter-threadIdx", edit(PARAMS, PARAMS + "      threadIdx: i32\n"), 14, "families.fam.signature.threadIdx", "'threadIdx' is a reserved word"),
    ("parameter-dunder", edit(PARAMS, PARAMS + "      __x: i32\n"), 14, "families.fam.signature.__x", "'__x' is a reserved word"),
    ("parameter-underscore-capital", edit(PARAMS, PARAMS + "      _X: i32\n"), 14, "families.fam.signature._X", "'_X' is a reserved word"),
    ("array-named-double", edit("      y: {array", "      double: {array"), 11, "families.fam.signature.double", "'double' is a reserved word"),
    ("library-int", edit("library: probe", "library: int"), 1, "library", "'int' is a reserved word"),
    ("family-while", edit("  fam:\n", "  while:\n"), 5, "families.while", "'while' is a reserved word"),
    ("family-template", edit("  fam:\n", "  template:\n"), 5, "families.template", "'template' is a reserved word"),
    ("constant-int", edit("    launch:\n", "    constants: [{int: 3}]\n    launch:\n"), 14, "families.fam.constants[0].int", "'int' is a reserved word"),
    ("kernel-name-float", edit("threads: [128]", "threads: [128], t: [float]").replace('"fam_{dtype}"', '"{t}"').replace("dtype: [f32, f64]", "dtype: [f32]"), 8, "families.fam.name", "'float' is a reserved word"),
    # Names a binding, torch.ops or aotc.kernels.Kernels would trip on.
    ("parameter-stream", edit(PARAMS, PARAMS + "      stream: i64\n"), 14, "families.fam.signature.stream", "a family's call takes stream= itself"),
    ("axis-stream", edit("threads: [128]", "threads: [128], stream: [0]"), 7, "families.fam.axes.stream", "a family's call takes stream= itself"),
    ("library-aten", edit("library: probe", "library: aten"), 1, "library", "its torch.ops namespace, and that one is taken"),
    ("library-aotc", edit("library: probe", "library: aotc"), 1, "library", "its torch.ops namespace"),
    ("library-torch", edit("library: probe", "library: torch"), 1, "library", "its torch.ops namespace"),
    ("family-names", edit("  fam:\n", "  names:\n"), 5, "families.names", "aotc.kernels.Kernels has an attribute of that name"),
    ("family-torch_ops", edit("  fam:\n", "  torch_ops:\n"), 5, "families.torch_ops", "aotc.kernels.Kernels has an attribute"),
    ("family-library", edit("  fam:\n", "  library:\n"), 5, "families.library", "aotc.kernels.Kernels has an attribute"),
    # Cost: a kernel count without a cap hung `aotc list`; a long expression gave a RecursionError.
    ("five-axes-of-64", edit("threads: [128]", "threads: [128], " + axes(5, 64)), 7, "families.fam.axes", "expands to 2147483648 points before excludes, over the limit of 1000000 points a family's matrix holds before excludes (limits.points)"),
    ("three-axes-of-64", edit("threads: [128]", "threads: [128], " + axes(3, 64)), 7, "families.fam.axes", "expands to 524288 kernels, over the limit of 100000 kernels a library (limits.kernels)"),
    ("matrix-blocks-summing-past-the-cap", edit("threads: [128]", "threads: [128], " + axes(3, 64)).replace("    launch:\n", "    matrix:\n" + "      - {dtype: [f32, f64]}\n" * 2 + "    exclude: [{dtype: f64}]\n    launch:\n"), 16, "families.fam.matrix[1]", "expands to 1048576 points before excludes"),
    ("excludes-leaving-too-many", edit("threads: [128]", "threads: [128], " + axes(2, 64) + ", b: [" + ", ".join(f"w{i}" for i in range(14)) + "]").replace("    launch:\n", "    exclude: [{a0: v0}]\n    launch:\n"), 5, "families.fam", "brings the library to 112896 kernels, over the limit of 100000 kernels a library (limits.kernels)"),
    ("limit-lowered-below-the-family", "limits: {kernels: 1}\n" + BASE, 8, "families.fam.axes", "expands to 2 kernels, over the limit of 1 kernels a library (limits.kernels)"),
    ("limit-over-its-ceiling", "limits: {kernels: 1000001}\n" + BASE, 1, "limits.kernels", "expected 1 to 1000000 kernels a library (default 100000), got int 1000001"),
    ("limit-unknown", "limits: {threads: 4}\n" + BASE, 1, "limits.threads", "unknown key (known: kernels, points, axis_values, manifest_bytes)"),
    ("limit-not-a-number", "limits: {points: many}\n" + BASE, 1, "limits.points", "expected 1 to 10000000 points a family's matrix holds before excludes (default 1000000), got str 'many'"),
    ("axis-of-4097-values", edit("threads: [128]", "threads: [128], " + axes(1, 4097)), 7, "families.fam.axes.a0", "4097 values, over the limit of 4096 values an axis (limits.axis_values)"),
    ("launch-expression-of-1000-terms", edit(GRID, '"' + "*".join(["n"] * 1000) + '"'), 15, "families.fam.launch.grid[0]", "1999 characters, over the limit of 200"),
    ("launch-expression-of-60-terms", edit(GRID, '"' + "*".join(["n"] * 60) + '"'), 15, "families.fam.launch.grid[0]", "nests 59 operations deep, over the limit of 12"),
    ("launch-expression-nested-cdiv", edit(GRID, '"' + "cdiv(" * 20 + "n" + ", 2)" * 20 + '"'), 15, "families.fam.launch.grid[0]", "nests 20 operations deep"),
    ("launch-expression-150-parentheses", edit(GRID, '"' + "(" * 150 + "n" + ")" * 150 + '"'), 15, "families.fam.launch.grid[0]", "over the limit of 200"),
    ("shared-expression-too-long", edit("      block: [threads]\n", "      block: [threads]\n      shared: " + "+".join(["1"] * 150) + "\n"), 17, "families.fam.launch.shared", "over the limit of 200"),
    ("constant-factor-past-2-31", edit(GRID, '"rows * 65536 * 65536"'), 15, "families.fam.launch.grid[0]", "a constant factor of 4294967296 is out of range"),
    # What the index would refuse after a whole build: refused here, before one.
    ("65-parameters", edit(PARAMS, PARAMS + "".join(f"      p{i}: i32\n" for i in range(61))), 9, "families.fam.signature", "65 parameters are more than the limit of 64"),
    ("nine-dimensions", edit("x: {array: dtype, role: in, shape: [rows, n]}", "x: {array: dtype, role: in, shape: [rows, n, 1, 1, 1, 1, 1, 1, 1]}"), 10, "families.fam.signature.x.shape", "9 dimensions are more than the limit of 8"),
    ("65-axes", edit("threads: [128]", "threads: [128], " + ", ".join(f"s{i}: [v]" for i in range(63))), 7, "families.fam.axes", "65 axes are more than the limit of 64"),
    ("axis-value-2-31", edit("threads: [128]", "threads: [128], big: [2147483648]"), 7, "families.fam.axes.big", "2147483648 is out of range (0 to 2**31 - 1)"),
    # Format tricks in the kernel-name pattern.
    ("name-pattern-attribute", edit('"fam_{dtype}"', '"fam_{dtype.__class__}"'), 8, "families.fam.name", "names {dtype.__class__}, which is not an axis or a constant"),
    ("name-pattern-index", edit('"fam_{dtype}"', '"fam_{dtype[0]}"'), 8, "families.fam.name", "names {dtype[0]}"),
    ("name-pattern-conversion", edit('"fam_{dtype}"', '"fam_{dtype!r}"'), 8, "families.fam.name", "is not a C identifier"),
    ("name-pattern-padding", edit('"fam_{dtype}"', '"fam_{dtype:>60}"'), 8, "families.fam.name", "is not a C identifier"),
    ("name-pattern-positional", edit('"fam_{dtype}"', '"fam_{0}"'), 8, "families.fam.name", "names {0}, which is not an axis or a constant"),
    ("name-pattern-long-field", edit('"fam_{dtype}"', '"fam_{' + "s" * 5000 + '}"'), 8, "families.fam.name", "names {" + "s" * 18 + "...s}, which is not an axis or a constant"),
    ("name-pattern-unbalanced", edit('"fam_{dtype}"', '"fam_{dtype"'), 8, "families.fam.name", "is not a name pattern"),
    ("name-pattern-too-long", edit('"fam_{dtype}"', '"' + "f" * 60 + '_{dtype}"'), 8, "families.fam.name", "is longer than 40 characters"),
    # Launch expressions that are code, or not sizes.
    ("grid-import", edit(GRID, "\"__import__('os')\""), 15, "families.fam.launch.grid[0]", "is not allowed"),
    ("grid-lambda", edit(GRID, '"(lambda: 1)()"'), 15, "families.fam.launch.grid[0]", "is not allowed"),
    ("grid-walrus", edit(GRID, '"(x := 1)"'), 15, "families.fam.launch.grid[0]", "is not allowed"),
    ("grid-power", edit(GRID, '"2**31"'), 15, "families.fam.launch.grid[0]", "is not allowed"),
    ("grid-attribute", edit(GRID, '"n.__class__"'), 15, "families.fam.launch.grid[0]", "is not allowed"),
    ("grid-empty", edit(GRID, '""'), 15, "families.fam.launch.grid[0]", "is not an expression"),
    ("grid-four-axes", edit(f"[{GRID}]", "[rows, n, 1, 1]"), 15, "families.fam.launch.grid", "has 4 axes; CUDA has 3"),
    ("grid-cdiv-by-zero", edit(GRID, '"cdiv(n, 0)"'), 15, "families.fam.launch.grid[0]", "cdiv(a, b) needs b > 0"),
    ("grid-size-minus-one", edit(GRID, '"n - 1"'), 15, "families.fam.launch.grid[0]", "sizes combine only by * and cdiv"),
    ("block-zero", edit("block: [threads]", "block: [0]"), 16, "families.fam.launch.block", "is not a block CUDA launches"),
    ("block-2048", edit("block: [threads]", "block: [2048]"), 16, "families.fam.launch.block", "is not a block CUDA launches"),
    ("block-float", edit("block: [threads]", "block: [128.0]"), 16, "families.fam.launch.block[0]", "expected an expression, got float 128.0"),
    ("shared-over-48k", edit("      block: [threads]\n", "      block: [threads]\n      shared: 49153\n"), 17, "families.fam.launch.shared", "shared memory is 0 to 49152 bytes"),
    ("shared-scientific", edit("      block: [threads]\n", "      block: [threads]\n      shared: 1e9\n"), 17, "families.fam.launch.shared", "is not allowed"),
    # Signatures the bindings could not bind.
    ("unknown-dtype", edit("dtype: [f32, f64]", "dtype: [f8]"), 10, "families.fam.signature.x.array", "'f8', which is not a dtype"),
    ("unknown-role", edit("role: in, shape", "role: both, shape"), 10, "families.fam.signature.x.role", "expected one of in, out, inout"),
    ("unknown-scalar-type", edit(PARAMS, "      n: u8\n"), 13, "families.fam.signature.n", "unknown scalar type 'u8'"),
    ("optional-beside-a-long-shape", edit("x: {array: dtype, role: in, shape: [rows, n]}", "x: {array: dtype, role: in, shape: [[" + "a" * 3000 + "], rows, n], optional: [batch]}"), 10, "families.fam.signature.x.optional", "(shape: [['aaaa"),
    ("optional-not-leading", edit("x: {array: dtype, role: in, shape: [rows, n]}", "x: {array: dtype, role: in, shape: [rows, n], optional: [n]}"), 10, "families.fam.signature.x.optional", "must be the shape's leading dimensions"),
    ("zero-extent", edit("x: {array: dtype, role: in, shape: [rows, n]}", "x: {array: dtype, role: in, shape: [rows, 0]}"), 10, "families.fam.signature.x.shape", "nor a positive number"),
    ("parameter-named-like-an-axis", edit(PARAMS, PARAMS + "      threads: i32\n"), 14, "families.fam.signature.threads", "threads is also an axis"),
    ("backward-to-itself", edit("    launch:\n", "    backward: {family: fam, saves: [y]}\n    launch:\n"), 14, "families.fam.backward", "names the kernel itself"),
    ("matrix-of-nothing", edit("    launch:\n", "    exclude: [{dtype: [f32, f64]}]\n    launch:\n"), 5, "families.fam", "the matrix expands to no kernels after excludes"),
    # Split offsets, ties and shape expressions (issue 38): what the binder could not bind, refused here.
    ("split-axis-w", edit(PARAMS, PARAMS + "      y0: {scalar: i32, split: w}\n"), 14, "families.fam.signature.y0.split", "expected a grid axis (x, y, z), got str 'w'"),
    ("split-float", edit(PARAMS, PARAMS + "      y0: {scalar: f32, split: y}\n"), 14, "families.fam.signature.y0.split", "y0 is 'f32'; a split offset is an integer"),
    ("split-twice", edit(PARAMS, PARAMS + "      y0: {scalar: i32, split: y}\n      y1: {scalar: i32, split: y}\n"), 15, "families.fam.signature.y1.split", "grid axis y is split by y0 already"),
    ("split-with-arg", edit(PARAMS, PARAMS + "      y0: {scalar: i32, split: y, arg: start}\n"), 14, "families.fam.signature.y0.arg", "a split offset is set by the binder, never passed"),
    ("split-in-a-shape", edit("shape: [rows, n]}\n      rows", "shape: [rows, y0]}\n      rows").replace(PARAMS, PARAMS + "      y0: {scalar: i32, split: y}\n"), 11, "families.fam.signature.y.shape", "'y0' names a split offset"),
    ("split-in-the-grid", edit(GRID, GRID + ", y0").replace(PARAMS, PARAMS + "      y0: {scalar: i32, split: y}\n"), 16, "families.fam.launch.grid[1]", "'y0' is not an integer scalar of the signature"),
    ("tied-both-ways", edit(PARAMS, PARAMS + "      k: {scalar: i32, max: n, equals: n}\n"), 14, "families.fam.signature.k.equals", "tied one way: max (at most) or equals (exactly), not both"),
    ("equals-no-dimension", edit(PARAMS, PARAMS + "      k: {scalar: i32, equals: q}\n"), 14, "families.fam.signature.k.equals", "at dtype=f32, threads=128, q is not a dimension the in or inout arrays bind"),
    ("equals-on-a-dimension", edit("      rows: i32\n", "      rows: {scalar: i32, equals: n}\n"), 12, "families.fam.signature.rows.equals", "rows is bound from the arrays, never passed"),
    ("equals-on-a-float", edit(PARAMS, PARAMS + "      c0: {scalar: f64, equals: n}\n"), 14, "families.fam.signature.c0.equals", "c0 is f64; a tied scalar is i32 or i64"),
    ("expression-unknown-name", edit("shape: [rows, n]}\n      y", "shape: [rows, q + 1]}\n      y"), 10, "families.fam.signature.x.shape", "q + 1: q is neither an integer scalar of the signature"),
    ("expression-sizeof", edit("shape: [rows, n]}\n      y", "shape: [rows, sizeof(f32) * n]}\n      y"), 10, "families.fam.signature.x.shape[1]", "is not allowed in a shape"),
    ("expression-of-numbers", edit("shape: [rows, n]}\n      y", 'shape: [rows, "2 + 1"]}\n      y'), 10, "families.fam.signature.x.shape[1]", "'2 + 1' names no size; write the number"),
    ("expression-not-python", edit("shape: [rows, n]}\n      y", 'shape: [rows, "n +"]}\n      y'), 10, "families.fam.signature.x.shape[1]", "'n +' is not an expression"),
    ("expression-power", edit("shape: [rows, n]}\n      y", 'shape: [rows, "n ** 2"]}\n      y'), 10, "families.fam.signature.x.shape[1]", "'n ** 2' is not allowed in a shape"),
    ("expression-cdiv-by-a-size", edit("shape: [rows, n]}\n      y", 'shape: [rows, "cdiv(n, rows)"]}\n      y'), 10, "families.fam.signature.x.shape[1]", "cdiv(a, b) divides by a positive constant b"),
    ("expression-many-terms", edit("shape: [rows, n]}\n      y", 'shape: [rows, "(rows + 1) * (n + 1) * (rows + 2) * (n + 3)"]}\n      y'), 10, "families.fam.signature.x.shape[1]", "terms, over the limit of 8"),
    ("expression-float-scalar", edit("shape: [rows, n]}\n      y", "shape: [rows, c0 + 1]}\n      y").replace(PARAMS, PARAMS + "      c0: f32\n"), 10, "families.fam.signature.x.shape", "c0 + 1: c0 is neither an integer scalar"),
    ("expression-of-a-stride", edit("shape: [rows, n]}\n      y", "shape: [rows, n], strides: [s, 1]}\n      y").replace("shape: [rows, n]}\n      rows", "shape: [rows, s + 1]}\n      rows").replace(PARAMS, PARAMS + "      s: i64\n"), 10, "families.fam.signature.x.strides", "s is also named in a shape"),
]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "k.cu.j2").write_text(TEMPLATE)
    return tmp_path


@pytest.mark.parametrize(("text", "line", "key", "fragment"), [f[1:] for f in FAULTS], ids=[f[0] for f in FAULTS])
def test_fault_is_one_line_naming_file_line_and_key(project: Path, text: str, line: int, key: str, fragment: str) -> None:
    path = project / "manifest.yaml"
    path.write_text(text)
    start = time.perf_counter()
    with pytest.raises(errors.ManifestError) as info:
        load_manifest(path)
    # Refused before anything expands: a cap that let a billion points be made first would not return.
    assert time.perf_counter() - start < 10
    message = str(info.value)
    assert "\n" not in message and len(message) - len(str(path)) < LONG_LINE, message
    assert message.startswith(f"{path}:{line}: {key}"), message
    assert fragment in message, message


@pytest.mark.parametrize(
    ("template", "fragment"),
    [
        ('extern "C" __global__ void {{ kernel_name }}({{ params }}) {\n{% if dtype %}\n}\n', "k.cu.j2:2: Unexpected end of template"),
        ("{{ kernel_name }\n", "k.cu.j2:1: unexpected '}'"),
        (b"\xff\xfe", "k.cu.j2: not UTF-8 text"),
    ],
    ids=["unclosed-block", "unclosed-expression", "not-utf8"],
)
def test_a_template_jinja_cannot_parse_is_refused_by_the_manifest(project: Path, template: str | bytes, fragment: str) -> None:
    # By `aotc list` (the manifest's load), not first by a build's rendering.
    (project / "templates" / "k.cu.j2").write_bytes(template if isinstance(template, bytes) else template.encode())
    (project / "manifest.yaml").write_text(BASE)
    with pytest.raises(errors.ManifestError) as info:
        load_manifest(project / "manifest.yaml")
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{project / 'manifest.yaml'}:6: families.fam.template: {project / 'templates'}"), message
    assert fragment in message, message


def test_the_table_holds_distinct_manifests() -> None:
    assert len({f[0] for f in FAULTS}) == len(FAULTS) >= 60
    assert len({f[1] for f in FAULTS}) == len(FAULTS)


ACCEPTED = [
    ("base", BASE, 2),
    ("axis-value-float", edit("threads: [128]", "threads: [128], ctype: [float, double]").replace('"fam_{dtype}"', '"fam_{dtype}_{ctype}"'), 4),  # values, not names
    ("95-parentheses", edit(GRID, '"' + "(" * 95 + "rows * n" + ")" * 95 + '"'), 2),  # deep text, shallow expression
    ("axis-named-pass", edit("threads: [128]", "threads: [128], pass: [forward]"), 2),  # the tropical family's own axis
    ("64-parameters", edit(PARAMS, PARAMS + "".join(f"      p{i}: i32\n" for i in range(60))), 2),
    ("eight-dimensions", edit("x: {array: dtype, role: in, shape: [rows, n]}", "x: {array: dtype, role: in, shape: [rows, n, 1, 1, 1, 1, 1, 1]}"), 2),
    ("exactly-1024-kernels", edit("threads: [128]", "threads: [128], " + axes(1, 64) + ", b: [" + ", ".join(f"w{i}" for i in range(8)) + "]").replace('"fam_{dtype}"', '"fam_{dtype}_{a0}_{b}"'), 1024),
    # Past the old caps of 1,024 kernels a library and 64 values an axis.
    ("8192-kernels-on-axes-of-4096", edit("threads: [128]", "threads: [128], " + axes(1, 4096)).replace('"fam_{dtype}"', '"fam_{dtype}_{a0}"'), 8192),
    ("a-raised-limit", "limits: {axis_values: 5000}\n" + edit("threads: [128]", "threads: [128], " + axes(1, 4500)).replace('"fam_{dtype}"', '"fam_{dtype}_{a0}"'), 9000),
    ("limits-set-exactly", "limits: {kernels: 2, points: 2}\n" + BASE, 2),
    ("12-deep-expression", edit(GRID, '"' + "*".join(["n"] * 13) + '"'), 2),
    ("axis-value-2-31-minus-1", edit("threads: [128]", "threads: [128], big: [2147483647]"), 2),
    ("underscore-lower-name", edit(PARAMS, PARAMS + "      _x: i32\n"), 2),
    ("parameter-lambda", edit(PARAMS, PARAMS + "      lambda: f32\n"), 2),  # C's name, not Python's: bound by Family itself
    ("split-offsets", edit(GRID, GRID + ", rows, n").replace(PARAMS, PARAMS + "      y0: {scalar: i32, split: y}\n      z0: {scalar: u32, split: z}\n"), 2),
    ("expression-shapes", edit("shape: [rows, n]}\n      rows", 'shape: [rows + 1, "cdiv(2 * n - 1, 32)", threads]}\n      rows'), 2),
    ("tied-extent", edit(PARAMS, PARAMS + "      k: {scalar: i64, equals: n}\n"), 2),
]


@pytest.mark.parametrize(("text", "kernels"), [a[1:] for a in ACCEPTED], ids=[a[0] for a in ACCEPTED])
def test_accepted_manifest_gives_the_right_result(project: Path, text: str, kernels: int) -> None:
    path = project / "manifest.yaml"
    path.write_text(text)
    assert len(load_manifest(path).kernels) == kernels


def test_the_caps_are_the_indexs_and_the_bindings() -> None:
    """The manifest refuses what the index would refuse after a build, and the
    names aotc.kernels.Kernels keeps for itself."""
    from aotc.index import _values
    from aotc.kernels import Kernels

    index_caps = vars(_values)  # the index's private limits, read as the data they are
    assert _checks.MAX_PARAMS == index_caps["_MAX_PARAMS"]
    assert _checks.MAX_INT32 == index_caps["_MAX_INT"]
    assert _checks.LIMITS["kernels"].ceiling <= index_caps["_MAX_KERNELS"]  # even a raised limit
    public = {name for name in dir(Kernels) if not name.startswith("_")} | {"library", "serial"}  # and its two instance attributes
    assert public == _checks.RESERVED_FOR["family"]
