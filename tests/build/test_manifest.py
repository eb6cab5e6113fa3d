from __future__ import annotations

import sys
from pathlib import Path

import pytest

from aotc.errors import ManifestError
from aotc.build.manifest import DeclaredKernelSpec, load_manifest
from conftest import REPO, RunAotc

# A small valid manifest; the cases below edit it and name its lines.
VALID = (REPO / "tests" / "packages" / "mini" / "manifest.yaml").read_text()


def write_manifest(tmp_path: Path, text: str | bytes) -> Path:
    (tmp_path / "templates").mkdir(exist_ok=True)
    (tmp_path / "templates" / "gemm.cu.j2").write_text("// {{ kernel_name }}\n")
    path = tmp_path / "manifest.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def test_valid_manifest_expands_in_order(tmp_path: Path) -> None:
    manifest = load_manifest(write_manifest(tmp_path, VALID))
    assert manifest.library == "mini"
    assert manifest.archs.sass == ("75", "80")
    assert manifest.archs.ptx == ("80",)
    assert [k.name for k in manifest.kernels] == [
        "gemm_maxplus_f32_forward",
        "gemm_maxplus_f32_forward_batched",
        "gemm_maxplus_f32_argmax",
        "gemm_maxplus_f32_argmax_batched",
        "gemm_maxplus_i32_forward",
        "gemm_maxplus_i32_argmax",
        "gemm_andor_bool_forward",
    ]
    kernel = manifest.kernels[0]
    assert isinstance(kernel, DeclaredKernelSpec)
    assert hash(kernel) == hash(load_manifest(manifest.path).kernels[0])
    assert kernel.launch.block == (8, 8, 1)
    assert kernel.axes == (("semiring", "maxplus"), ("dtype", "f32"), ("pass", "forward"), ("variant", "single"))
    assert manifest.semirings[0].zero == "-inf"


def test_archs_default_to_the_full_matrix_and_highest_ptx(tmp_path: Path) -> None:
    text = VALID.replace("archs:\n  sass: [75, 80]\n  ptx: [80]\n", "")
    manifest = load_manifest(write_manifest(tmp_path, text))
    assert manifest.archs.sass == ("75", "80", "86", "89", "90", "100", "120")
    assert manifest.archs.ptx == ("120",)


def test_with_archs_override_keeps_a_reduced_build_reduced(tmp_path: Path) -> None:
    manifest = load_manifest(write_manifest(tmp_path, VALID)).with_archs(sass=("86",))
    assert manifest.archs.sass == ("86",)
    assert manifest.archs.ptx == ("86",)


def test_arch_specific_and_family_archs_are_accepted(tmp_path: Path) -> None:
    text = VALID.replace("sass: [75, 80]", "sass: [80, 90a, 100f]")
    assert load_manifest(write_manifest(tmp_path, text)).archs.sass == ("80", "90a", "100f")


def test_default_manifest_is_valid() -> None:
    manifest = load_manifest(REPO / "kernels" / "manifest.yaml")
    assert manifest.library == "tropical"
    assert len({k.name for k in manifest.kernels}) == len(manifest.kernels) > 0


def _replace(old: str, new: str) -> str:
    assert old in VALID, old
    return VALID.replace(old, new, 1)


SENTINEL = "aotc-yaml-tag-executed"

