"""``aotc._cjson`` is ``json.loads`` and ``json.dumps``: the same value, text or error, without importing json."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from conftest import aotc_env
from hypothesis import given, settings
from hypothesis import strategies as st

from aotc import _cjson
from aotc.errors import IndexFormatError

_SETTINGS = settings(derandomize=True, max_examples=300, deadline=None, database=None)

_SCALARS = st.none() | st.booleans() | st.integers(min_value=-(10**30), max_value=10**30) | st.floats(allow_nan=False) | st.text(max_size=8)
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=20)


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        msg = "a key appears twice"
        raise IndexFormatError(msg)
    return result


def _outcome(call: Any) -> Any:
    """What ``call()`` returns, or the type and text of what it raises."""
    try:
        return ("value", call())
    except Exception as error:  # noqa: BLE001 - the error itself is what is compared
        return ("error", type(error), str(error))


def _same_loads(text: str) -> None:
    hooks = {"object_pairs_hook": _no_duplicates, "parse_constant": lambda name: ("constant", name)}
    for options in ({}, hooks):
        expected = _outcome(lambda: json.loads(text, **options))  # noqa: B023 - called at once
        found = _outcome(lambda: _cjson.loads(text, **options))  # noqa: B023
        assert repr(found) == repr(expected), text  # repr: a NaN is equal to nothing, itself included


@_SETTINGS
@given(value=_VALUES, indent=st.sampled_from([None, 1]), space=st.sampled_from(["", " \n\t\r"]))
def test_loads_reads_what_json_writes_as_json_reads_it(value: Any, indent: int | None, space: str) -> None:
    _same_loads(space + json.dumps(value, indent=indent, ensure_ascii=False) + space)


@_SETTINGS
@given(value=_VALUES, cut=st.integers(min_value=0, max_value=200), junk=st.sampled_from(["", "x", ",", "]", "}", "\ufeff", "NaN", '"\\u12', "1e999", "1" * 5000, "{}"]))
def test_loads_refuses_what_json_refuses_with_its_error(value: Any, cut: int, junk: str) -> None:
    text = json.dumps(value)
    _same_loads(text[:cut] + junk + text[cut:])


@pytest.mark.parametrize(
    "text",
    ["", " ", "[1,", "[1] x", '{"a": 1, "a": 2}', "NaN", "-Infinity", "[1e999]", "\ufeff[]", '"\\ud800"', "[" * 50 + "]" * 50, "1" * 5000, '{"a" 1}', "tru"],
)
def test_loads_matches_json_on_edges(text: str) -> None:
    _same_loads(text)


@_SETTINGS
@given(value=_VALUES | st.floats(), sort_keys=st.booleans(), allow_nan=st.booleans())
def test_dumps_writes_what_json_writes(value: Any, sort_keys: bool, allow_nan: bool) -> None:
    expected = _outcome(lambda: json.dumps(value, sort_keys=sort_keys, allow_nan=allow_nan, separators=(",", ":")))
    assert _outcome(lambda: _cjson.dumps(value, sort_keys=sort_keys, allow_nan=allow_nan)) == expected


@pytest.mark.parametrize("value", [{1: "a", "b": 2}, {"b": 1, 2: 3}, {1, 2}, b"bytes", object, [float("inf")], {"a": [1, 2.5, "\u00e9\U0001f600"]}])
def test_dumps_matches_json_on_what_json_refuses_or_converts(value: Any) -> None:
    for sort_keys in (False, True):
        expected = _outcome(lambda: json.dumps(value, sort_keys=sort_keys, allow_nan=False, separators=(",", ":")))  # noqa: B023
        assert _outcome(lambda: _cjson.dumps(value, sort_keys=sort_keys, allow_nan=False)) == expected  # noqa: B023


def test_dumps_names_a_circular_value_as_json_does() -> None:
    circular: list[Any] = []
    circular.append(circular)
    with pytest.raises(ValueError, match="Circular reference detected"):
        _cjson.dumps(circular)


def test_neither_imports_json_when_the_text_is_json() -> None:
    code = (
        "import sys\n"
        "from aotc import _cjson\n"
        "assert _cjson.loads(' {\"a\": [1, 2.5, \"x\", null, true]} ') == {'a': [1, 2.5, 'x', None, True]}\n"
        "assert _cjson.dumps({'b': 1, 'a': [2]}, sort_keys=True) == '{\"a\":[2],\"b\":1}'\n"
        "print(sorted(m for m in ('json', 're', 'enum') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, env=aotc_env(), timeout=60, check=True)
    assert done.stdout.strip() == "[]"
