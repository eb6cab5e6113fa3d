"""A kernel prepared for launching: everything known before the first call, kept.

Per call, a Launcher computes the grid from the size arguments, packs every
argument into one parameter block with a ``struct.Struct`` built once, and
hands both to the backend. Nothing else: no lookups in the index, no hashing,
no objects beyond the packed bytes and the grid tuple.

A caller that decided the grid itself (a grid past CUDA's limits, launched
in parts) launches each part with ``launch_at``. A caller that launches the
same sizes again and again (a call plan) binds them once: ``bind(args,
leading)`` packs every argument after the leading pointers into a fixed
tail and computes the grid, so a repeat launch packs only the pointers
(``BoundLaunch``).
"""

from __future__ import annotations

import struct

from aotc._record import Record
from aotc.errors import ArgumentError
from aotc.runtime.backends.params import ParamLayout

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from aotc.index import IndexKernel
    from aotc.runtime.select import ImageChoice

__all__ = ["BoundLaunch", "KernelSignature", "Launcher", "ProductGridLauncher", "grid_of", "product_grid"]


class KernelSignature(Record):
    """A kernel's parameters and launch geometry, as the index describes them."""

    _fields = ("name", "symbol", "params", "kinds", "format", "block", "grid", "shared_bytes_dynamic")
    __slots__ = _fields
    name: str
    symbol: str
    params: tuple[str, ...]
    kinds: tuple[str, ...]
    format: str  # struct format, native alignment: the C layout of the parameter list
    block: tuple[int, int, int]
    grid: tuple[tuple[str, int], tuple[str, int], tuple[str, int]]  # (extent, tile) per axis
    shared_bytes_dynamic: int

    @classmethod
    def from_kernel(cls, kernel: IndexKernel) -> KernelSignature:
        """The signature of a kernel of a validated index (``aotc.index``): its
        parameters, pack codes and geometry were checked, and are sealed by its checksum."""
        launch = kernel.launch
        return cls(
            kernel.name, kernel.symbol, kernel.param_names, kernel.kinds, kernel.pack_format,
            launch.block, launch.grid, launch.shared_bytes_dynamic,
        )  # fmt: skip


