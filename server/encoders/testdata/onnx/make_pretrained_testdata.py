"""Writes the reference answers of the Python onnxruntime for a real pretrained model:
PaddleOCR's text-direction classifier ch_ppocr_mobile_v2.0_cls_infer.onnx, shipped inside the
PyPI wheel rapidocr-onnxruntime 1.4.4 (the model is not in the repository: .ci/dev unpacks it
into build/models/rapidocr). Its input x is float [batch, 3, height?, width?] (NCHW, BGR as
OpenCV reads it), its output the softmax over {0 degrees, 180 degrees}, [batch, 2].

The encoder's preprocessing is the closest the ImageConfig expresses to rapidocr's own (which
resizes a text line to height 48 keeping its aspect, width at most 192, and pads the rest with
zeros): resize the shorter side to 48, centre crop 192 x 48, BGR, (v / 255 - 0.5) / 0.5. It is
the same for a line of aspect 4:1; a wider one is cropped where rapidocr squeezes it.

pretrained/*.png are text lines drawn with Pillow's default font, upright and turned 180
degrees, at 192 x 48, 256 x 64 (resized) and 240 x 48 (cropped). pretrained_reference.json
holds the model's SHA-256, the ImageConfig and the outputs of the Python onnxruntime on numpy's
preprocessing of Pillow's decode (make_image_cases.py). Needs onnxruntime (the PyPI wheel
.ci/dev pins), numpy and Pillow, e.g.
  /tmp/ort/bin/python server/encoders/testdata/onnx/make_pretrained_testdata.py \
      build/models/rapidocr/ch_ppocr_mobile_v2.0_cls_infer.onnx
"""
import hashlib
import io
import json
import os
import sys

import numpy as np
import onnxruntime
from PIL import Image, ImageDraw

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "image", "testdata"))
from make_image_cases import pillow_rgb, preprocess  # noqa: E402

CONFIG = {"resize_shorter": 48, "crop_width": 192, "crop_height": 48, "channel_order": "bgr",
          "mean": [0.5, 0.5, 0.5], "std": [0.5, 0.5, 0.5]}
SETTINGS = {"shorter": 48, "crop": [192, 48], "bgr": True, "mean": [0.5, 0.5, 0.5],
            "std": [0.5, 0.5, 0.5]}


def text_line(text, width, height, turned):
    """Dark text on a light background, drawn at 4x and scaled down (so strokes are smooth)."""
    big = Image.new("RGB", (width * 4, height * 4), (236, 232, 224))
    draw = ImageDraw.Draw(big)
    line = Image.new("RGB", (len(text) * 6 + 4, 12), (236, 232, 224))
    ImageDraw.Draw(line).text((2, 0), text, fill=(20, 24, 40))
    line = line.resize((width * 4 - 16, height * 4 - 16), Image.Resampling.BICUBIC)
    big.paste(line, (8, 8))
    del draw
    image = big.resize((width, height), Image.Resampling.LANCZOS)
    return image.rotate(180) if turned else image


def png(image):
    buffer = io.BytesIO()
    image.save(buffer, "PNG", optimize=True)
    return buffer.getvalue()


def main(model):
    images = {}
    for text, width, height in (("hello world", 192, 48), ("adapt 2026", 256, 64),
                                ("frozen model", 240, 48)):
        for turned in (False, True):
            name = "line_%dx%d%s.png" % (width, height, "_180" if turned else "")
            images[name] = png(text_line(text, width, height, turned))
    out_dir = os.path.join(HERE, "pretrained")
    os.makedirs(out_dir, exist_ok=True)
    for name, data in images.items():
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(data)
    session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    tensors = np.stack([preprocess(pillow_rgb(data), SETTINGS)[0] for data in images.values()])
    output = session.run(None, {"x": tensors})[0]
    with open(model, "rb") as f:
        data = f.read()
    reference = {
        "model": os.path.basename(model), "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "package": "rapidocr-onnxruntime 1.4.4", "onnxruntime": onnxruntime.__version__,
        "input": session.get_inputs()[0].name, "output": session.get_outputs()[0].name,
        "config": CONFIG, "images": ["pretrained/" + name for name in images],
        "outputs": output.astype(np.float64).tolist()}
    with open(os.path.join(HERE, "pretrained_reference.json"), "w") as f:
        json.dump(reference, f, indent=1)
        f.write("\n")
    for name, row in zip(images, output):
        print(name, row)


if __name__ == "__main__":
    main(sys.argv[1])
