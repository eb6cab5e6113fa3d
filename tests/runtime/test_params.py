"""The parameter block's layout: one struct for packing and for finding parameters."""

from __future__ import annotations

import struct

import pytest

from aotc.errors import ArgumentError, ArgumentTypeError, BackendError
from aotc.runtime.backends.params import ParamLayout

PARAMS = ("A", "M", "lda")
KINDS = ("ptr", "i32", "i64")


@pytest.mark.parametrize(
    ("format", "offsets", "size"),
    [
        ("@QQQiiiqqq", (0, 8, 16, 24, 28, 32, 40, 48, 56), 64),
        ("@iQ", (0, 8), 16),  # the pointer after an int is aligned to 8
        ("@iiQi", (0, 4, 8, 16), 20),
        ("@", (), 0),
    ],
)
def test_offsets_are_where_pack_puts_each_parameter(format: str, offsets: tuple[int, ...], size: int) -> None:
    layout = ParamLayout(format)
    assert layout.offsets == offsets
    assert layout.size == size
    values = tuple(range(1, len(layout.codes) + 1))
    block = layout.pack(*values)
    found = tuple(struct.unpack_from("@" + code, block, offset)[0] for code, offset in zip(layout.codes, offsets))
    assert found == values


def test_sizes_alone_give_the_same_layout_as_the_codes() -> None:
    assert ParamLayout.for_sizes((8, 4, 8)).offsets == ParamLayout("@Qiq").offsets == (0, 8, 16)


def test_a_size_with_no_layout_is_one_line() -> None:
    with pytest.raises(BackendError, match=r"^parameters of 3, 12 bytes have no packed layout \(only 1, 2, 4 or 8\)$"):
        ParamLayout.for_sizes((8, 12, 3))


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ((1, 2), ArgumentTypeError, "k takes 3 arguments (A, M, lda), got 2"),
        ((1, "x", 3), ArgumentTypeError, "k: argument M must be an i32 int, got 'x'"),
        ((None, 2, 3), ArgumentTypeError, "k: argument A must be a device pointer (int), got None"),
        ((1, 2**31, 3), ArgumentError, "k: argument M must be an i32 int, got 2147483648"),
        ((-1, 2, 3), ArgumentError, "k: argument A must be a device pointer (int), got -1"),
    ],
)
def test_argument_errors_name_the_kernel_and_the_argument(args: tuple[object, ...], error: type, message: str) -> None:
    layout = ParamLayout("@Qiq")
    with pytest.raises(struct.error):
        layout.pack(*args)
    problem = layout.argument_error("k", PARAMS, KINDS, args)
    assert type(problem) is error
    assert str(problem) == message


@pytest.mark.parametrize(("format", "leading"), [("@QQQiiiqqq", 3), ("@QQQQiiiqqqiqqqq", 4), ("@QQQiiiqqq", 0)])
def test_split_halves_pack_to_the_whole_block(format: str, leading: int) -> None:
    layout = ParamLayout(format)
    halves = layout.split(leading)
    assert halves is not None
    head, tail = halves
    values = tuple(range(1, len(layout.codes) + 1))
    assert head.pack(*values[:leading]) + tail.pack(*values[leading:]) == layout.pack(*values)


def test_split_refuses_where_the_rest_would_move() -> None:
    # After one int, a Q sits at offset 8 in the whole block but at 0 on its own.
    assert ParamLayout("@iQ").split(1) is None
