"""A call's decision: its kernel, its dimensions, its out arrays and its grid.

What a call decides from its arrays' shapes and dtypes, the axes it names and
the extents it gives, before it copies or allocates anything: so every
refusal (a shape that does not fit, a size past the kernel's integer type or
past CUDA's grid) is one line and costs no memory. A repeat call with alike
arrays finds the same ``Decision`` in its layout's plan table.

- Each dimension is bound from the in and inout arrays that name it, or given
  by the caller (an out array's extent, checked against its bound).
- An array of ``lanes`` values an element has a trailing axis of that length,
  which no dimension counts (tropical counting's (value, count) pairs).
- An array of packed bits holds its last dimension in words of ``pack``
  values: bound from it alone, that dimension is the words' capacity (bits
  past the data must be what the kernel ignores, zeros for and/or).
- A leading optional dimension may be left out: it is 1, unless another
  array gives it; then an in array with a declared stride there is broadcast
  (stride 0). An out array keeps it where some given array has it; an out
  array the caller gives without it, where its declared stride allows,
  receives every index along it (tropical's backward sums a broadcast
  operand's gradient over the batch so).
- An extent written as an expression (``indptr``: ``rows + 1``) binds
  nothing: an in array's is checked once every size is known, an out
  array's sizes it. A caller's extent tied to a dimension (``max``,
  ``equals``) is checked against it.
- The grid is launched whole, or in parts along the axes the kernel declares
  a ``split`` offset for, where it is past CUDA's limits there
  (``Decision.launches``); a grid with an extent of 0 launches nothing.
"""

from __future__ import annotations

from aotc.dtypes import SCALAR_TYPES
from aotc.errors import ArgumentError, ArgumentTypeError, called, echo
from aotc.kernels._keys import decision_key
from aotc.runtime.launcher import KernelSignature, grid_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aotc.index import DeclaredParam, IndexKernel

__all__ = ["GRID_LIMITS", "INT_RANGES", "Decision", "axis_value", "decide", "decided", "integer_of"]

GRID_LIMITS = (2**31 - 1, 65535, 65535)
# The integer scalars' ranges, from the one dtype table: what a dimension, an
# extent or a caller's argument must fit.
INT_RANGES = {name: d.bounds for name, d in SCALAR_TYPES.items() if d.kind in ("int", "uint")}


class Decision:
    """What a call with these shapes, dtypes, axes and extents launches: the kernel,
    its dimensions (by parameter name), each out array's shape and dtype (by
    binding name) and fill, the grid, and the ``launches`` it makes: one
    ``(grid, offsets)`` a launch, in order, where ``offsets`` are the values of
    the kernel's split offsets ((parameter name, value) pairs) for that part;
    none where the grid has an extent of 0 (the out arrays are still made and filled)."""

    __slots__ = ("dims", "fills", "grid", "kernel", "launches", "out_dtypes", "out_shapes", "params")

    def __init__(self, kernel: IndexKernel, params: dict[str, DeclaredParam], dims: dict[str, int],
                 out_shapes: dict[str, tuple[int, ...]], grid: tuple[int, int, int]) -> None:  # fmt: skip
        self.kernel = kernel
        self.params = params  # the kernel's arrays and caller's scalars, by binding name
        self.dims = dims
        self.out_shapes = out_shapes
        self.out_dtypes = {name: params[name].dtype for name in out_shapes}
        self.fills = {name: params[name].fill for name in out_shapes if params[name].fill is not None}
        self.grid = grid
        self.launches = _launches(kernel, grid)


def decided(layout: Any, shapes: dict[str, tuple[int, ...]], dtypes: dict[str, str], axes: dict[str, Any],
            extents: dict[str, Any], out_given: dict[str, tuple[int, ...]]) -> Decision:  # fmt: skip
    """``decide``, kept in the layout's plan table (``shapes`` in the layout's
    ``given`` order): a repeat call with alike arrays, axes and extents finds it."""
    key = decision_key(shapes, dtypes, out_given, axes, extents)
    found = layout.plans.get(key)  # None for an unhashable axis value or extent: decide() names it
    if found is None:
        found = decide(layout, shapes, dtypes, axes, extents, out_given)
        try:
            layout.plans.keep(key, found)
        except TypeError:  # symbolic sizes (torch.compile's backward): decided again each trace
            pass
    return found


