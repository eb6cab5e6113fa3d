from __future__ import annotations

import pytest

from aotc.build._yaml import LineDict, LineList, load_yaml

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


def test_duplicate_key_in_a_nested_mapping() -> None:
    with pytest.raises(YamlError) as info:
        load_yaml("outer:\n  x: 1\n  x: 2\n")
    assert (info.value.line, info.value.key) == (3, "x")


def test_unhashable_key() -> None:
    with pytest.raises(YamlError) as info:
        load_yaml("? [1, 2]\n: v\n")
    assert info.value.line == 1
    assert info.value.key == "(yaml)"
    assert info.value.message == "unhashable mapping key [1, 2]"


def test_python_tags_are_refused_before_anything_is_built() -> None:
    with pytest.raises(YamlError) as info:
        load_yaml('ok: 1\nx: !!python/object/apply:os.system ["true"]\n')
    assert info.value.line == 2
    assert info.value.message.startswith("could not determine a constructor for the tag")
    assert "\n" not in info.value.message


def test_syntax_error_is_one_line_at_its_line() -> None:
    with pytest.raises(YamlError) as info:
        load_yaml("a: 1\nb: [1, 2\nc: 3\n")
    assert (info.value.line, info.value.key) == (3, "(yaml)")
    assert info.value.message == "expected ',' or ']', but got ':'"


def test_merge_keys_are_flattened_with_lines() -> None:
    data = load_yaml("base: &b {x: 1}\nderived:\n  <<: *b\n  y: 2\n")
    assert data["derived"] == {"x": 1, "y": 2}
    assert data["derived"].key_lines["y"] == 4


def test_a_second_document_is_refused_at_its_line() -> None:
    with pytest.raises(YamlError) as info:
        load_yaml("a: 1\n---\nb: 2\n")
    assert (info.value.line, info.value.message) == (2, "but found another document")
