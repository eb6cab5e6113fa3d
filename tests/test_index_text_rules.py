"""The index's text rules and its directory rows, read without ``re``, are the
regular expressions they replace (aotc.index._values, schema.ARCH_TEXT,
aotc.index._rows): the same answer on generated strings."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aotc.errors import IndexFormatError
from aotc.index import _rows, _values
from aotc.index.schema import ARCH_TEXT

_SETTINGS = settings(derandomize=True, max_examples=400, deadline=None, database=None)

RULES = {name: getattr(_values, name) for name in ("_IDENTIFIER", "_WORD", "_NAME_OR_EMPTY", "_CONSTANT", "_PLAIN_FILE", "_SHA256", "_CTYPE", "_VERSION")}
RULES["ARCH_TEXT"] = ARCH_TEXT
# Strings of a rule's characters at its limits' lengths, some with one character
# from outside: other ASCII, a newline (which `$` once let through), another
# script's letter or digit, a no-break space.
_LENGTHS = (0, 1, 2, 3, 5, 7, 62, 63, 64, 65, 66, 126, 127, 128, 129)
_ODD = ["\n", "\t", " ", "/", "*", ".", "-", "+", "_", "0", "a", "A", "f", "\u00e9", "\u0661", "\u00a0", "\x00"]


def _near(chars: str) -> st.SearchStrategy[str]:
    def of_length(n: int) -> st.SearchStrategy[str]:
        base = st.text(alphabet=chars, min_size=n, max_size=n)
        swapped = st.tuples(base, st.integers(min_value=0, max_value=max(n - 1, 0)), st.sampled_from(_ODD))
        return base | swapped.map(lambda t: t[0][: t[1]] + t[2] + t[0][t[1] + 1 :])

    return st.sampled_from(_LENGTHS).flatmap(of_length)


# Dotted runs of digits, for the version rule: 1 to 6 runs of 0 to 7 digits, some another script's.
_RUNS = st.sampled_from(["", "0", "13", "123456", "1234567", "\u0661\u0663", "1a"]) | st.text(alphabet="0123456789", max_size=7)
_DOTTED = st.lists(_RUNS, min_size=1, max_size=6).map(".".join)
_STRINGS = _near("ABZaz_09.+-* ") | _near("0123456789abcdef") | _near("1234567890af") | _DOTTED | st.text(max_size=8)


@pytest.mark.parametrize("name", sorted(RULES))
def test_each_rule_is_its_regular_expression(name: str) -> None:
    rule = RULES[name]
    pattern = re.compile(rule.pattern)

    @_SETTINGS
    @given(text=_STRINGS)
    def check(text: str) -> None:
        assert bool(rule.fullmatch(text)) == bool(pattern.fullmatch(text)), repr(text)

    check()


@pytest.mark.parametrize("text", ["80", "90a", "100f", "1000", "1009a", "08", "8", "80b", "10000", "", "a", "80\n", "٨٠"])
def test_arch_parts_are_the_expression_groups(text: str) -> None:
    match = re.fullmatch(ARCH_TEXT.pattern, text)
    assert ARCH_TEXT.parts(text) == (None if match is None else (int(match[1]), int(match[2]), match[3]))


_NAME = rb"([A-Za-z_][A-Za-z0-9_]{0,63})"
_ROW = re.compile(rb'"' + _NAME + rb'":\[(\d{1,12}),"' + _NAME + rb'",\[([^\[\]]{0,4096})\],(\d{1,7})\]')
_ROW_PARTS = [b'"', b"gemm_k", b'":[', b"12", b',"', b"fam", b'",[', b'"maxplus",4', b"],", b"3", b"]"]


@_SETTINGS
@given(
    edits=st.lists(
        st.tuples(st.integers(min_value=0, max_value=len(_ROW_PARTS) - 1), st.sampled_from([b"", b"x", b"0", b"[", b"]", b'"', b",", b"9" * 13, b"a" * 65, b"\xc3\xa9", b"_"])),
        max_size=3,
    ),
    follow=st.sampled_from([b",", b"}", b"", b"x"]),
)
def test_a_row_reads_as_the_expression_reads_it(edits: list[tuple[int, bytes]], follow: bytes) -> None:
    parts = list(_ROW_PARTS)
    for at, text in edits:
        parts[at] = text
    data = b"{" + b"".join(parts) + follow
    name = parts[1].decode("utf-8", "replace")
    match = _ROW.match(data, 1)
    expected = None
    if match is not None and match.group(1) == parts[1] and data[match.end() : match.end() + 1] in (b",", b"}"):
        _, offset, family, point, form = match.groups()
        expected = (int(offset), family.decode(), point, int(form))
    try:
        found = _rows.row("w", data, 1, name)
    except IndexFormatError:
        found = None
    assert found == expected, data
