"""Writes the image decoding and preprocessing cases of image_test into a directory: encoded
images made with Pillow (and by hand where Pillow cannot write them: 16-bit RGB PNG, crafted
headers), what Pillow decodes from each (raw 8-bit RGB, the reference), and float tensors that
numpy's preprocessing of Pillow's decode gives (bilinear with half-pixel centres, no
antialiasing, centre crop, scale, mean, std; docs/ONNX.md). cases.json lists them.

Run by image_test at test time with Debian's /usr/bin/python3 (python3-pil, python3-numpy):
  python3 make_image_cases.py OUT_DIR
"""
import io
import json
import os
import struct
import sys
import zlib

import numpy as np
from PIL import Image, ImageOps

RNG = np.random.default_rng(405)


def smooth(width, height, channels):
    """A random image with some structure (gradients plus noise), uint8."""
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([(x * 255 // max(1, width - 1)), (y * 255 // max(1, height - 1)),
                     ((x + y) * 7) % 256] + [(x * y) % 256], axis=-1)[..., :channels]
    noise = RNG.integers(0, 40, size=(height, width, channels))
    return np.clip(base + noise, 0, 255).astype(np.uint8)


def png_chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def raw_png(width, height, bit_depth, color_type, rows_bytes):
    """A PNG written by hand (filter type 0 on every row)."""
    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0, 0)
    data = b"".join(b"\x00" + r for r in rows_bytes)
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) +
            png_chunk(b"IDAT", zlib.compress(data)) + png_chunk(b"IEND", b""))


def encode(image, fmt, **options):
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    return buffer.getvalue()


def pillow_rgb(data):
    """Pillow's decode as 8-bit RGB: 16-bit grayscale by its high byte, EXIF orientation applied."""
    image = Image.open(io.BytesIO(data))
    image.load()
    if image.mode in ("I;16", "I;16B", "I"):
        gray = (np.asarray(image).astype(np.uint32) >> 8).astype(np.uint8)
        return np.repeat(gray[..., None], 3, axis=2)
    image = ImageOps.exif_transpose(image)
    return np.asarray(image.convert("RGB"))


def taps(size_in, size_out, first, count):
    source = (np.arange(first, first + count, dtype=np.float64) + 0.5) * (size_in / size_out) - 0.5
    source = np.clip(source, 0.0, size_in - 1)
    lo = np.floor(source).astype(np.int64)
    hi = np.minimum(lo + 1, size_in - 1)
    return lo, hi, source - lo


