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
TEXTS = ["the cat sat on the mat", "a dog", "the dogs ran", "cat", "the cat sat on a mat a dog ran",
         "dogs"]


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


# The text model's vocabulary (text/vocab.txt): WordPiece tokens, [PAD] first as BERT's.
TEXT_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat", "sat", "on", "mat", "a", "dog",
              "ran", "##s"]
TEXT_DIM = 4


def text_model():
    """input_ids, attention_mask, token_type_ids [batch, tokens] (int64) ->
    hidden = tanh(E[input_ids] @ W + T[token_type_ids]) [batch, tokens, 4], and pooled, its
    plain mean over the tokens [batch, 4]. The mask is an input the model does not read (as
    many exported encoders whose pooling is left to the caller)."""
    rng = np.random.default_rng(41)
    e = rng.standard_normal((len(TEXT_VOCAB), 6)).astype(np.float32)
    w = rng.standard_normal((6, TEXT_DIM)).astype(np.float32)
    t = rng.standard_normal((2, TEXT_DIM)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Gather", ["E", "input_ids"], ["e"]),
         helper.make_node("MatMul", ["e", "W"], ["ew"]),
         helper.make_node("Gather", ["T", "token_type_ids"], ["t"]),
         helper.make_node("Add", ["ew", "t"], ["pre"]),
         helper.make_node("Tanh", ["pre"], ["hidden"]),
         helper.make_node("ReduceMean", ["hidden"], ["pooled"], axes=[1], keepdims=0),
         helper.make_node("Identity", ["attention_mask"], ["mask_seen"])],
        "text",
        [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "tokens"])
         for n in ("input_ids", "attention_mask", "token_type_ids")],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "tokens", TEXT_DIM]),
         helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", TEXT_DIM]),
         helper.make_tensor_value_info("mask_seen", TensorProto.INT64, ["batch", "tokens"])],
        [numpy_helper.from_array(e, "E"), numpy_helper.from_array(w, "W"),
         numpy_helper.from_array(t, "T")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def text_ids(text, max_tokens):
    """[CLS] ids [SEP] of a text of whole lower-case words of TEXT_VOCAB ("dogs": dog ##s),
    truncated to max_tokens as BERT's tokenizer does."""
    ids = []
    for word in text.split():
        if word in TEXT_VOCAB:
            ids.append(TEXT_VOCAB.index(word))
        else:
            ids += [TEXT_VOCAB.index(word[:-1]), TEXT_VOCAB.index("##s")]
    return [2] + ids[:max_tokens - 2] + [3]


def text_reference(name, texts, max_tokens):
    """Each text run alone by the Python runtime: its ids (and whether they were cut), and the
    mean over its tokens of
    'hidden' (the encoder's mean pooling over the attention mask) and its first token's row."""
    session = onnxruntime.InferenceSession(os.path.join(HERE, name),
                                           providers=["CPUExecutionProvider"])
    runs = []
    for text in texts:
        ids = np.array([text_ids(text, max_tokens)], dtype=np.int64)
        (hidden,) = session.run(["hidden"], {"input_ids": ids, "attention_mask": np.ones_like(ids),
                                             "token_type_ids": np.zeros_like(ids)})
        runs.append({"text": text, "ids": ids[0].tolist(),
                     "truncated": len(text_ids(text, 10**6)) > max_tokens,
                     "mean": hidden[0].astype(np.float64).mean(axis=0).tolist(),
                     "first": hidden[0, 0].tolist()})
    return {"inputs": describe(session.get_inputs()), "outputs": describe(session.get_outputs()),
            "max_tokens": max_tokens, "runs": runs}


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
    os.makedirs(os.path.join(HERE, "text"), exist_ok=True)
    save(text_model(), "text/text.onnx")
    with open(os.path.join(HERE, "text", "vocab.txt"), "w") as f:
        f.write("\n".join(TEXT_VOCAB) + "\n")
    rng = np.random.default_rng(7)
    data = {
        "onnxruntime": onnxruntime.__version__,
        "linear.onnx": reference("linear.onnx", [
            rng.standard_normal((1, 4)).astype(np.float32),
            rng.standard_normal((5, 4)).astype(np.float32)]),
        "fixed_batch.onnx": reference("fixed_batch.onnx", [
            np.array([[-1.5, 0.25, 2.0, -0.0]], dtype=np.float32)]),
        "text/text.onnx": text_reference("text/text.onnx", TEXTS, 6),
    }
    with open(os.path.join(HERE, "reference.json"), "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
