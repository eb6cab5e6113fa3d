"""A declared family's launch shape at one point: grid and block expressions,
and the shared memory its kernel uses.

Launch expressions are parsed with Python's own ``ast`` module, then held to
a small grammar: names, integers, ``*``, ``cdiv(a, b)`` (a ceiling division
by a constant) and ``sizeof(dtype)``; ``+``, ``-`` and ``//`` between
constants. A name is a size parameter of the signature, an integer axis or
constant, or a parameter the point's signature leaves out, which counts 1 (a
single kernel's grid over ``batch`` is one block deep). A grid expression
reduces to ``ceil(scale * product(sizes) / tile)``, which is what the index
records and the launcher computes per call.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from typing import Any

from aotc.build._checks import MAX_EXPRESSION_CHARS, MAX_EXPRESSION_DEPTH, Checker, describe, line_of, listing
from aotc.build._family_rules import AxisValue
from aotc.build._yaml import LineDict, LineList
from aotc.build.signature import ELEMENT_TYPES, Extent, ScalarParam, Signature, SizeExpression
from aotc.errors import echo

__all__ = ["LAUNCH_KEYS", "DeclaredLaunch", "parse_launch", "parse_size"]

LAUNCH_KEYS = ("grid", "block", "shared", "static_shared")
_MAX_THREADS = 1024
_MAX_BLOCK = (1024, 1024, 64)
# Dynamic shared memory past 48 KiB needs a per-kernel opt-in the launchers do
# not make; static shared memory past it does not link on any supported arch.
_MAX_SHARED = 48 * 1024


@dataclass(frozen=True)
class DeclaredLaunch:
    """Launch geometry resolved at one point: grid extents over the scalar
    parameters, block shape and shared memory as numbers. ``shared_bytes_static``
    is what the family declares its kernel's ``__shared__`` arrays take (0 where
    it declares nothing; ptxas' report in the index has the figure then)."""

    grid: tuple[Extent, Extent, Extent]
    block: tuple[int, int, int]
    shared_bytes_dynamic: int
    shared_bytes_static: int = 0


def parse_launch(
    check: Checker,
    launch: LineDict,
    override: LineDict | None,
    key: str,
    values: dict[str, AxisValue],
    where: str,
    signature: Signature,
    absent: frozenset[str] = frozenset(),
    override_key: str = "",
) -> DeclaredLaunch:
    """The launch geometry at a point whose axis values and constants are
    ``values``: the family's ``launch:``, with the matrix block's ``launch:``
    keys in its place where the block has them. ``absent`` names the
    parameters this point's signature leaves out."""
    strides = {s for p in signature.arrays for s in p.strides}
    # Where the array lies and where a launch starts are not how much work there is.
    sizes = {p.name for p in signature.params if isinstance(p, ScalarParam) and p.type in ("i32", "i64") and p.name not in strides and not p.split}

    def field(name: str) -> tuple[Any, str, int]:
        source, source_key = (override, override_key) if override is not None and name in override else (launch, key)
        return source[name], f"{source_key}.{name}", line_of(source, name)

    def has(name: str) -> bool:
        return name in launch or (override is not None and name in override)

    def axes_of(name: str, extents: set[str]) -> list[Extent]:
        raw, at, at_line = field(name)
        items = check.sequence(raw, at, at_line) if isinstance(raw, LineList) else [raw]
        if len(items) > 3:
            check.fail(at_line, at, f"has {len(items)} axes; CUDA has 3 (x, y, z)")
        parsed = [_Expression(check, f"{at}[{i}]", at_line, values, extents, absent).parse(item) for i, item in enumerate(items)]
        return parsed + [Extent((), 1, 1)] * (3 - len(parsed))

    def constant(name: str) -> int:
        raw, at, at_line = field(name)
        number = _Expression(check, at, at_line, values, set(), absent).parse(raw).scale
        if not 0 <= number <= _MAX_SHARED:
            check.fail(at_line, at, f"{number} bytes at {where}; shared memory is 0 to {_MAX_SHARED} bytes")
        return number

    grid = axes_of("grid", sizes)
    block_extents = axes_of("block", set())
    block = tuple(e.scale for e in block_extents)
    _, block_key, block_line = field("block")
    threads = block[0] * block[1] * block[2]
    if threads > _MAX_THREADS or any(b < 1 or b > limit for b, limit in zip(block, _MAX_BLOCK)):
        check.fail(block_line, block_key, f"{list(block)} at {where} is not a block CUDA launches (at most {_MAX_THREADS} threads, {list(_MAX_BLOCK)})")
    dynamic = constant("shared") if has("shared") else 0
    static = constant("static_shared") if has("static_shared") else 0
    return DeclaredLaunch((grid[0], grid[1], grid[2]), (block[0], block[1], block[2]), dynamic, static)


