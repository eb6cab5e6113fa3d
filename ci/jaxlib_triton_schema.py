"""Print the protobuf schema of jaxlib's built-in GPU kernel launcher, as a
jax CUDA plugin wheel embeds it, in protobuf's text format.

    python ci/jaxlib_triton_schema.py jax_cuda13_plugin-0.11.1-*.whl \\
        > tests/kernels/data/jaxlib_triton_schema.textproto

The plugin's ``_triton.so`` holds the serialized ``FileDescriptorProto`` of
``jaxlib/gpu/triton.proto`` (protobuf's generated C++ keeps it to build its
descriptor pool). tests/kernels/test_jax_kernel_call.py decodes aotc's
encoding against it, so the test checks the schema the release was built
with, not a copy of the source that may have moved on. Needs ``protobuf``.
"""

from __future__ import annotations

import sys
import zipfile

from google.protobuf import descriptor_pb2, text_format
from google.protobuf.internal import decoder

NAME = b"jaxlib/gpu/triton.proto"


def embedded_schema(library: bytes) -> descriptor_pb2.FileDescriptorProto:
    """The FileDescriptorProto serialized in ``library``: it starts with its
    name (field 1), and runs as long as its top-level fields parse."""
    start = library.find(b"\n" + bytes([len(NAME)]) + NAME)
    if start < 0:
        sys.exit(f"{NAME.decode()}: not embedded in this library")
    end = position = start
    while True:
        try:
            key, position = decoder._DecodeVarint(library, position)  # noqa: SLF001 - protobuf's own varint reader
            number, wire_type = key >> 3, key & 7
            if not 1 <= number <= 14 or wire_type not in (0, 2):  # FileDescriptorProto's fields
                break
            value, position = decoder._DecodeVarint(library, position)  # noqa: SLF001
            if wire_type == 2:
                position += value
        except IndexError:
            break
        if position > len(library):
            break
        end = position
    return descriptor_pb2.FileDescriptorProto.FromString(library[start:end])


def main(wheel: str) -> None:
    with zipfile.ZipFile(wheel) as archive:
        member = next(name for name in archive.namelist() if name.endswith("/_triton.so"))
        schema = embedded_schema(archive.read(member))
    print(f"# {NAME.decode()} as {wheel.rsplit('/', 1)[-1]} embeds it in {member}")
    print(text_format.MessageToString(schema), end="")


if __name__ == "__main__":
    main(sys.argv[1])