# (id, manifest text, the key the error must name, the line it must name)
MALFORMED = [
    ("python-object-tag", _replace("library: mini", f'library: !!python/object/apply:os.system ["touch {SENTINEL}"]'), "(yaml)", 1),
    ("duplicate-key", _replace("library: mini\n", "library: mini\nlibrary: other\n"), "library", 2),
    ("unknown-top-level-key", _replace("library: mini\n", "library: mini\nlibary: typo\n"), "libary", 2),
    ("unknown-family-key", _replace("    template: gemm.cu.j2\n", "    template: gemm.cu.j2\n    templat: x\n"), "families.gemm.templat", 12),
    ("float-arch", _replace("sass: [75, 80]", "sass: [7.5, 8.0]"), "archs.sass", 3),
    ("empty-file", "", "(root)", 1),
    ("root-not-a-mapping", "- library: mini\n", "(root)", 1),
    ("family-name-not-identifier", _replace("  gemm:\n", "  gemm-fast:\n"), "families.gemm-fast", 10),
    ("family-name-path-traversal", _replace("  gemm:\n", "  ../../evil:\n"), "families.../../evil", 10),
    ("library-path-traversal", _replace("library: mini", "library: ../../site-packages"), "library", 1),
    ("template-path-traversal", _replace("template: gemm.cu.j2", "template: ../../etc/passwd"), "families.gemm.template", 11),
    ("unknown-semiring", _replace("semiring: [maxplus]", "semiring: [maxplux]"), "families.gemm.matrix[0].semiring", 19),
    ("unknown-dtype", _replace("dtype: [f32, i32]", "dtype: [f32, f16]"), "families.gemm.matrix[0].dtype", 19),
    ("unknown-pass", _replace("pass: [forward, argmax], variant", "pass: [forward, backwards], variant"), "families.gemm.matrix[0].pass", 19),
    ("arch-below-sm75", _replace("sass: [75, 80]", "sass: [70, 80]"), "archs.sass", 3),
    ("arch-unknown-to-nvcc", _replace("sass: [75, 80]", "sass: [75, 99]"), "archs.sass", 3),
    ("empty-matrix-axis", _replace("semiring: [maxplus]", "semiring: []"), "families.gemm.matrix[0].semiring", 19),
    ("constant-a-string-for-a-number", _replace("block_m: 32", 'block_m: "32"'), "families.gemm.launch.grid[1]", 44),
    ("unknown-semiring-op", _replace("add: max, mul: add", "add: maximum, mul: add"), "semirings.maxplus.add", 6),
    ("missing-required-key", _replace("    template: gemm.cu.j2\n", ""), "families.gemm", 11),
    ("too-many-threads", _replace("block_m: 32, block_n: 32, block_k: 8, thread_m: 4, thread_n: 4", "block_m: 64, block_n: 64, block_k: 8, thread_m: 1, thread_n: 1"), "families.gemm.launch.block", 45),
    ("exclude-not-a-value", _replace("{dtype: i32, variant: batched}", "{dtype: f64}"), "families.gemm.exclude[0].dtype", 22),
    ("template-missing", _replace("template: gemm.cu.j2", "template: nope.cu.j2"), "families.gemm.template", 11),
    ("yaml-syntax", _replace("sass: [75, 80]", "sass: [75, 80"), "(yaml)", 4),
    ("arch-listed-twice", _replace("sass: [75, 80]", "sass: [80, 80]"), "archs.sass", 3),
    ("empty-dtypes", _replace("dtypes: [f32, i32, bool]", "dtypes: []"), "dtypes", 8),
    ("zero-not-identity-of-add", _replace("zero: -inf, one: 0}", "zero: +inf, one: 0}"), "semirings.maxplus.zero", 6),
    ("semiring-constant-unknown", _replace("zero: -inf, one: 0}", "zero: -infinity, one: 0}"), "semirings.maxplus.zero", 6),
    ("the-retired-gemm-form", VALID[: VALID.index("    axes:")] + "    matrix: {semiring: [maxplus], dtype: [f32], pass: [forward]}\n    tiles: {default: {block_m: 32}}\n", "families.gemm", 10),
]


