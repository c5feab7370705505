"""Writes external/linear.onnx: linear.onnx (make_onnx_testdata.py) saved with ONNX external
data, each initializer in a file of its own beside the model (external/W, external/b), for the
onnx encoder's fingerprint over those files. Its outputs are linear.onnx's (reference.json).

Needs onnx (Debian's python3-onnx): /usr/bin/python3 make_external_data.py
"""
import os

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    model = onnx.load(os.path.join(HERE, "linear.onnx"))
    out = os.path.join(HERE, "external")
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(out):
        os.remove(os.path.join(out, name))
    onnx.save(model, os.path.join(out, "linear.onnx"), save_as_external_data=True,
              all_tensors_to_one_file=False, size_threshold=0)
    onnx.checker.check_model(os.path.join(out, "linear.onnx"))
    print(sorted(os.listdir(out)))


if __name__ == "__main__":
    main()
