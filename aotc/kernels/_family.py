"""One declared family, callable: ``aotc.kernels.over(lib).softmax(x)``.

A ``Family`` is built from the index alone: the family's kernels, their axis
values and their declared signature (``aotc.build.signature``, checked by
``aotc.index``). A call

1. binds its arguments by the signature's names (in and inout arrays and
   the caller's scalars, in declared order; out arrays and axes by keyword);
2. reads each array once (``aotc.arrays.operands``) and picks the kernel from
   the arrays' dtypes and the axes given;
3. binds each dimension from the arrays' shapes, each mismatch one line
   naming the parameter;
4. allocates the out arrays not given, on the operands' device and stream;
5. launches, under the tropical API's rules: the operands' device, the
   stream given or the operands' library's current one, host arrays used in
   place on the emulator and staged on a GPU (``aotc.arrays.memory``);
6. returns the out and inout arrays, in declared order (one: itself).

What steps 2 to 4 decide depends only on the arrays' kinds, shapes, dtypes
and devices, so a repeat call with alike arrays takes it from a decision
kept per key (``_Plan``). NumPy calls on a host-memory backend go further:
the family's generated entry runs a call plan that does only the pointer work
and the launch (``aotc.kernels._entry``), and comes here only when no plan
answers.
"""

from __future__ import annotations

import sys

from aotc.arrays.memory import Memory, on_host_memory
from aotc.arrays.operands import as_operand, contiguous, is_row_major
from aotc.arrays.placement import device_of, output, stream_handle
from aotc.arrays.streams import hold_until_done, wait_for_producers
from aotc.errors import ArgumentError, ArgumentTypeError, echo
from aotc.kernels._arguments import check_grid, scalar_argument
from aotc.kernels._entry import INT_RANGES, MAX_PLANS, entry_for, make_plan, plan_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aotc.index import IndexKernel

__all__ = ["Family"]

_MAX_PLANS = 64  # per family: alike calls are few; a workload of ever-new shapes must not grow them without end


class _Plan:
    """What a call with arrays alike to an earlier one's needs: the kernel, the
    dimensions, and the out arrays' shapes and dtypes."""

    __slots__ = ("dims", "dtypes", "grid_checked", "kernel", "out_shapes")

    def __init__(self, kernel: str, dims: dict[str, int], dtypes: dict[str, str], out_shapes: dict[str, tuple[int, ...]]) -> None:
        self.kernel = kernel
        self.dims = dims
        self.dtypes = dtypes
        self.out_shapes = out_shapes
        self.grid_checked = False  # the grid follows from the dimensions: checked at the plan's first launch


def _layout(kernel: IndexKernel) -> tuple[Any, ...]:
    """What a call binds by: each parameter's name, role and dimension names (dtypes
    and fixed extents may differ by axis value; they are chosen per call)."""
    return tuple((p.name, p.role, p.scalar, p.dim, p.optional, p.strides, tuple(e for e in p.shape if type(e) is str)) for p in kernel.signature or ())


def _check_bindable(name: str, kernels: list[IndexKernel]) -> None:
    """Refuse, in one line, a family these bindings cannot bind: one whose
    kernels differ in their parameters (a manifest's signature alternatives or
    parameter ``when``), or with arrays of lanes or packed bits."""
    first = _layout(kernels[0])
    other = next((k for k in kernels if _layout(k) != first), None)
    if other is not None:
        msg = f"{name}: kernels {kernels[0].name} and {other.name} take different parameters; the generated bindings take a family whose kernels share one signature"
        raise ArgumentError(msg)
    for p in kernels[0].signature or ():
        if p.lanes != 1 or p.pack:
            layout = f"{p.lanes} values an element" if p.lanes != 1 else f"{p.pack} bits a word"
            msg = f"{name}: array {p.name} holds {layout}, which the generated bindings do not bind; the library's own code binds it"
            raise ArgumentError(msg)


