"""The test fakes themselves work."""

from __future__ import annotations

import struct
import zlib

from flink_agents.api import ImageBlock, ToolResponse
from tests.fakes.images import red_png


def test_red_png_is_a_red_png() -> None:
    png = red_png(2)
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and png.endswith(b"IEND\xaeB`\x82")
    width, height = struct.unpack(">II", png[16:24])
    assert (width, height) == (2, 2)
    idat_at = png.index(b"IDAT")
    (length,) = struct.unpack(">I", png[idat_at - 4 : idat_at])
    rows = zlib.decompress(png[idat_at + 4 : idat_at + 4 + length])
    assert rows == (b"\x00" + b"\xff\x00\x00" * 2) * 2
    [block] = ToolResponse.from_output("c", "t", png).content
    assert isinstance(block, ImageBlock) and block.mime_type == "image/png"
