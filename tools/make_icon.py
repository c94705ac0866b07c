"""Draws the extension's icon, extension/icon.png (128×128): a step's lines as bars on the heat scale.

    python tools/make_icon.py

Standard library only (zlib for the PNG), so the icon can be redrawn anywhere; the PNG is committed.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

SIZE = 128
BACKGROUND = (30, 30, 46)
# (left, right, colour): lines of a step, the costliest in red, as the inline labels colour them
BARS = [(22, 62, (160, 160, 160)), (22, 102, (255, 122, 122)), (30, 78, (240, 163, 94)),
        (30, 50, (215, 186, 125)), (22, 88, (244, 135, 113)), (30, 44, (160, 160, 160))]
BAR_HEIGHT, FIRST_TOP, GAP = 10, 20, 16


def pixel(x: int, y: int) -> tuple[int, int, int, int]:
    radius = 22  # rounded corners: transparent outside
    cx = min(max(x, radius), SIZE - 1 - radius)
    cy = min(max(y, radius), SIZE - 1 - radius)
    if (x - cx) ** 2 + (y - cy) ** 2 > radius ** 2:
        return (0, 0, 0, 0)
    if 14 <= x <= 16 and 14 <= y <= SIZE - 15:  # the step's start, a vertical rule
        return (220, 220, 230, 255)
    for k, (left, right, colour) in enumerate(BARS):
        top = FIRST_TOP + k * GAP
        if top <= y < top + BAR_HEIGHT and left <= x <= right:
            return (*colour, 255)
    return (*BACKGROUND, 255)


def png(width: int, height: int, rows: list[bytes]) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + row for row in rows)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def main() -> None:
    rows = [b"".join(bytes(pixel(x, y)) for x in range(SIZE)) for y in range(SIZE)]
    out = Path(__file__).resolve().parent.parent / "extension" / "icon.png"
    out.write_bytes(png(SIZE, SIZE, rows))
    print(f"wrote {out} ({out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