def _gradient_family(library: Any, kernel: IndexKernel) -> tuple[str, tuple[str, ...]] | None:
    """The family of ``kernel``'s one gradient kernel and what it saves; None where
    it has none, or a route or several kernels, which these bindings do not run."""
    backward = kernel.backward
    if backward is None or len(backward.kernels) != 1:
        return None
    name, saves = backward.kernels[0]
    return library.index.kernels.families()[name], saves


class Family:
    """The binding of one declared family of ``library``; see the module docstring."""

    def __init__(self, library: Any, name: str, kernels: list[IndexKernel]) -> None:
        self.library = library
        self.name = name
        signature = kernels[0].signature
        assert signature is not None
        _check_bindable(name, kernels)
        self.params = signature
        self.given = tuple(p.name for p in signature if not p.scalar and p.role != "out")
        self.outs = tuple(p.name for p in signature if not p.scalar and p.role == "out")
        self.results = tuple(p.name for p in signature if not p.scalar and p.role != "in")
        self.arguments = {p.name: p.dtype for p in signature if p.scalar and not p.dim}
        self.positional = tuple(p.name for p in signature if (not p.scalar and p.role != "out") or (p.scalar and not p.dim))
        # A declared stride -> (its array, the declared rank, its dimension): bound per call from where the array lies.
        self.strides = {s: (p.name, len(p.shape), i) for p in signature if not p.scalar for i, s in enumerate(p.strides) if type(s) is str}
        axes: dict[str, list[Any]] = {}
        for kernel in kernels:
            for axis, value in (kernel.axes or {}).items():
                values = axes.setdefault(axis, [])
                if value not in values:
                    values.append(value)
        self.axes = {axis: tuple(values) for axis, values in axes.items()}
        # The axes a call may choose by keyword: those with more than one value.
        self.open_axes = tuple(axis for axis, values in self.axes.items() if len(values) > 1)
        self.kernels = {k.name: k for k in kernels}
        self._plans: dict[tuple[Any, ...], _Plan] = {}
        self._chosen: dict[tuple[Any, ...], str] = {}
        # NumPy calls' plans, looked up by the generated entry (aotc.kernels._entry).
        self.numpy_plans: dict[tuple[Any, ...], Any] = {}
        self.torch_op: Any = None  # torch.ops.<library>.<family>, once registered (_torch_route)
        self.torch_kernel: Any = None  # that op's kernel (_torch_ops)
        self.torch_out_kernel: Any = None  # its .out overload's
        self.tensor_plans: dict[tuple[Any, ...], Any] = {}  # the op's plans (_tensor_plan)
        # (the family computing its gradients, the arrays it keeps), from the manifest's backward:
        self.backward = _gradient_family(library, kernels[0])
        self.entry = entry_for(self)  # None: call the Family itself

    def __repr__(self) -> str:
        outs = "".join(f", {name}=None" for name in self.outs)
        rest = "".join(f", {axis}=None" for axis, values in self.axes.items() if len(values) > 1)
        return f"<aotc kernel family {self.library.name}.{self.name}({', '.join(self.positional)}, *{outs}{rest}, stream=None)>"

    # --- arguments ---------------------------------------------------------------

    def bind_arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """(values by parameter name, axes given) from a call's arguments."""
        if len(args) > len(self.positional):
            msg = f"{self.name}() takes {len(self.positional)} positional arguments ({', '.join(self.positional)}), got {len(args)}"
            raise ArgumentTypeError(msg)
        values = dict(zip(self.positional, args))
        axes = {}
        for key, value in kwargs.items():
            if key in self.axes:
                axes[key] = value
            elif key in values:
                msg = f"{self.name}(): {key} given twice, by position and by name"
                raise ArgumentTypeError(msg)
            elif key in self.positional or key in self.outs:
                values[key] = value
            else:
                known = ", ".join((*self.positional, *self.outs, *self.axes, "stream"))
                msg = f"{self.name}(): unknown argument {key!r} (known: {known})"
                raise ArgumentTypeError(msg)
        missing = [name for name in self.positional if name not in values]
        if missing:
            msg = f"{self.name}(): missing argument {missing[0]}"
            raise ArgumentTypeError(msg)
        return values, axes

    def choose(self, dtypes: dict[str, str], axes: dict[str, Any]) -> IndexKernel:
        """The kernel for these arrays' dtypes and these axis values; each refusal one line."""
        key = (tuple(dtypes.items()), tuple(axes.items()))
        name = self._chosen.get(key)
        if name is None:
            name = self._chosen[key] = self._choose(dtypes, axes)
        return self.kernels[name]

    def not_a_value(self, axis: str, value: Any) -> ArgumentError:
        """The one-line error for an axis named with a value no kernel has."""
        return ArgumentError(f"{axis}: {echo(value)} is not a value of {self.name}'s axis {axis} (values: {', '.join(map(str, self.axes[axis]))})")

    def _choose(self, dtypes: dict[str, str], axes: dict[str, Any]) -> str:
        matches = list(self.kernels.values())
        for axis, value in axes.items():
            matches = [k for k in matches if k.axes is not None and k.axes.get(axis) == value]
            if not matches:
                raise self.not_a_value(axis, value)
        for name, dtype in dtypes.items():
            fits = [k for k in matches if _array(k, name).dtype == dtype]
            if not fits:
                have = sorted({_array(k, name).dtype for k in matches})
                msg = f"{name}: dtype {dtype}, but {self.name}'s kernels take {' or '.join(have)} there"
                if len(matches) < len(self.kernels):
                    msg += " with the other arguments' dtypes and axes"
                raise ArgumentError(msg)
            matches = fits
        if len(matches) > 1:
            open_axes = [a for a in self.axes if len({k.axes[a] for k in matches if k.axes is not None}) > 1]
            axis = open_axes[0]
            values = ", ".join(sorted({str(k.axes[axis]) for k in matches if k.axes is not None}))
            msg = f"{self.name}(): {len(matches)} kernels fit these arrays; choose one with {axis}= ({values})"
            raise ArgumentError(msg)
        return matches[0].name

    # --- the call ------------------------------------------------------------------

    def __call__(self, *args: Any, stream: Any = None, **kwargs: Any) -> Any:
        values, axes = self.bind_arguments(args, kwargs)
        return self._call(values, axes, stream)

    def full(self, args: tuple[Any, ...], outs: dict[str, Any], stream: Any, kwargs: dict[str, Any]) -> Any:
        """The generated entry's way in when no plan answered: its positional
        arguments, its out arrays (None: not given) and its other keywords."""
        values, axes = self.bind_arguments(args, kwargs)
        values.update((name, out) for name, out in outs.items() if out is not None)
        return self._call(values, axes, stream)

    def _call(self, values: dict[str, Any], axes: dict[str, Any], stream: Any) -> Any:
        jax = sys.modules.get("jax")  # a JAX array cannot exist before jax is imported
        if jax is not None and any(isinstance(values.get(name), jax.Array) for name in self.given):
            from aotc.kernels import _jax

            return _jax.call(self, values, axes, stream)
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(values[self.given[0]], torch.Tensor):
            from aotc.kernels import _torch_route

            if _torch_route.to_op(self, values, stream):
                return _torch_route.call_op(self, values, axes)
        return self.run(values, axes, stream)

    def run(self, values: dict[str, Any], axes: dict[str, Any], stream: Any) -> Any:
        """The launch, for arguments already bound: the out and inout arrays, one bare."""
        arrays = self.launch(values, axes, stream)
        results = tuple(arrays[name] for name in self.results)
        return results[0] if len(results) == 1 else results

    def launch(self, values: dict[str, Any], axes: dict[str, Any], stream: Any, keep: Any = None) -> dict[str, Any]:
        """The launch itself (the torch ops' kernels call it): every array, by
        name. ``keep(values, arrays, launcher, arguments, backend)`` is given the
        launch to make a plan of; by default NumPy calls leave the generated
        entry one (``_keep_plan``)."""
        ops = {name: as_operand(values[name], name) for name in self.given}
        first_name = self.given[0]
        first = ops[first_name]
        device = device_of(first, first_name, self.library)
        for name, op in ops.items():
            if op.device != first.device and device_of(op, name, self.library) != device:
                msg = f"{name}: on {op.device}, but {first_name} is on {first.device}"
                raise ArgumentError(msg)
        given_stream, stream = stream, stream_handle(stream, first)
        plan = self._plan(ops, values, axes)
        kernel = self.kernels[plan.kernel]
        backend = self.library.backend_on(device)
        host_memory = on_host_memory(backend)
        inputs = []
        for name in self.given:
            op = ops[name]
            declared = _array(kernel, name)
            if declared.role == "inout":
                ops[name] = output(values[name], name, first, op.shape, op.dtype, tuple(inputs), self.library, stream)
            elif not is_row_major(op) and not (declared.strides and _lies_as_declared(op, declared, host_memory)):
                ops[name] = contiguous(op, name)
            inputs.append((ops[name], name))
        for name in self.outs:
            ops[name] = output(values.get(name), name, first, plan.out_shapes[name], plan.dtypes[name], tuple(inputs), self.library, stream)
            inputs.append((ops[name], name))
        strides = {}
        for stride, (name, rank, i) in self.strides.items():
            op = ops[name]
            left_out = rank - len(op.shape)
            strides[stride] = 0 if i < left_out else op.strides[i - left_out]  # a dimension left out is broadcast
        wait_for_producers(backend, stream, tuple(ops.values()))
        if given_stream is not None:
            hold_until_done(tuple(ops.values()), stream)
        memory = Memory(backend, host_memory, stream)
        try:
            arguments = []
            for param in self.params:
                if not param.scalar:
                    role = param.role
                    arguments.append(memory.pointer(ops[param.name], param.name, result=role != "in", inout=role == "inout"))
                elif param.dim:
                    arguments.append(strides[param.name] if param.name in strides else plan.dims[param.name])
                else:
                    arguments.append(scalar_argument(values[param.name], param.name, param.dtype))
            launcher = self.library.kernel(kernel.name, device, stream)
            if not plan.grid_checked:
                check_grid(self.name, launcher.grid(*arguments))
                plan.grid_checked = True
            launcher(*arguments, stream=stream)
        finally:
            memory.finish()
        arrays = {name: op.obj for name, op in ops.items()}
        if keep is not None:
            keep(values, arrays, launcher, arguments, backend)
        elif given_stream is None and self.entry is not None and first.kind == "numpy" and all(a in self.open_axes for a in axes):
            self._keep_plan(values, arrays, launcher, arguments, backend, axes)
        return arrays

    def _keep_plan(self, values: dict[str, Any], arrays: dict[str, Any], launcher: Any, arguments: list[Any], backend: Any, axes: dict[str, Any]) -> None:
        """Leave the generated entry a plan for calls alike to this one, where one fits."""
        plan = make_plan(self, values, arrays, launcher, arguments, backend)
        if plan is not None:
            if len(self.numpy_plans) >= MAX_PLANS:
                self.numpy_plans.clear()
            self.numpy_plans[plan_key(self, values, axes)] = plan

    def _plan(self, ops: dict[str, Any], values: dict[str, Any], axes: dict[str, Any]) -> _Plan:
        """The plan for arrays like these: made once, then found by their kinds, shapes, dtypes and devices."""
        # A given out array's dtype can choose the kernel: its library's dtype object is in the key.
        outs_given = tuple(None if values.get(name) is None else (type(values[name]), getattr(values[name], "dtype", None)) for name in self.outs)
        key = (tuple((op.kind, op.shape, op.dtype, op.device) for op in ops.values()), outs_given, tuple(axes.items()))
        plan = self._plans.get(key)
        if plan is None:
            dtypes = {name: op.dtype for name, op in ops.items()}
            for name in self.outs:
                if values.get(name) is not None:
                    dtypes[name] = as_operand(values[name], name).dtype
            plan = self.plan_for({name: op.shape for name, op in ops.items()}, dtypes, axes)
            if len(self._plans) >= _MAX_PLANS:
                self._plans.clear()
            self._plans[key] = plan
        return plan

    def plan_for(self, shapes: dict[str, tuple[Any, ...]], dtypes: dict[str, str], axes: dict[str, Any]) -> _Plan:
        """The kernel, dimensions and out arrays for in and inout arrays of these
        shapes and dtypes (and out arrays of these dtypes, where given); the
        ops' fake implementations call it with symbolic shapes."""
        dtypes = dict(dtypes)
        kernel = self.choose(dtypes, axes)
        dims: dict[str, int] = {}
        bound_by: dict[str, str] = {}
        left_out: dict[str, list[tuple[str, int]]] = {}  # an optional dimension -> the arrays without it, and where
        for name in self.given:
            declared = _array(kernel, name)
            shape = shapes[name]
            dropped = len(declared.shape) - len(shape)
            if not 0 <= dropped <= declared.optional:
                ranks = [f"{n}-D" for n in range(len(declared.shape) - declared.optional, len(declared.shape) + 1)]
                rank = ", ".join(ranks[:-1]) + " or " + ranks[-1] if len(ranks) > 1 else ranks[0]
                msg = f"{name}: expected a {rank} array ({_shape_text(declared)}), got shape {shape}"
                raise ArgumentError(msg)
            for i, extent in enumerate(declared.shape[:dropped]):
                left_out.setdefault(extent, []).append((name, i))
            for extent, size in zip(declared.shape[dropped:], shape):
                if type(extent) is int:
                    if size != extent:
                        msg = f"{name}: shape {shape}, but {self.name} needs {extent} where it has {size}"
                        raise ArgumentError(msg)
                    continue
                known = dims.setdefault(extent, size)
                if known != size:
                    msg = f"{name}: shape {shape} gives {extent}={size}, but {bound_by[extent]} gave {extent}={known}"
                    raise ArgumentError(msg)
                bound_by.setdefault(extent, name)
        present = set(dims)  # the out arrays keep an optional dimension where a given array had it
        for extent, arrays in left_out.items():
            # Left out, a dimension is 1, unless another array gives it: then an in
            # array with a declared stride there is broadcast (stride 0); any other
            # would be read past its end.
            if dims.setdefault(extent, 1) != 1:
                for name, i in arrays:
                    declared = _array(kernel, name)
                    if declared.role != "in" or not declared.strides or type(declared.strides[i]) is not str:
                        msg = f"{name}: shape {shapes[name]} leaves out {extent}, but {bound_by[extent]} gives {extent}={dims[extent]}"
                        raise ArgumentError(msg)
            bound_by.setdefault(extent, arrays[0][0])
        for param in kernel.signature or ():
            if param.scalar and param.dim and param.name in dims and dims[param.name] > INT_RANGES[param.dtype][1]:
                msg = f"{bound_by[param.name]}: {param.name}={dims[param.name]} is past the kernel's {param.dtype} limit"
                raise ArgumentError(msg)
        out_shapes = {}
        for name in self.outs:
            declared = _array(kernel, name)
            dtypes[name] = declared.dtype
            kept = declared.shape[next((i for i, e in enumerate(declared.shape[: declared.optional]) if e in present), declared.optional) :]
            out_shapes[name] = tuple(extent if type(extent) is int else dims[extent] for extent in kept)
        return _Plan(kernel.name, dims, dtypes, out_shapes)


def _array(kernel: IndexKernel, name: str) -> Any:
    """The declared parameter ``name`` of ``kernel``: every kernel of a family declares the same names."""
    return next(param for param in kernel.signature or () if param.name == name)


def _lies_as_declared(op: Any, declared: Any, host_memory: bool) -> bool:
    """Whether the kernel can read ``op`` where it lies, by its declared strides:
    each dimension declared dense (stride 1) is, and a host array needs no
    staging (a staged copy is made contiguous)."""
    if op.on_host and not host_memory:
        return False
    dense = declared.strides[len(declared.shape) - len(op.shape) :]
    return all(stride == 1 or extent <= 1 for want, stride, extent in zip(dense, op.strides, op.shape) if want == 1)


def _shape_text(declared: Any) -> str:
    """A declared shape as errors show it: the optional dimensions in brackets."""
    return ", ".join(f"[{e}]" if i < declared.optional else str(e) for i, e in enumerate(declared.shape))
