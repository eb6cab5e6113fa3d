"""Which template line each line of a generated source came from, and compiler
errors told in those terms.

Codegen renders every template a second time from a marked copy of its text:
before each newline of the template's literal text (outside ``{{ }}``,
``{% %}`` and ``{# #}``) it puts a marker naming the template and the line. A
rendered line carries the marker of the newline that ends it, so its origin
is read off the marked rendering; once the markers are taken out, that
rendering must equal the plain one, or there is no map (a template whose text
flows into its own logic, ``{% set x %}...{% endset %}``, say). The map is
written beside the source (``<kernel>.lines``); the source itself is not
touched, so its bytes, and the fatbins built from them, stay as they were.
(``#line`` directives would say the same to the compiler, but they change the
source's bytes, and so every fatbin cache key.)

A newline right after a block or comment tag gets no marker: ``trim_blocks``
removes exactly that newline, and a marker before it would keep it. A line
without a marker (a block tag's line, text an expression printed) takes the
next marked line's origin.

When a compile fails, ``explain`` rewrites the compiler's ``file(line):
error`` lines (nvcc, NVRTC) and ``file:line:col: error`` lines (a host
compiler) to begin with the template's file and line, keeps the source lines
the compiler quotes, and drops ptxas' report.

Standard library only: ``aotc-compile`` reads maps on every failed compile.
"""

from __future__ import annotations

import os
import re

__all__ = ["MARK_RE", "explain", "line_map", "map_path", "mark", "read_map", "write_map"]

_OPEN, _CLOSE = "\ue000", "\ue001"  # private-use characters: no template has them
MARK_RE = re.compile(f"{_OPEN}([^{_CLOSE}]*){_CLOSE}")
_TAGS = {"{{": "}}", "{%": "%}", "{#": "#}"}
HEADER = "aotc line map 1"


def mark(source: str, name: str) -> str | None:
    """``source`` (template ``name``) with a marker before each newline of its literal
    text; None where a tag is never closed (the plain render then reports it)."""
    out: list[str] = []
    i, line, after_block, has_text = 0, 1, False, False
    while i < len(source):
        opener = source[i : i + 2]
        if opener in _TAGS:
            end = _tag_end(source, i + 2, _TAGS[opener])
            if end < 0:
                return None
            if source[i + 2 : i + 3] == "-":  # strips the whitespace before it: no marker may stand in its way
                k = len(out)
                while k and (out[k - 1].isspace() or out[k - 1].startswith(_OPEN)):
                    k -= 1
                markers = [part for part in out[k:] if part.startswith(_OPEN)]
                # The first stays, right after the text it ends: the stripping stops there.
                out[k:] = markers[:1] + [part for part in out[k:] if not part.startswith(_OPEN)]
            elif opener != "{{" and has_text:
                # Text, then a block tag that may take this line's newline: the line is
                # marked here too, and a line's first marker is its origin.
                out.append(f"{_OPEN}{name}:{line}{_CLOSE}")
            out.append(source[i:end])
            line += source.count("\n", i, end)
            # trim_blocks takes the newline after a block or comment tag; "-" the whitespace after any tag.
            after_block = opener != "{{" or source[end - 3] == "-"
            i = end
            continue
        ch = source[i]
        if ch == "\n":
            if not after_block:
                out.append(f"{_OPEN}{name}:{line}{_CLOSE}")
            line += 1
            has_text = False
        elif not ch.isspace():
            has_text = True
        out.append(ch)
        after_block = False
        i += 1
    return "".join(out)


def _tag_end(source: str, start: int, closer: str) -> int:
    """The index just past ``closer``, skipping quoted strings inside an expression or block tag; -1 if none."""
    i, quote = start, ""
    while i < len(source):
        ch = source[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif closer != "#}" and ch in "'\"":
            quote = ch
        elif source.startswith(closer, i):
            return i + 2
        i += 1
    return -1


def line_map(marked_output: str, plain_output: str) -> list[str] | None:
    """Each line's origin (``template:line``, or "" where none is known), from the
    marked rendering; None where it is not the plain rendering once unmarked."""
    if MARK_RE.sub("", marked_output) != plain_output:
        return None
    origins: list[str] = []
    for text in marked_output.split("\n"):
        found = MARK_RE.search(text)
        origins.append(found[1] if found else "")
    following = ""
    for k in range(len(origins) - 1, -1, -1):  # an unmarked line: the next marked line's origin
        following = origins[k] = origins[k] or following
    return origins


def map_path(source: str | os.PathLike[str]) -> str:
    """Where a generated source's line map lives: ``gen/<kernel>.lines``."""
    root, _ = os.path.splitext(os.fspath(source))
    return f"{root}.lines"


def write_map(origins: list[str], templates_dir: str) -> bytes:
    """The map file's bytes: a header, the templates folder, then one origin a line."""
    return "\n".join([HEADER, templates_dir, *origins]).encode() + b"\n"


def read_map(source: str | os.PathLike[str]) -> list[str] | None:
    """The origins of ``source``'s lines (index 0: line 1), with the templates
    folder joined on; None where there is no readable map."""
    try:
        with open(map_path(source), encoding="utf-8") as f:
            text = f.read(16 * 1024 * 1024)
    except (OSError, UnicodeDecodeError):
        return None
    lines = text.removesuffix("\n").split("\n")
    if len(lines) < 2 or lines[0] != HEADER:
        return None
    folder = lines[1]
    return [os.path.join(folder, origin) if origin else "" for origin in lines[2:]]


# nvcc and NVRTC: "path(12): error: ..."; a host compiler: "path:12:5: error: ...".
_DIAGNOSTIC = re.compile(r"^(?P<file>[^\s()][^()]*?)(?:\((?P<line>\d+)\)|:(?P<hline>\d+):\d+):\s*(?P<rest>(?:error|warning|catastrophic error|fatal error)\b.*)$")


def explain(report: str, source: str | os.PathLike[str]) -> tuple[str, int]:
    """The compiler's ``report`` for ``source``, each diagnostic on the generated
    source led by the template line it came from, ptxas' report left out; and
    how many errors it holds."""
    origins = read_map(source)
    name = os.path.basename(os.fspath(source))
    lines, errors = [], 0
    for text in report.splitlines():
        # ptxas' report: nvcc indents its continuation lines, NVRTC's log starts them "ptxas  ."
        if text.startswith("ptxas info") or (text.startswith(("    ", "ptxas ")) and "bytes stack frame" in text):
            continue
        match = _DIAGNOSTIC.match(text)
        if match is None or os.path.basename(match["file"].strip()) != name:
            lines.append(text)
            continue
        number = int(match["line"] or match["hline"])
        errors += "error" in match["rest"].split(":", 1)[0]
        origin = origins[number - 1] if origins and 0 < number <= len(origins) else ""
        generated = f"{match['file'].strip()}:{number}"
        lines.append(f"{origin}: {match['rest']} [{generated}]" if origin else text)
    return "\n".join(lines) + ("\n" if lines else ""), errors