def preprocess(rgb, config):
    """numpy's preprocessing of an 8-bit RGB image, as image_preprocess.h describes it."""
    height, width = rgb.shape[:2]
    if "shorter" in config:
        s = config["shorter"]
        rw, rh = (s, s * height // width) if width <= height else (s * width // height, s)
    elif "resize" in config:
        rw, rh = config["resize"]
    else:
        rw, rh = width, height
    cw, ch = config.get("crop", (rw, rh))
    left, top = (rw - cw) // 2, (rh - ch) // 2
    xlo, xhi, xt = taps(width, rw, left, cw)
    ylo, yhi, yt = taps(height, rh, top, ch)
    a = rgb.astype(np.float64)
    xt, yt = xt[None, :, None], yt[:, None, None]
    top_row = (1 - xt) * a[ylo][:, xlo] + xt * a[ylo][:, xhi]
    bottom = (1 - xt) * a[yhi][:, xlo] + xt * a[yhi][:, xhi]
    value = (1 - yt) * top_row + yt * bottom
    scale = np.float64(np.float32(config.get("scale", 1.0 / 255.0)))
    mean = np.float32(config.get("mean", [0, 0, 0])).astype(np.float64)
    std = np.float32(config.get("std", [1, 1, 1])).astype(np.float64)
    out = ((value * scale - mean) / std).astype(np.float32)
    if config.get("bgr"):
        out = out[..., ::-1]
    if not config.get("nhwc"):
        out = out.transpose(2, 0, 1)
    return np.ascontiguousarray(out), (cw, ch)


def jpeg_with_size(data, width, height):
    """The JPEG with its SOF0 header's size replaced (a small file declaring a huge image)."""
    at = data.index(b"\xff\xc0")
    return data[:at + 5] + struct.pack(">HH", height, width) + data[at + 9:]


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    files = {}
    rgb = smooth(37, 23, 3)
    files["rgb.png"] = encode(Image.fromarray(rgb, "RGB"), "PNG")
    files["rgba.png"] = encode(Image.fromarray(smooth(19, 26, 4), "RGBA"), "PNG")
    files["gray.png"] = encode(Image.fromarray(smooth(16, 12, 1)[..., 0], "L"), "PNG")
    files["gray_alpha.png"] = encode(Image.fromarray(smooth(11, 9, 2), "LA"), "PNG")
    files["palette.png"] = encode(Image.fromarray(rgb, "RGB").quantize(16), "PNG")
    # Transparency in a tRNS chunk: a palette's becomes alpha in libpng's expansion (dropped).
    files["palette_trns.png"] = encode(Image.fromarray(rgb, "RGB").quantize(16), "PNG",
                                       transparency=bytes(range(0, 256, 16)))
    files["gray_trns.png"] = encode(Image.fromarray(smooth(16, 12, 1)[..., 0], "L"), "PNG",
                                    transparency=40)
    gray16 = (RNG.integers(0, 65536, size=(10, 14))).astype(np.uint16)
    files["gray16.png"] = encode(Image.fromarray(gray16, "I;16"), "PNG")
    rgb16 = RNG.integers(0, 65536, size=(9, 13, 3)).astype(">u2")
    files["rgb16.png"] = raw_png(13, 9, 16, 2, [row.tobytes() for row in rgb16])
    files["rgb.jpg"] = encode(Image.fromarray(rgb, "RGB"), "JPEG", quality=90)
    files["gray.jpg"] = encode(Image.fromarray(smooth(16, 12, 1)[..., 0], "L"), "JPEG")
    asymmetric = Image.fromarray(smooth(24, 16, 3), "RGB")
    for orientation in range(1, 9):
        exif = Image.Exif()
        exif[0x0112] = orientation
        files[f"exif{orientation}.jpg"] = encode(asymmetric, "JPEG", quality=95, exif=exif.tobytes())
    decoded = []
    for name, data in files.items():
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(data)
        pixels = pillow_rgb(data)
        with open(os.path.join(out_dir, name + ".rgb"), "wb") as f:
            f.write(np.ascontiguousarray(pixels).tobytes())
        decoded.append({"file": name, "width": pixels.shape[1], "height": pixels.shape[0]})

    refused = {
        "bomb.png": raw_png(100000, 100000, 8, 2, []),
        "wide.png": raw_png(9000, 1, 8, 0, [bytes(9000)]),
        "bomb.jpg": jpeg_with_size(files["rgb.jpg"], 60000, 60000),
        "truncated.png": files["rgb.png"][:len(files["rgb.png"]) // 2],
        "truncated.jpg": files["rgb.jpg"][:len(files["rgb.jpg"]) // 2],
        "header_only.jpg": files["rgb.jpg"][:200],
        "garbage.bin": RNG.integers(0, 256, 300).astype(np.uint8).tobytes(),
        "garbage.png": b"\x89PNG\r\n\x1a\n" + RNG.integers(0, 256, 300).astype(np.uint8).tobytes(),
        "garbage.jpg": b"\xff\xd8\xff" + RNG.integers(0, 256, 300).astype(np.uint8).tobytes(),
        "cmyk.jpg": encode(Image.fromarray(smooth(8, 8, 4), "CMYK"), "JPEG"),
        "empty.png": b"",
    }
    for name, data in refused.items():
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(data)

    configs = [
        ("rgb.png", {"shorter": 16, "crop": [12, 10], "mean": [0.485, 0.456, 0.406],
                     "std": [0.229, 0.224, 0.225]}),
        ("rgb.png", {"resize": [80, 50], "bgr": True, "nhwc": True, "scale": 1.0}),
        ("rgba.png", {"resize": [7, 5], "scale": 0.5, "mean": [1, 2, 3], "std": [2, 3, 4]}),
        ("gray.png", {"crop": [8, 8]}),
        ("gray16.png", {"shorter": 20, "crop": [20, 20], "nhwc": True}),
        ("palette.png", {"shorter": 23, "bgr": True}),
    ]
    preprocessed = []
    for i, (name, config) in enumerate(configs):
        tensor, (width, height) = preprocess(pillow_rgb(files[name]), config)
        expected = f"preprocessed{i}.f32"
        with open(os.path.join(out_dir, expected), "wb") as f:
            f.write(tensor.astype("<f4").tobytes())
        preprocessed.append({"file": name, "config": config, "width": width, "height": height,
                             "expected": expected})
    with open(os.path.join(out_dir, "cases.json"), "w") as f:
        json.dump({"decoded": decoded, "refused": sorted(refused), "preprocessed": preprocessed},
                  f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
