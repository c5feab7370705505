"""Images as inputs: encoded PNG or JPEG bytes, files (os.PathLike) and numpy arrays, each sent
as Input.image for an image encoder (an onnx encoder whose input is "image").

A numpy array is sent losslessly as a PNG written here (zlib only, no imaging library): uint8,
height × width (grayscale), height × width × 1, 3 (RGB) or 4 (RGBA; the server drops alpha).
Other dtypes are refused rather than rounded: convert to uint8 (0-255) first.
"""

import os
import struct
import zlib

import numpy as np

_COLOR_TYPES = {1: 0, 3: 2, 4: 6}  # channels -> PNG colour type (grey, RGB, RGBA)


def _chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def encode_png(array):
    """A uint8 image array (H × W, or H × W × 1/3/4) as PNG bytes, every value kept."""
    array = np.asarray(array)
    if array.dtype != np.uint8:
        raise ValueError("image array: dtype %s; give uint8 values 0-255 (sent losslessly as PNG)"
                         % array.dtype)
    if array.ndim == 2:
        array = array[:, :, None]
    if array.ndim != 3 or array.shape[2] not in _COLOR_TYPES:
        raise ValueError("image array: shape %s; expected height × width, or height × width × "
                         "1, 3 or 4 channels" % (array.shape,))
    height, width, channels = array.shape
    if height == 0 or width == 0:
        raise ValueError("image array: empty (shape %s)" % (array.shape,))
    rows = np.ascontiguousarray(array).reshape(height, width * channels)
    raw = b"".join(b"\x00" + row.tobytes() for row in rows)  # filter type 0 on every row
    header = struct.pack(">IIBBBBB", width, height, 8, _COLOR_TYPES[channels], 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(raw))
            + _chunk(b"IEND", b""))


def _is_image(value):
    return (isinstance(value, (bytes, bytearray, memoryview, os.PathLike)) or
            (isinstance(value, np.ndarray) and value.ndim in (2, 3)))


def image_bytes(value):
    """The encoded bytes of one image: bytes as given, a file's content, or a PNG of an array."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, os.PathLike):
        with open(value, "rb") as f:
            return f.read()
    return encode_png(value)


def as_images(values):
    """The encoded images of `values` when it is a batch of images, else None: an array of 3
    (N × H × W) or 4 (N × H × W × C) dimensions, or a sequence whose items are all bytes, paths
    (os.PathLike, e.g. pathlib.Path; a str is a text, not a path) or 2-/3-D arrays."""
    if isinstance(values, (bytes, bytearray, memoryview, os.PathLike)):
        raise ValueError("inputs: give a sequence of images, not one")
    if isinstance(values, np.ndarray):
        return [encode_png(a) for a in values] if values.ndim in (3, 4) else None
    if isinstance(values, (list, tuple)) and values and all(_is_image(v) for v in values):
        return [image_bytes(v) for v in values]
    return None
