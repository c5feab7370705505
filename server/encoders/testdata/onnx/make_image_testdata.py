"""Writes the onnx image tests' models, images and what the Python onnxruntime answers on
numpy's preprocessing of Pillow's decode of each image (image_reference.json).

- image.onnx: pixels float [batch, 3, 8, 8] (NCHW) -> tanh(flatten(pixels) @ W) [batch, 6];
  W is random, so any pixel, channel or layout mistake changes the output.
- image_nhwc.onnx: pixels float [batch, height?, width?, 3] (NHWC, height and width dynamic)
  -> transpose, a 3x3 convolution to 5 channels, global average pooling: [batch, 5].
- photo.png (23x17 RGB), alpha.png (13x19 RGBA), gray.png (10x12 grayscale): tiny images.

Each case is a model, an ImageConfig (as its JSON) and an image. The preprocessing is
server/encoders/image/testdata/make_image_cases.py's (bilinear, half-pixel centres, no
antialiasing). Needs onnx and Pillow (Debian's python3-onnx, python3-pil) and onnxruntime (the
PyPI wheel .ci/dev pins), e.g. in a venv made with --system-site-packages:
  /tmp/ort/bin/python server/encoders/testdata/onnx/make_image_testdata.py
"""
import io
import json
import os
import sys

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "image", "testdata"))
from make_image_cases import pillow_rgb, preprocess, smooth  # noqa: E402


def save(model, name):
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, name))


def flat_model():
    rng = np.random.default_rng(41)
    w = (rng.standard_normal((3 * 8 * 8, 6)) * 0.1).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Flatten", ["pixels"], ["flat"], axis=1),
         helper.make_node("MatMul", ["flat", "W"], ["xw"]),
         helper.make_node("Tanh", ["xw"], ["embedding"])],
        "image",
        [helper.make_tensor_value_info("pixels", TensorProto.FLOAT, ["batch", 3, 8, 8])],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", 6])],
        [numpy_helper.from_array(w, "W")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def conv_model():
    rng = np.random.default_rng(42)
    w = rng.standard_normal((5, 3, 3, 3)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Transpose", ["pixels"], ["nchw"], perm=[0, 3, 1, 2]),
         helper.make_node("Conv", ["nchw", "W"], ["conv"], pads=[1, 1, 1, 1]),
         helper.make_node("GlobalAveragePool", ["conv"], ["pooled"]),
         helper.make_node("Flatten", ["pooled"], ["embedding"], axis=1)],
        "image_nhwc",
        [helper.make_tensor_value_info("pixels", TensorProto.FLOAT, ["batch", "h", "w", 3])],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", 5])],
        [numpy_helper.from_array(w, "W")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def png(array, mode):
    buffer = io.BytesIO()
    Image.fromarray(array, mode).save(buffer, "PNG")
    return buffer.getvalue()


# (model, ImageConfig as JSON, the numpy preprocessing's settings) per case.
CASES = [
    ("image.onnx", {"resize_shorter": 10, "crop_width": 8, "crop_height": 8,
                    "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]},
     {"shorter": 10, "crop": [8, 8], "mean": [0.485, 0.456, 0.406],
      "std": [0.229, 0.224, 0.225]}),
    ("image.onnx", {}, {"resize": [8, 8]}),
    ("image_nhwc.onnx", {"layout": "nhwc", "channel_order": "bgr", "resize_width": 12,
                         "resize_height": 9, "scale": 1.0, "mean": [120, 110, 100]},
     {"resize": [12, 9], "nhwc": True, "bgr": True, "scale": 1.0, "mean": [120, 110, 100]}),
]


def main():
    save(flat_model(), "image.onnx")
    save(conv_model(), "image_nhwc.onnx")
    images = {"photo.png": png(smooth(23, 17, 3), "RGB"),
              "alpha.png": png(smooth(13, 19, 4), "RGBA"),
              "gray.png": png(smooth(10, 12, 1)[..., 0], "L")}
    for name, data in images.items():
        with open(os.path.join(HERE, name), "wb") as f:
            f.write(data)
    cases = []
    for model, config, settings in CASES:
        session = onnxruntime.InferenceSession(os.path.join(HERE, model),
                                               providers=["CPUExecutionProvider"])
        tensors = [preprocess(pillow_rgb(data), settings)[0] for data in images.values()]
        output = session.run(None, {"pixels": np.stack(tensors)})[0]
        cases.append({"model": model, "config": config, "images": list(images),
                      "output": output.astype(np.float64).tolist()})
    with open(os.path.join(HERE, "image_reference.json"), "w") as f:
        json.dump({"cases": cases}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
