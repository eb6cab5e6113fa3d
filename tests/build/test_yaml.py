from __future__ import annotations

import pytest

from aotc.build._yaml import MAX_DEPTH, MAX_NUMBER_CHARS, LineDict, LineList, load_yaml

from aotc.errors import YamlError


def test_mappings_and_sequences_remember_their_lines() -> None:
    data = load_yaml("library: mini\narchs:\n  sass: [75, 80]\n  ptx:\n    - 80\n")
    assert data == {"library": "mini", "archs": {"sass": [75, 80], "ptx": [80]}}
    assert isinstance(data, LineDict) and data.line == 1
    assert data.key_lines == {"library": 1, "archs": 2}
    archs = data["archs"]
    assert isinstance(archs, LineDict) and archs.line == 3
    assert archs.key_lines == {"sass": 3, "ptx": 4}
    assert isinstance(archs["sass"], LineList) and archs["sass"].item_lines == [3, 3]
    assert archs["ptx"].line == 5 and archs["ptx"].item_lines == [5]


def test_scalars_are_the_safe_core_schema() -> None:
    # YAML 1.1 spells infinity ".inf": a bare "-inf" stays a string, for the manifest to read.
    assert load_yaml("a: -.inf\nb: true\nc: 0x10\nd: '7'\ne: null\nf: -inf\n") == {
        "a": float("-inf"), "b": True, "c": 16, "d": "7", "e": None, "f": "-inf",
    }  # fmt: skip


def test_empty_document_is_none() -> None:
    assert load_yaml("") is None


def test_duplicate_key_names_both_lines() -> None:
    with pytest.raises(YamlError) as info:
        load_yaml("a: 1\nb: 2\na: 3\n")
    assert (info.value.line, info.value.key, info.value.message) == (3, "a", "duplicate key (first defined on line 1)")
    assert str(info.value) == "duplicate key (first defined on line 1)"


def test_duplicate_key_in_a_nested_mapping_names_the_dotted_key() -> None:
    with pytest.raises(YamlError) as info:
        load_yaml("outer:\n  x: 1\n  x: 2\n")
    assert (info.value.line, info.value.key) == (3, "outer.x")
    with pytest.raises(YamlError) as info:
        load_yaml("outer:\n  - {a: 1}\n  - {a: 1, a: 2}\n")
    assert (info.value.line, info.value.key) == (3, "outer[1].a")


@pytest.mark.parametrize(
    ("text", "key", "message"),
    [
        ("? [1, 2]\n: v\n", "(yaml)", "key [1, 2] is not a string; quote it"),
        ("a:\n  1: v\n", "a", "key 1 is not a string; quote it"),
        ("a:\n  on: v\n", "a", "key True is not a string; quote it"),
        ("a:\n  ~: v\n", "a", "key None is not a string; quote it"),
    ],
)
def test_keys_must_be_strings(text: str, key: str, message: str) -> None:
    with pytest.raises(YamlError) as info:
        load_yaml(text)
    assert (info.value.key, info.value.message) == (key, message)


def test_python_tags_are_refused_before_anything_is_built() -> None:
    with pytest.raises(YamlError) as info:
        load_yaml('ok: 1\nx: !!python/object/apply:os.system ["true"]\n')
    assert info.value.line == 2
    assert info.value.message == "tags such as 'tag:yaml.org,2002:python/object/apply:os.system' are not allowed in a manifest"


def test_syntax_error_is_one_line_at_its_line() -> None:
    with pytest.raises(YamlError) as info:
        load_yaml("a: 1\nb: [1, 2\nc: 3\n")
    assert (info.value.line, info.value.key) == (3, "(yaml)")
    assert info.value.message == "expected ',' or ']', but got ':'"


def test_anchors_and_aliases_are_refused_before_anything_expands() -> None:
    # A billion-laughs file: each alias would expand to ten of the one before.
    laughs = "a: &a [lol, lol]\n" + "".join(f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
    with pytest.raises(YamlError) as info:
        load_yaml(laughs)
    assert (info.value.line, info.value.key) == (1, "(yaml)")
    assert info.value.message == "anchors and aliases are not allowed in a manifest"
    with pytest.raises(YamlError, match="anchors and aliases") as info:
        load_yaml("base: {x: 1}\nderived:\n  <<: *b\n")
    assert info.value.line == 3


def test_a_second_document_is_refused_at_its_line() -> None:
    with pytest.raises(YamlError) as info:
        load_yaml("a: 1\n---\nb: 2\n")
    assert (info.value.line, info.value.message) == (2, "but found another document")


def test_nesting_is_capped_without_recursing_into_it() -> None:
    with pytest.raises(YamlError) as info:
        load_yaml("a: " + "[" * 10_000)
    assert info.value.message == f"nested deeper than {MAX_DEPTH} levels"
    assert load_yaml("a: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1))  # the root mapping is a level


@pytest.mark.parametrize(
    ("text", "key", "message"),
    [
        ("a: {b: " + "9" * 5000 + "}\n", "a.b", f"is longer than {MAX_NUMBER_CHARS} characters"),
        ("a: [1, 0x" + "f" * 40 + "]\n", "a[1]", f"is longer than {MAX_NUMBER_CHARS} characters"),
        ("a: 1.0e+999\n", "a", "'1.0e+999' is out of range"),
        ("a: 0x_\n", "a", "'0x_' is not a number"),
    ],
)
def test_numbers_python_would_refuse_or_overflow_are_refused(text: str, key: str, message: str) -> None:
    with pytest.raises(YamlError) as info:
        load_yaml(text)
    assert info.value.key == key
    assert info.value.message.endswith(message)
    assert len(info.value.message) < 150


def test_dates_stay_text() -> None:
    assert load_yaml("a: 2024-13-45\nb: 2024-01-01\n") == {"a": "2024-13-45", "b": "2024-01-01"}