def decide(layout: Any, shapes: dict[str, tuple[int, ...]], dtypes: dict[str, str], axes: dict[str, Any],
           extents: dict[str, Any], out_given: dict[str, tuple[int, ...]]) -> Decision:  # fmt: skip
    """The decision for in and inout arrays of these ``shapes`` and ``dtypes`` (and
    out arrays the caller gives, of the shapes in ``out_given`` and dtypes in
    ``dtypes``), by binding name; the fake ops call it with symbolic shapes. A
    refusal names the layout as the function called, unless a call over it did."""
    try:
        return _decide(layout, shapes, dtypes, axes, extents, out_given)
    except (ArgumentError, ArgumentTypeError) as exc:
        called(exc, layout.name)
        raise


def _decide(layout: Any, shapes: dict[str, tuple[int, ...]], dtypes: dict[str, str], axes: dict[str, Any],
            extents: dict[str, Any], out_given: dict[str, tuple[int, ...]]) -> Decision:  # fmt: skip
    kernel = layout.choose(dtypes, axes, {name: shapes[name] if name in shapes else out_given[name] for name in dtypes})
    params = layout.bound[kernel.name]
    dims: dict[str, Any] = {}
    bound_by: dict[str, str] = {}
    left_out: dict[str, list[tuple[str, int]]] = {}  # an optional dimension -> the arrays without it, and where
    packed: list[tuple[str, str, Any, int]] = []  # (array, dimension, words, pack): bound after the others
    later: list[tuple[str, Any, Any]] = []  # (array, expression, its extent): checked once every size is known
    for name in layout.given:
        declared = params[name]
        shape = _core(name, shapes[name], declared)
        dropped = len(declared.shape) - len(shape)
        for i, extent in enumerate(declared.shape[:dropped]):
            left_out.setdefault(extent, []).append((name, i))
        for i, (extent, size) in enumerate(zip(declared.shape[dropped:], shape)):
            if type(extent) is int:
                if size != extent:
                    msg = f"{name}: shape {tuple(shapes[name])}, but it needs {extent} where it has {size}"
                    raise ArgumentError(msg)
            elif type(extent) is not str:
                later.append((name, extent, size))
            elif declared.pack and dropped + i == len(declared.shape) - 1:
                packed.append((name, extent, size, declared.pack))
            else:
                _bind(dims, bound_by, extent, size, name, shapes[name])
    lengths = {p.name: p.arg for p in kernel.signature or () if p.scalar and p.arg in layout.lengths}
    for name, extent, words, pack in packed:
        length = extents.get(lengths.get(extent, ""))
        if length is not None and extent not in dims:
            _bind(dims, bound_by, extent, _extent(lengths[extent], length, params_of(kernel, extent), dims, bound_by, shapes), lengths[extent], shapes[name])
        if extent not in dims:
            _bind(dims, bound_by, extent, words * pack, name, shapes[name])  # the words' capacity: padding is the kernel's to ignore
        elif -(-dims[extent] // pack) != words:
            msg = f"{name}: {words} words of {pack} bits, but {extent}={dims[extent]} ({bound_by[extent]} gave it) takes {-(-dims[extent] // pack)}"
            raise ArgumentError(msg)
    present = set(dims)  # the out arrays keep an optional dimension where a given array had it
    for extent, arrays in left_out.items():
        # Left out, a dimension is 1, unless another array gives it: then an in
        # array with a declared stride there is broadcast (stride 0); any other
        # would be read past its end.
        if dims.setdefault(extent, 1) != 1:
            for name, i in arrays:
                declared = params[name]
                if declared.role != "in" or not declared.strides or type(declared.strides[i]) is not str:
                    msg = f"{name}: shape {tuple(shapes[name])} leaves out {extent}, but {bound_by[extent]} gives {extent}={dims[extent]}"
                    raise ArgumentError(msg)
        bound_by.setdefault(extent, arrays[0][0])
    for name in layout.extents:
        declared = params[name]
        dims[declared.name] = _extent(name, extents[name], declared, dims, bound_by, shapes)
    for name, expression, size in later:
        want = expression.value(dims)
        if want != size:
            msg = f"{name}: shape {tuple(shapes[name])}, but it needs {expression} = {want} ({_sizes(expression, dims)}) where it has {size}"
            raise ArgumentError(msg)
    for p in kernel.signature or ():
        if p.scalar and p.dim and p.name in dims and dims[p.name] > INT_RANGES[p.dtype][1]:
            msg = f"{bound_by.get(p.name, p.arg)}: {p.name}={dims[p.name]} is past the kernel's {p.dtype} limit of {INT_RANGES[p.dtype][1]}"
            raise ArgumentError(msg)
    out_shapes = {}
    for name in layout.outs:
        declared = params[name]
        first = next((i for i, e in enumerate(declared.shape[: declared.optional]) if e in present), declared.optional)
        shape = tuple(extent if type(extent) is int else dims[extent] if type(extent) is str else extent.value(dims) for extent in declared.shape[first:])
        negative = next((e for e in declared.shape[first:] if type(e) not in (int, str) and _below_zero(e.value(dims))), None)
        if negative is not None:
            msg = f"{name}: its extent {negative} = {negative.value(dims)} ({_sizes(negative, dims)}) is negative"
            raise ArgumentError(msg)
        if declared.pack:
            shape = (*shape[:-1], -(-shape[-1] // declared.pack))
        if declared.lanes > 1:
            shape = (*shape, declared.lanes)
        given = out_given.get(name)
        if given is not None and tuple(given) != shape:
            shape = _reduced(name, tuple(given), shape, declared, dtypes.get(name))
        out_shapes[name] = shape
    return Decision(kernel, params, dims, out_shapes, _grid(kernel, dims, bound_by))


def params_of(kernel: IndexKernel, name: str) -> DeclaredParam:
    """The declared parameter of ``kernel`` whose (manifest) name is ``name``."""
    return next(p for p in kernel.signature or () if p.name == name)


def _core(name: str, shape: Any, declared: DeclaredParam) -> tuple[Any, ...]:
    """``shape`` without its trailing lanes axis (checked)."""
    shape = tuple(shape)
    if declared.lanes > 1:
        if not shape or shape[-1] != declared.lanes:
            msg = f"{name}: needs a trailing axis of length {declared.lanes} ({declared.lanes} values an element), got shape {shape}"
            raise ArgumentError(msg)
        return shape[:-1]
    return shape


def _bind(dims: dict[str, Any], bound_by: dict[str, str], extent: str, size: Any, name: str, shape: Any) -> None:
    known = dims.setdefault(extent, size)
    if known != size:
        msg = f"{name}: shape {tuple(shape)} gives {extent}={size}, but {bound_by[extent]} gave {extent}={known}"
        raise ArgumentError(msg)
    bound_by.setdefault(extent, name)


def integer_of(value: Any) -> int | None:
    """The int ``value`` stands for where a call takes an integer (a size, an axis
    value): an int, a NumPy integer scalar (what array arithmetic gives), a 0-d
    integer array or tensor, as ``operator.index`` takes them; None for a bool
    (Python's, or an array's of dtype bool), a float, an array of several values
    and anything else."""
    if isinstance(value, bool) or not hasattr(value, "__index__") or "bool" in str(getattr(value, "dtype", "")):
        return None
    try:
        return value.__index__()
    except (TypeError, ValueError, RuntimeError):  # an array of one or more values, or a 0-d float one
        return None


def axis_value(layout: Any, axis: str, value: Any) -> Any:
    """``value`` as ``layout``'s axis ``axis`` holds its values: a name as given,
    an integer as the int it stands for (``integer_of``: ``np.int64(256)`` is
    256; never a bool or a float); refused in one line where no kernel there has it."""
    found = value if isinstance(value, str) else integer_of(value)
    if found is None or found not in layout.axes[axis]:
        raise layout.not_a_value(axis, value)
    return found


def _extent(name: str, value: Any, declared: DeclaredParam, dims: dict[str, Any], bound_by: dict[str, str], shapes: dict[str, Any]) -> int:
    """A size the caller gives (an extent, a packed dimension's length): an
    integer (``integer_of``) from 0 to its bound (``max``, else its type's
    range), or equal to the dimension it is tied to (``equals``)."""
    number = integer_of(value)
    if number is None:
        shape = getattr(value, "shape", ())
        got = f"an array of shape {tuple(shape)}" if shape else echo(value)
        msg = f"{name}: expected an integer extent ({declared.dtype}), got {got}"
        raise ArgumentTypeError(msg)
    tie = declared.equals
    if tie is not None:
        if number != dims[tie]:
            source = bound_by[tie]
            msg = f"{source}: shape {tuple(shapes[source])} gives {tie}={dims[tie]}, but {name} is {number}, which it must equal"
            raise ArgumentError(msg)
        return number
    bound = declared.max
    limit, what = INT_RANGES[declared.dtype][1], f"the kernel's {declared.dtype} limit {INT_RANGES[declared.dtype][1]}"
    if type(bound) is int:
        limit, what = bound, f"its bound {bound}"
    elif bound is not None:
        limit, what = dims[bound], f"{bound}={dims[bound]} ({bound_by[bound]} gives {bound})"
    if not 0 <= number <= limit:
        msg = f"{name}: {number} is not from 0 to {what}"
        raise ArgumentError(msg)
    return number


def _sizes(expression: Any, dims: dict[str, Any]) -> str:
    """The sizes an expression reads, as a message lists them: ``rows=3, cols=4``."""
    return ", ".join(f"{n}={dims[n]}" for n in expression.names)


def _below_zero(value: Any) -> bool:
    return type(value) is int and value < 0  # a tracer's symbolic size is left to the call that binds it


def _reduced(name: str, given: tuple[int, ...], shape: tuple[int, ...], declared: DeclaredParam, dtype: Any) -> tuple[int, ...]:
    """A given out array's shape that leaves out leading optional dimensions of
    ``shape``, each with a declared stride (the kernel writes each of their
    indices to the same element); anything else is refused as today."""
    dropped = len(shape) - len(given)
    optional = declared.optional - (len(declared.shape) + (declared.lanes > 1) - len(shape))
    strided = declared.strides and all(type(s) is str for s in declared.strides[:dropped])
    if 0 < dropped <= optional and strided and given == shape[dropped:]:
        return given
    msg = f"{name}: expected shape {shape} and dtype {declared.dtype}, got {given} and {dtype}"
    raise ArgumentError(msg)


def _grid(kernel: IndexKernel, dims: dict[str, Any], bound_by: dict[str, str]) -> tuple[int, int, int]:
    """The launch's grid from the dimensions (the launcher's own formula,
    ``aotc.runtime.launcher.grid_of``): past CUDA's limits on an axis, it is
    launched in parts where the kernel declares a split offset there (``_launches``),
    and refused where it does not."""
    signature = KernelSignature.from_kernel(kernel)
    grid = grid_of(signature, [dims.get(name, 0) for name in signature.params])
    if not all(type(g) is int for g in grid):
        return grid  # a tracer's symbolic sizes: its real call decides again
    split = {p.split for p in kernel.signature or () if p.scalar and p.split}
    for axis, (blocks, limit) in enumerate(zip(grid, GRID_LIMITS)):
        letter = "xyz"[axis]
        if blocks > limit and letter not in split:
            extent = signature.grid[axis][0]
            size = next((f for f in extent.split("*") if f in dims), extent)
            by = f"{bound_by[size]}: {size}={dims[size]} makes" if size in bound_by else f"{extent} makes"
            msg = (
                f"{by} a grid of {tuple(grid)} blocks, {blocks} on {letter}, past CUDA's limit of {limit} there; "
                f"family {kernel.family} declares no split of {letter} (an integer scalar with split: {letter}, added to blockIdx.{letter})"
            )
            raise ArgumentError(msg)
    return grid


def _launches(kernel: IndexKernel, grid: Any) -> tuple[tuple[tuple[int, int, int], tuple[tuple[str, int], ...]], ...]:
    """The launches of ``grid``: none where it has an extent of 0; else in
    parts of at most CUDA's limit along each axis past it (``_grid`` refused
    any such axis the kernel declares no split offset for), each with its
    split offsets' values, the first block index of its part on their axes."""
    offsets = tuple((p.name, "xyz".index(p.split)) for p in kernel.signature or () if p.scalar and p.split)
    if not all(type(g) is int for g in grid):
        return ((grid, tuple((name, 0) for name, _ in offsets)),)  # a tracer's symbolic sizes: one stands for them
    if 0 in grid:
        return ()
    parts = [[(start, min(limit, blocks - start)) for start in range(0, blocks, limit)] for blocks, limit in zip(grid, GRID_LIMITS)]
    return tuple(
        ((x[1], y[1], z[1]), tuple((name, (x, y, z)[axis][0]) for name, axis in offsets))
        for z in parts[2]
        for y in parts[1]
        for x in parts[0]
    )
