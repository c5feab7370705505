"""Writes the small ONNX models of the onnx tests and what the Python onnxruntime answers for
them (reference.json): each model's inputs and outputs (name, element type, dimensions, -1 for
a dynamic one) and the outputs of fixed input tensors.

Needs onnx (Debian's python3-onnx) and onnxruntime (the PyPI wheel .ci/dev pins), e.g.
  python3 -m venv --system-site-packages /tmp/ort && /tmp/ort/bin/pip install onnxruntime==1.32.0
  /tmp/ort/bin/python server/encoders/testdata/onnx/make_onnx_testdata.py
"""
import json
import os

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ELEMENT_TYPES = {"tensor(float)": 1, "tensor(int64)": 7}


def save(model, name):
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, name))


def linear_model():
    """features [batch, 4] -> tanh(features @ W + b) [batch, 3]."""
    rng = np.random.default_rng(40)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["features", "W"], ["xw"]),
         helper.make_node("Add", ["xw", "b"], ["pre"]),
         helper.make_node("Tanh", ["pre"], ["embedding"])],
        "linear",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", 3])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def fixed_batch_model():
    """x [1, 4] -> relu(x) * 2 [1, 4]: a model whose batch dimension is fixed."""
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]),
         helper.make_node("Add", ["r", "r"], ["y"])],
        "fixed_batch",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def describe(args):
    return [{"name": a.name, "element_type": ELEMENT_TYPES[a.type],
             "dims": [d if isinstance(d, int) else -1 for d in a.shape]} for a in args]


def reference(name, feeds):
    session = onnxruntime.InferenceSession(os.path.join(HERE, name),
                                           providers=["CPUExecutionProvider"])
    inputs = session.get_inputs()
    outputs = session.get_outputs()
    runs = []
    for feed in feeds:
        (result,) = session.run([outputs[0].name], {inputs[0].name: feed})
        runs.append({"input": {"shape": list(feed.shape), "values": feed.ravel().tolist()},
                     "output": {"shape": list(result.shape),
                                "values": result.ravel().tolist()}})
    return {"inputs": describe(inputs), "outputs": describe(outputs), "runs": runs}


def main():
    save(linear_model(), "linear.onnx")
    save(fixed_batch_model(), "fixed_batch.onnx")
    rng = np.random.default_rng(7)
    data = {
        "onnxruntime": onnxruntime.__version__,
        "linear.onnx": reference("linear.onnx", [
            rng.standard_normal((1, 4)).astype(np.float32),
            rng.standard_normal((5, 4)).astype(np.float32)]),
        "fixed_batch.onnx": reference("fixed_batch.onnx", [
            np.array([[-1.5, 0.25, 2.0, -0.0]], dtype=np.float32)]),
    }
    with open(os.path.join(HERE, "reference.json"), "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