class _Expression:
    """One launch expression, reduced to an Extent (see the module docstring)."""

    def __init__(self, check: Checker, key: str, line: int, values: dict[str, AxisValue], sizes: set[str], absent: frozenset[str]) -> None:
        self.check, self.key, self.line, self.values, self.sizes, self.absent = check, key, line, values, sizes, absent

    def fail(self, problem: str) -> Any:
        self.check.fail(self.line, self.key, problem)

    def parse(self, raw: Any) -> Extent:
        if isinstance(raw, bool) or not isinstance(raw, (int, str)):
            self.fail(f"expected an expression, got {describe(raw)}")
        if isinstance(raw, int):
            return self._constant(raw)
        return self._node(_tree(self.fail, raw, "a launch expression"))

    def _constant(self, value: int) -> Extent:
        if not 0 <= value <= 1 << 31:  # a constant may be any 64-bit integer; a launch takes these
            self.fail(f"{value} is out of range (0 to 2**31)")
        return Extent((), value, 1)

    def _node(self, node: ast.AST) -> Extent:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return self._constant(node.value)
        if isinstance(node, ast.Name):
            return self._name(node.id)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Add, ast.Sub, ast.FloorDiv)):
            left, right = self._node(node.left), self._node(node.right)
            if isinstance(node.op, ast.Mult) and left.tile == right.tile == 1:
                if left.scale * right.scale > 1 << 31:
                    self.fail(f"a constant factor of {left.scale * right.scale} is out of range (0 to 2**31)")
                return Extent(left.factors + right.factors, left.scale * right.scale, 1)
            if left.factors or right.factors or left.tile != 1 or right.tile != 1:
                self.fail("sizes combine only by * and cdiv(product, constant); +, - and // take constants")
            if isinstance(node.op, ast.FloorDiv) and right.scale == 0:
                self.fail("divides by zero")
            op = {ast.Mult: int.__mul__, ast.Add: int.__add__, ast.Sub: int.__sub__, ast.FloorDiv: int.__floordiv__}[type(node.op)]
            return self._constant(op(left.scale, right.scale))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
            if node.func.id == "cdiv" and len(node.args) == 2:
                return self._cdiv(self._node(node.args[0]), self._node(node.args[1]))
            if node.func.id == "sizeof" and len(node.args) == 1 and isinstance(node.args[0], ast.Name):
                return self._sizeof(node.args[0].id)
        return self.fail(f"{echo(ast.unparse(node))} is not allowed (names, integers, *, cdiv(a, b), sizeof(dtype); +, -, // of constants)")

    def _name(self, name: str) -> Extent:
        if name in self.values:
            value = self.values[name]
            if isinstance(value, bool) or not isinstance(value, int):
                self.fail(f"{name} is {echo(value)} here, not a number")
            return self._constant(value)
        if name in self.sizes:
            return Extent((name,), 1, 1)
        if name in self.absent:
            return self._constant(1)  # a dimension this point's kernel does not have
        known = sorted({*self.sizes, *(a for a, v in self.values.items() if isinstance(v, int))})
        where = "an integer scalar of the signature or an integer axis or constant" if self.sizes else "an integer axis or constant (sizes are known only at a call)"
        return self.fail(f"{echo(name)} is not {where} (known: {listing(known) or 'none'})")

    def _cdiv(self, top: Extent, bottom: Extent) -> Extent:
        if top.tile != 1 or bottom.factors or bottom.tile != 1:
            self.fail("cdiv(a, b) divides a product by a constant")
        if bottom.scale <= 0:
            self.fail("cdiv(a, b) needs b > 0")
        if not top.factors:
            return self._constant(-(-top.scale // bottom.scale))
        if top.scale % bottom.scale == 0:
            return Extent(top.factors, top.scale // bottom.scale, 1)
        return Extent(top.factors, top.scale, bottom.scale)

    def _sizeof(self, name: str) -> Extent:
        dtype = self.values.get(name, name)
        if dtype not in ELEMENT_TYPES:
            self.fail(f"sizeof({name}): expected a dtype, or an axis or constant naming one")
        return self._constant(ELEMENT_TYPES[dtype].size)


@functools.lru_cache(maxsize=1024)
def _parsed(text: str) -> tuple[ast.expr | None, int]:
    """``text`` parsed (None where Python refuses it), and how deeply it nests. Once
    per text, not per point: a family's points share its expressions, and parsing
    them was most of the time a 10,000-kernel manifest took to load. The tree is
    only read."""
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, MemoryError, RecursionError):  # CPython refuses deep nesting in any of these
        return None, 0
    return tree.body, _depth(tree.body)


def _tree(fail: Any, raw: str, what: str) -> ast.expr:
    """``raw`` parsed by Python's own ``ast`` (once per text), within the length and depth limits."""
    if len(raw) > MAX_EXPRESSION_CHARS:
        fail(f"{len(raw)} characters, over the limit of {MAX_EXPRESSION_CHARS} for {what}")
    tree, depth = _parsed(raw.strip())
    if tree is None:
        # `grid: [cdiv(n, 256)]` unquoted reaches here as 'cdiv(n' and '256)': YAML's [...] split it.
        split = "; a YAML [...] list splits at commas: quote an expression that has one" if raw.count("(") != raw.count(")") else ""
        fail(f"{echo(raw)} is not an expression{split}")
    if depth > MAX_EXPRESSION_DEPTH:
        fail(f"{echo(raw)} nests {depth} operations deep, over the limit of {MAX_EXPRESSION_DEPTH}")
    return tree


# A shape expression's polynomial stays small: terms, and names a term.
_MAX_TERMS = 8
_MAX_FACTORS = 4
_MAX_COEFFICIENT = 1 << 31


def parse_size(check: Checker, raw: str, key: str, line: int) -> SizeExpression:
    """A shape entry written as an expression (``rows + 1``, ``2 * n``,
    ``cdiv(bits, 32)``), on the launch expressions' whitelist with ``+`` and
    ``-`` between sizes too: a polynomial over names, with integer
    coefficients, optionally inside one ``cdiv(..., constant)``. Its names are
    checked against the signature, axes and constants where the family is."""

    def fail(problem: str) -> Any:
        check.fail(line, key, problem)

    def node(item: ast.AST) -> dict[tuple[str, ...], int]:
        if isinstance(item, ast.Constant) and type(item.value) is int:
            return {(): item.value}
        if isinstance(item, ast.Name):
            return {(item.id,): 1}
        if isinstance(item, ast.BinOp) and isinstance(item.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)):
            left, right = node(item.left), node(item.right)
            if isinstance(item.op, ast.Mult):
                product: dict[tuple[str, ...], int] = {}
                for a, x in left.items():
                    for b, y in right.items():
                        names = tuple(sorted(a + b))
                        if len(names) > _MAX_FACTORS:
                            fail(f"a term multiplies more than {_MAX_FACTORS} sizes")
                        product[names] = product.get(names, 0) + x * y
                return _small(fail, product)
            if isinstance(item.op, ast.FloorDiv):
                if set(left) | set(right) != {()} or right[()] == 0:
                    fail("// divides one constant by another (nonzero); cdiv(a, b) divides sizes")
                return {(): left[()] // right[()]}
            sign = 1 if isinstance(item.op, ast.Add) else -1
            total = dict(left)
            for names, coef in right.items():
                total[names] = total.get(names, 0) + sign * coef
            return _small(fail, total)
        return fail(f"{echo(ast.unparse(item))} is not allowed in a shape (names, integers, +, -, *, // of constants, cdiv(a, b) around the whole)")

    body = _tree(fail, raw, "a shape expression")
    div = 1
    if isinstance(body, ast.Call) and isinstance(body.func, ast.Name) and body.func.id == "cdiv" and len(body.args) == 2 and not body.keywords:
        bottom = node(body.args[1])
        if set(bottom) != {()} or bottom[()] <= 0:
            fail("cdiv(a, b) divides by a positive constant b")
        div, body = bottom[()], body.args[0]
    terms = tuple((coef, names) for names, coef in node(body).items() if coef)
    if not any(names for _, names in terms):
        fail(f"{echo(raw)} names no size; write the number")
    return SizeExpression(terms, div)


def _small(fail: Any, poly: dict[tuple[str, ...], int]) -> dict[tuple[str, ...], int]:
    if len(poly) > _MAX_TERMS:
        fail(f"expands to {len(poly)} terms, over the limit of {_MAX_TERMS}")
    if any(abs(coef) > _MAX_COEFFICIENT for coef in poly.values()):
        fail(f"a coefficient is out of range (-2**31 to 2**31): {max(poly.values(), key=abs)}")
    return poly


def _depth(root: ast.AST) -> int:
    """How deeply ``root``'s operations nest, counted without recursion (the
    checks that recurse run only on an expression within the limit)."""
    deepest, stack = 0, [(root, 0)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node) if not isinstance(child, (ast.operator, ast.expr_context)))
    return deepest
