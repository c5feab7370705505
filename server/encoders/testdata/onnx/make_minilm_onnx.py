#!/usr/bin/python3
"""Builds an fp32 ONNX graph of a BERT sentence model (all-MiniLM-L6-v2 first) from its
safetensors weights with onnx.helper: no torch, only numpy and onnx (Debian's python3-numpy and
python3-onnx).

  make_minilm_onnx.py MODEL_DIR OUT_DIR

MODEL_DIR is a sentence-transformers directory (config.json, model.safetensors, vocab.txt);
OUT_DIR receives model.onnx (inputs input_ids, attention_mask, token_type_ids: int64
[batch, tokens]; output last_hidden_state: float [batch, tokens, hidden]) and the tokenizer's
files beside it (vocab.txt, tokenizer_config.json, tokenizer.json), as the onnx encoder's text
input reads them (docs/ONNX.md). The graph is BertModel's forward pass: word, position and
token-type embeddings, LayerNorm, then per layer self-attention with the padding masked out,
the output projection, residual and LayerNorm, the feed-forward block with exact (erf) GELU,
residual and LayerNorm. Pooling is the encoder's.

The onnx tests build it at test time (a ctest fixture) into the build directory: the file is
about 90 MB and is never committed. Without the model it fails, unless ADAPTD_SKIP_MODEL_TESTS=1
(then it builds nothing and the test skips, as the other model tests do).
"""
import json
import os
import shutil
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


def read_safetensors(path):
    """name -> numpy array, from the 8-byte little-endian header length, the JSON header and
    the data section."""
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    body = data[8 + length:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        array = np.frombuffer(body[begin:end], dtype=DTYPES[info["dtype"]])
        tensors[name] = array.reshape(info["shape"]).astype(np.float32)
    return tensors


class Graph:
    def __init__(self, weights):
        self.weights = weights
        self.nodes = []
        self.initializers = []
        self.count = 0

    def weight(self, name, transpose=False):
        for key in (name, "bert." + name):
            if key in self.weights:
                array = self.weights[key]
                array = np.ascontiguousarray(array.T) if transpose else array
                self.initializers.append(numpy_helper.from_array(array, key))
                return key
        raise KeyError("missing tensor " + name)

    def const(self, array, name):
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, op_type, inputs, **attrs):
        self.count += 1
        out = "%s_%d" % (op_type.lower(), self.count)
        self.nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out

    def dense(self, x, prefix):
        return self.op("Add", [self.op("MatMul", [x, self.weight(prefix + ".weight", True)]),
                               self.weight(prefix + ".bias")])

    def layer_norm(self, x, prefix, eps):
        return self.op("LayerNormalization",
                       [x, self.weight(prefix + ".weight"), self.weight(prefix + ".bias")],
                       axis=-1, epsilon=eps)


def build(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        config = json.load(f)
    hidden = config["hidden_size"]
    heads = config["num_attention_heads"]
    head_dim = hidden // heads
    eps = float(config.get("layer_norm_eps", 1e-12))
    g = Graph(read_safetensors(os.path.join(model_dir, "model.safetensors")))

    # Embeddings: word + position (0..tokens-1) + token type, then LayerNorm.
    tokens = g.op("Gather", [g.op("Shape", ["input_ids"]), g.const(np.int64(1), "one_index")],
                  axis=0)
    positions = g.op("Range", [g.const(np.int64(0), "zero"), tokens, g.const(np.int64(1), "step")])
    x = g.op("Add", [g.op("Gather", [g.weight("embeddings.word_embeddings.weight"), "input_ids"]),
                     g.op("Gather", [g.weight("embeddings.position_embeddings.weight"),
                                     positions])])
    x = g.op("Add", [x, g.op("Gather", [g.weight("embeddings.token_type_embeddings.weight"),
                                        "token_type_ids"])])
    x = g.layer_norm(x, "embeddings.LayerNorm", eps)

    # The padding's attention bias: 0 for tokens, -1e9 for padding, [batch, 1, 1, tokens].
    mask = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    bias = g.op("Mul", [g.op("Sub", [g.const(np.float32(1), "one_f"), mask]),
                        g.const(np.float32(-1e9), "minus_big")])
    bias = g.op("Unsqueeze", [bias, g.const(np.array([1, 2], dtype=np.int64), "axes_12")])
    split_shape = g.const(np.array([0, 0, heads, head_dim], dtype=np.int64), "split_shape")
    merge_shape = g.const(np.array([0, 0, hidden], dtype=np.int64), "merge_shape")
    scale = g.const(np.float32(1.0 / np.sqrt(head_dim)), "scale")
    sqrt_half = g.const(np.float32(1.0 / np.sqrt(2.0)), "sqrt_half")
    half = g.const(np.float32(0.5), "half")

    def heads_of(t, perm):
        return g.op("Transpose", [g.op("Reshape", [t, split_shape])], perm=perm)

    for i in range(config["num_hidden_layers"]):
        p = "encoder.layer.%d." % i
        q = heads_of(g.dense(x, p + "attention.self.query"), [0, 2, 1, 3])
        k = heads_of(g.dense(x, p + "attention.self.key"), [0, 2, 3, 1])
        v = heads_of(g.dense(x, p + "attention.self.value"), [0, 2, 1, 3])
        scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, k]), scale]), bias])
        context = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        context = g.op("Reshape", [g.op("Transpose", [context], perm=[0, 2, 1, 3]), merge_shape])
        attention = g.dense(context, p + "attention.output.dense")
        x = g.layer_norm(g.op("Add", [attention, x]), p + "attention.output.LayerNorm", eps)
        inner = g.dense(x, p + "intermediate.dense")
        gelu = g.op("Mul", [g.op("Mul", [inner, half]),
                            g.op("Add", [g.op("Erf", [g.op("Mul", [inner, sqrt_half])]),
                                         g.const(np.float32(1), "one_gelu_%d" % i)])])
        x = g.layer_norm(g.op("Add", [g.dense(gelu, p + "output.dense"), x]),
                         p + "output.LayerNorm", eps)
    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))

    ids = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "tokens"])
           for n in ("input_ids", "attention_mask", "token_type_ids")]
    out = [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                         ["batch", "tokens", hidden])]
    graph = helper.make_graph(g.nodes, "bert", ids, out, g.initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                             producer_name="make_minilm_onnx.py")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: make_minilm_onnx.py MODEL_DIR OUT_DIR")
    model_dir, out_dir = sys.argv[1], sys.argv[2]
    if (not os.path.exists(os.path.join(model_dir, "model.safetensors")) and
            os.environ.get("ADAPTD_SKIP_MODEL_TESTS") == "1"):
        print("no model at %s and ADAPTD_SKIP_MODEL_TESTS=1: nothing built" % model_dir)
        return
    os.makedirs(out_dir, exist_ok=True)
    model = build(model_dir)
    onnx.checker.check_model(model)
    tmp = os.path.join(out_dir, "model.onnx.tmp")
    onnx.save(model, tmp)
    for name in ("vocab.txt", "tokenizer_config.json", "tokenizer.json"):
        if os.path.exists(os.path.join(model_dir, name)):
            shutil.copyfile(os.path.join(model_dir, name), os.path.join(out_dir, name))
    os.replace(tmp, os.path.join(out_dir, "model.onnx"))


if __name__ == "__main__":
    main()