@pytest.mark.parametrize(("text", "key", "line"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_manifest_is_one_line_exit_1(tmp_path: Path, run_aotc: RunAotc, text: str, key: str, line: int) -> None:
    path = write_manifest(tmp_path, text)
    result = run_aotc("list", str(path))
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert lines[0].startswith(f"aotc: error: {path}:{line}: {key}: "), lines[0]
    assert not (tmp_path / SENTINEL).exists(), "a YAML tag executed code"


def test_there_are_at_least_fifteen_distinct_malformed_manifests() -> None:
    assert len({m[1] for m in MALFORMED}) >= 15


def test_non_utf8_manifest(tmp_path: Path) -> None:
    path = write_manifest(tmp_path, b"library: \xff\xfe\n")
    with pytest.raises(ManifestError, match=r"manifest\.yaml:1: \(file\): not UTF-8"):
        load_manifest(path)


def test_missing_manifest_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match=r"nope\.yaml: cannot read manifest"):
        load_manifest(tmp_path / "nope.yaml")


def test_duplicate_kernel_across_matrices(tmp_path: Path) -> None:
    text = _replace(
        "      - {semiring: [andor], dtype: [bool], pass: [forward], variant: single}\n",
        "      - {semiring: [andor], dtype: [bool], pass: [forward], variant: single}\n"
        "      - {semiring: [andor], dtype: [bool], pass: [forward], variant: single}\n",
    )
    with pytest.raises(ManifestError, match=r"families\.gemm: kernel gemm_andor_bool_forward is also produced by this family at the same point \(semiring=andor, dtype=bool, pass=forward, variant=single\); list each point once$"):
        load_manifest(write_manifest(tmp_path, text))


def test_new_semiring_is_a_manifest_edit(tmp_path: Path) -> None:
    text = VALID.replace("semirings:\n", "semirings:\n  maxmin: {add: max, mul: min, zero: -inf, one: +inf}\n")
    text = text.replace("      semiring: [maxplus, andor]\n", "      semiring: [maxplus, andor, maxmin]\n")
    text = text.replace("    exclude:\n", "      - {semiring: maxmin, dtype: f32, pass: forward, variant: single}\n    exclude:\n")
    manifest = load_manifest(write_manifest(tmp_path, text))
    assert manifest.kernels[-1].name == "gemm_maxmin_f32_forward"
    assert manifest.semirings[0].name == "maxmin" and manifest.semirings[0].mul == "min"


def test_shipped_templates_are_named_with_the_aotc_prefix(tmp_path: Path) -> None:
    from aotc.build.manifest import SHIPPED_TEMPLATES_DIR

    manifest = load_manifest(write_manifest(tmp_path, "templates: aotc:tropical\n" + VALID))
    assert manifest.templates_dir == SHIPPED_TEMPLATES_DIR / "tropical"
    assert (manifest.templates_dir / "gemm.cu.j2").is_file()


def test_unknown_shipped_template_set_lists_the_shipped_ones(tmp_path: Path) -> None:
    path = write_manifest(tmp_path, "templates: aotc:nope\n" + VALID)
    with pytest.raises(ManifestError, match=r"manifest.yaml:1: templates: no template set 'nope' ships with aotc \(shipped: tropical\)"):
        load_manifest(path)


@pytest.mark.parametrize(
    "path",
    ["kernels/manifest.yaml", "examples/rowops/kernels/manifest.yaml", "examples/warpnorm/kernels/manifest.yaml", "examples/downstream/kernels/manifest.yaml"],
)
def test_shared_results_are_what_each_point_resolves_alone(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A point's signature and launch shape are resolved once per distinct input
    (manifest._SharedResults); every kernel is the one resolving its own point gives."""
    from aotc.build import manifest as manifest_module

    shared = load_manifest(REPO / path)

    class EachPoint:
        def get(self, values: object, inputs: object, resolve, *args: object):  # _SharedResults.get's signature
            return resolve(*args)

    monkeypatch.setattr(manifest_module, "_SharedResults", EachPoint)
    alone = load_manifest(REPO / path)
    assert shared.kernels == alone.kernels


def test_points_that_differ_only_where_nothing_reads_share_one_signature(tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "benchmarks"))
    import kernel_library

    manifest = load_manifest(kernel_library.write_library(tmp_path, 200, edit=7))
    assert len(manifest.kernels) == 200
    assert len({id(k.signature) for k in manifest.kernels}) == 1  # the axes and the constant name no parameter
    assert len({id(k.declared_launch) for k in manifest.kernels}) == 1