class Launcher:
    """Call it with the kernel's arguments, in the index's order, as ints:
    device pointers as addresses, sizes and strides as Python ints.

    ``launcher(A, B, C, M, N, K, lda, ldb, ldc, stream=0)``
    """

    __slots__ = (
        "_axes",
        "_block",
        "_function",
        "_launch",
        "_layout",
        "_module",
        "_pack",
        "_shared",
        "choice",
        "image",
        "signature",
    )

    def __init__(
        self,
        signature: KernelSignature,
        backend: Any,
        module: Any,
        function: Any,
        *,
        choice: ImageChoice | None,
        image: str,
    ) -> None:
        self.signature = signature
        self.choice = choice  # None where a source backend compiled the .cu itself
        self.image = image  # one line for people: which image runs, from where
        self._module = module  # some backends unload a module when it is collected
        self._function = function
        self._launch = backend.launch
        self._layout = ParamLayout(signature.format)
        self._pack = self._layout.pack
        self._block = signature.block
        self._shared = signature.shared_bytes_dynamic
        # Per axis (argument index, tile, constant): index -1 means a fixed extent.
        # A product extent (a declared kernel's "rows*heads") is ProductGridLauncher's.
        axes = []
        for extent, tile in signature.grid:
            if extent.isdigit():
                axes.append((-1, tile, -(-int(extent) // tile)))
            elif "*" not in extent:
                axes.append((signature.params.index(extent), tile, 0))
            else:
                axes.append((-1, tile, 1))
        self._axes = tuple(axes)

    @property
    def name(self) -> str:
        return self.signature.name

    @property
    def params(self) -> tuple[str, ...]:
        return self.signature.params

    def __repr__(self) -> str:
        return f"<Launcher {self.signature.name}({', '.join(self.signature.params)}): {self.image}>"

    def __call__(self, *args: int, stream: Any = 0) -> None:
        try:
            params = self._pack(*args)
        except struct.error:
            sig = self.signature
            raise self._layout.argument_error(sig.name, sig.params, sig.kinds, args) from None
        (i0, t0, c0), (i1, t1, c1), (i2, t2, c2) = self._axes
        gx = c0 if i0 < 0 else (args[i0] + t0 - 1) // t0
        gy = c1 if i1 < 0 else (args[i1] + t1 - 1) // t1
        gz = c2 if i2 < 0 else (args[i2] + t2 - 1) // t2
        if gx > 0 and gy > 0 and gz > 0:
            self._launch(self._function, ((gx, gy, gz), self._block, self._shared), stream, params)
        else:
            self._check_empty(args)  # a size of 0 has nothing to compute: no launch

    def launch_at(self, grid: tuple[int, int, int], args: Sequence[int], stream: Any = 0) -> None:
        """One launch of ``grid`` with ``args`` packed: a part of a grid past CUDA's
        limits, which the caller split (its split offsets among ``args``)."""
        try:
            params = self._pack(*args)
        except struct.error:
            sig = self.signature
            raise self._layout.argument_error(sig.name, sig.params, sig.kinds, args) from None
        self._launch(self._function, (grid, self._block, self._shared), stream, params)

    def grid(self, *args: int) -> tuple[int, int, int]:
        """The grid a launch with ``args`` would use."""
        gx, gy, gz = (c if i < 0 else (args[i] + t - 1) // t for i, t, c in self._axes)
        return gx, gy, gz

    def bind(self, args: Sequence[int], leading: int) -> BoundLaunch | None:
        """This kernel with ``args[leading:]`` fixed: a ``BoundLaunch`` that takes
        the first ``leading`` arguments (the pointers) and the stream. None where
        the layout does not split there, or the grid is empty (nothing to launch)."""
        try:
            self._pack(*args)
        except struct.error:
            sig = self.signature
            raise self._layout.argument_error(sig.name, sig.params, sig.kinds, args) from None
        halves = self._layout.split(leading)
        grid = self.grid(*args)
        if halves is None or min(grid) <= 0:
            return None
        head, tail = halves
        shape = (grid, self._block, self._shared)
        return BoundLaunch(self._launch, self._function, shape, head.pack, tail.pack(*args[leading:]))

    def _check_empty(self, args: Sequence[int]) -> None:
        sizes = [(extent, args[i]) for (extent, _), (i, _, _) in zip(self.signature.grid, self._axes) if i >= 0]
        if any(value < 0 for _, value in sizes):
            listed = ", ".join(f"{extent}={value}" for extent, value in sizes)
            msg = f"{self.signature.name}: a size is negative ({listed})"
            raise ArgumentError(msg)


def product_grid(signature: KernelSignature) -> bool:
    """Whether an extent of ``signature``'s grid is a product ("rows*heads")."""
    return any("*" in extent for extent, _ in signature.grid)


def grid_of(signature: KernelSignature, args: Sequence[int]) -> tuple[int, int, int]:
    """The grid a launch of ``signature`` with ``args`` uses, with no kernel loaded:
    what a call checks against CUDA's limits before it allocates anything
    (``aotc.kernels._decision``), and what JAX's built-in launcher is given."""
    return _product_extents(_grid_products(signature), args)


def _grid_products(signature: KernelSignature) -> tuple[tuple[tuple[int, ...], int, int], ...]:
    """Per grid axis: (the size arguments multiplied, the number they are scaled by, the tile).
    A plain extent is a product of one name ("M") or of one number ("16")."""
    products = []
    for extent, tile in signature.grid:
        factors = extent.split("*")
        scale = 1
        for factor in factors:
            if factor.isdigit():
                scale *= int(factor)
        products.append((tuple(signature.params.index(f) for f in factors if not f.isdigit()), scale, tile))
    return tuple(products)


def _product_extents(products: tuple[tuple[tuple[int, ...], int, int], ...], args: Sequence[int]) -> tuple[int, int, int]:
    extents = []
    for indices, scale, tile in products:
        extent = scale
        for i in indices:
            extent *= args[i]
        extents.append(-(-extent // tile))
    return extents[0], extents[1], extents[2]


class ProductGridLauncher(Launcher):
    """A Launcher whose grid extents may be products of size arguments and a
    number (``ceil(4 * rows * heads / tile)``), as declared families' launch
    expressions reduce to (``aotc.build._family_fields``)."""

    __slots__ = ("_products",)

    def __init__(self, signature: KernelSignature, *args: Any, **kwargs: Any) -> None:
        super().__init__(signature, *args, **kwargs)
        self._products = _grid_products(signature)

    def __call__(self, *args: int, stream: Any = 0) -> None:
        try:
            params = self._pack(*args)
        except struct.error:
            sig = self.signature
            raise self._layout.argument_error(sig.name, sig.params, sig.kinds, args) from None
        grid = _product_extents(self._products, args)
        if grid[0] > 0 and grid[1] > 0 and grid[2] > 0:
            self._launch(self._function, (grid, self._block, self._shared), stream, params)
        else:
            self._check_empty(args)

    def grid(self, *args: int) -> tuple[int, int, int]:
        return _product_extents(self._products, args)

    def _check_empty(self, args: Sequence[int]) -> None:
        sizes = [(self.signature.params[i], args[i]) for indices, _, _ in self._products for i in indices]
        if any(value < 0 for _, value in sizes):
            listed = ", ".join(f"{name}={value}" for name, value in sizes)
            msg = f"{self.signature.name}: a size is negative ({listed})"
            raise ArgumentError(msg)


class BoundLaunch:
    """One launch of a kernel whose sizes are fixed: ``bound(stream, A, B, C)``
    packs the pointers, appends the sizes packed once, and launches."""

    __slots__ = ("function", "launch", "pack_head", "shape", "tail")

    def __init__(self, launch: Any, function: Any, shape: Any, pack_head: Any, tail: bytes) -> None:
        # Public, so a caller's own plan can hold the pieces and save a call level.
        self.launch = launch  # the backend's launch(function, shape, stream, params)
        self.function = function
        self.shape = shape  # (grid, block, dynamic shared bytes)
        self.pack_head = pack_head  # packs the leading arguments
        self.tail = tail  # the rest, packed

    def __call__(self, stream: Any, *pointers: int) -> None:
        self.launch(self.function, self.shape, stream, self.pack_head(*pointers) + self.tail)
