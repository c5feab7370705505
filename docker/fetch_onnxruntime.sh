#!/bin/sh
# ONNX Runtime's shared library for the image (docs/ONNX.md, "Deploy"): the PyPI wheel
# onnxruntime pinned by version and SHA-256 (the pins of .ci/dev, which tests/deploy checks are
# the same), its onnxruntime/capi/libonnxruntime.so.<version> installed into DEST with the
# soname link libonnxruntime.so.1. The wheel is taken from $ADAPTD_ONNXRUNTIME_WHEEL_DIR when it
# holds it, else downloaded with pip.
# Usage: docker/fetch_onnxruntime.sh DEST
set -eu
dest=$1
version=1.32.0
wheel=onnxruntime-$version-cp311-cp311-manylinux_2_28_x86_64.whl
sha256=5a34fc4dfeb5a7b4a74c95dcba1e773d722abda720b474edf1b0c419dc6d163d
tmp=$(mktemp -d)
if [ -n "${ADAPTD_ONNXRUNTIME_WHEEL_DIR:-}" ] && [ -f "$ADAPTD_ONNXRUNTIME_WHEEL_DIR/$wheel" ]; then
  cp "$ADAPTD_ONNXRUNTIME_WHEEL_DIR/$wheel" "$tmp/"
else
  python3 -m pip download --no-deps --disable-pip-version-check -q --only-binary :all: \
    --python-version 3.11 --platform manylinux_2_28_x86_64 "onnxruntime==$version" -d "$tmp"
fi
echo "$sha256  $tmp/$wheel" | sha256sum -c --quiet -
python3 -m zipfile -e "$tmp/$wheel" "$tmp/wheel"
install -D -m 0644 "$tmp/wheel/onnxruntime/capi/libonnxruntime.so.$version" \
  "$dest/libonnxruntime.so.$version"
ln -sf "libonnxruntime.so.$version" "$dest/libonnxruntime.so.1"
rm -rf "$tmp"
