"""Conversions between Python/numpy/pandas values and adapt.v1 messages.

Inputs are numeric (a rows × dim array, sent as packed float32 vectors), texts (a sequence of
str, for text encoders) or images (encoded bytes, paths or uint8 arrays; _images.py). Targets
are labels (one per row, sent with str) or a rows × M array. Wherever an array is taken, a pandas DataFrame or Series is taken too (a Series
is one column); pandas is never imported here, only recognised by its types' module.
"""

import numbers

import numpy as np
from google.protobuf import descriptor

from . import _images
from ._stubs import pb



def _is_repeated(field):
    """protobuf >= 6 has FieldDescriptor.is_repeated (and 7 dropped `label`); Debian's 3.21
    has only `label`."""
    repeated = getattr(field, "is_repeated", None)
    if repeated is not None:
        return bool(repeated)
    return field.label == descriptor.FieldDescriptor.LABEL_REPEATED


def _kinds():
    """The store kinds adapt.proto lists: StoreKind value STORE_KIND_<NAME> is kind "<name>",
    whose parameters are the StoreSpec.params field of that name (if it has one)."""
    kinds = {}
    for value in pb.StoreKind.DESCRIPTOR.values:
        if value.number != pb.STORE_KIND_UNSPECIFIED:
            kinds[value.name[len("STORE_KIND_"):].lower()] = value.number
    return kinds


KINDS = _kinds()
KIND_NAMES = {number: name for name, number in KINDS.items()}
_PARAMS = {field.name for field in pb.StoreSpec.DESCRIPTOR.oneofs_by_name["params"].fields}


def pandas_kind(values):
    """'frame', 'series' or 'index' for a pandas object, else None (pandas is not imported)."""
    if not type(values).__module__.startswith("pandas"):
        return None
    if hasattr(values, "columns") and hasattr(values, "to_numpy"):
        return "frame"
    if hasattr(values, "dtype") and hasattr(values, "to_numpy"):
        return "index" if type(values).__name__.endswith("Index") else "series"
    return None


def _is_text_dtype(dtype):
    return getattr(dtype, "kind", None) in ("U", "S", "O") or str(dtype) in ("string", "str")


def _texts(values, what):
    texts = list(values)
    for row, value in enumerate(texts):
        if not isinstance(value, str):
            raise ValueError("%s: row %d is %r, expected a str (texts) or give numbers only" %
                             (what, row, value))
    return texts


def _from_pandas(values, what):
    """A DataFrame or Series as a list of texts or a 2-D float32 array."""
    kind = pandas_kind(values)
    if kind == "frame":
        text_columns = [str(c) for c, dtype in values.dtypes.items() if _is_text_dtype(dtype)]
        if text_columns:
            if len(values.columns) != 1:
                raise ValueError("%s: a DataFrame of texts has one column, got columns %s; the "
                                 "text columns are %s" % (what, list(map(str, values.columns)),
                                                          text_columns))
            return _texts(values.iloc[:, 0].to_numpy(dtype=object), what)
        return values.to_numpy(dtype=np.float32)
    if _is_text_dtype(values.dtype):
        return _texts(values.to_numpy(dtype=object), what)
    return values.to_numpy(dtype=np.float32).reshape(-1, 1)


def _is_text_sequence(values):
    if isinstance(values, np.ndarray):
        return values.dtype.kind in ("U", "S", "O") and values.ndim == 1 and all(
            isinstance(v, str) for v in values)
    return isinstance(values, (list, tuple)) and len(values) > 0 and all(
        isinstance(v, str) for v in values)


def to_inputs(values):
    """Returns a list of pb.Input: one per row of a 2-D numeric array (or DataFrame), one per
    text (a sequence of str, or a Series / one-column DataFrame of str), or one per image
    (_images.as_images: encoded bytes, paths, uint8 arrays sent as PNG)."""
    if isinstance(values, str):
        raise ValueError("inputs: give a sequence of texts, not one str")
    images = _images.as_images(values)
    if images is not None:
        return [pb.Input(image=v) for v in images]
    if pandas_kind(values) is not None:
        values = _from_pandas(values, "inputs")
        if isinstance(values, list):
            return [pb.Input(text=v) for v in values]
    if _is_text_sequence(values):
        return [pb.Input(text=str(v)) for v in values]
    array = np.asarray(values, dtype=np.float32)
    if array.ndim != 2:
        raise ValueError("inputs: expected a 2-D array (rows × dim) or a sequence of texts, "
                         "got shape %s" % (array.shape,))
    return [pb.Input(vector=pb.FloatVector(values=row.tolist())) for row in array]


def label_list(labels):
    """One label per row as str: from a list, a 1-D array, a Series or a one-column DataFrame."""
    if isinstance(labels, str):
        raise ValueError("labels: give one label per row, not one str")
    kind = pandas_kind(labels)
    if kind == "frame":
        if len(labels.columns) != 1:
            raise ValueError("labels: a DataFrame of labels has one column, got %d" %
                             len(labels.columns))
        labels = labels.iloc[:, 0]
        kind = "series"
    if kind is not None:
        labels = labels.to_numpy(dtype=object)
    if isinstance(labels, np.ndarray):
        if labels.ndim == 2 and labels.shape[1] == 1:
            labels = labels[:, 0]
        if labels.ndim != 1:
            raise ValueError("labels: expected one label per row, got shape %s" %
                             (labels.shape,))
        labels = labels.tolist()
    out = []
    for row, value in enumerate(labels):
        if value is None or (isinstance(value, float) and value != value):
            raise ValueError("labels: row %d has no label (%r)" % (row, value))
        out.append(str(value))
    return out


def target_array(targets, rows):
    if pandas_kind(targets) is not None:
        targets = targets.to_numpy(dtype=np.float32)
        if targets.ndim == 1:
            targets = targets.reshape(-1, 1)
    array = np.asarray(targets, dtype=np.float32)
    if array.ndim != 2 or array.shape[0] != rows:
        raise ValueError("targets: expected a 2-D array with %d rows, got shape %s" %
                         (rows, array.shape))
    return array


def to_examples(inputs, labels=None, targets=None, ids=None):
    """Returns a list of pb.Example from inputs and exactly one of labels / targets."""
    if (labels is None) == (targets is None):
        raise ValueError("give exactly one of labels (label stores) or targets (vector stores)")
    converted = to_inputs(inputs)
    rows = len(converted)
    if labels is not None:
        names = label_list(labels)
        if len(names) != rows:
            raise ValueError("labels: %d given for %d input rows" % (len(names), rows))
        examples = [pb.Example(input=x, label=y) for x, y in zip(converted, names)]
    else:
        array = target_array(targets, rows)
        examples = [pb.Example(input=x, vector=pb.FloatVector(values=t.tolist()))
                    for x, t in zip(converted, array)]
    if ids is not None:
        id_list = list(ids.tolist() if hasattr(ids, "tolist") else ids)
        if len(id_list) != rows:
            raise ValueError("ids: %d given for %d input rows" % (len(id_list), rows))
        for example, example_id in zip(examples, id_list):
            example.id = str(example_id)
    return examples


def parse_output(output):
    """'labels', 'next' or 'vector:M' → pb.OutputSpec."""
    if output == "labels":
        return pb.OutputSpec(kind=pb.OutputSpec.KIND_LABELS)
    if output == "next":
        return pb.OutputSpec(kind=pb.OutputSpec.KIND_NEXT)
    if isinstance(output, str) and output.startswith("vector:"):
        width = output[len("vector:"):]
        if width.isdigit() and int(width) > 0:
            return pb.OutputSpec(kind=pb.OutputSpec.KIND_VECTOR, dim=int(width))
    raise ValueError("output: expected 'labels', 'vector:M' (M > 0) or 'next', got %r" % (output,))


def format_output(spec):
    kind = spec.kind
    if kind == pb.OutputSpec.KIND_LABELS:
        return "labels"
    if kind == pb.OutputSpec.KIND_VECTOR:
        return "vector:%d" % spec.dim
    if kind == pb.OutputSpec.KIND_NEXT:
        return "next"
    return "unspecified"


def _enum_value(field, value):
    """An enum field from its number, its full name or its short name ('l2' for KEY_NORM_L2)."""
    enum = field.enum_type
    if isinstance(value, numbers.Integral):
        return int(value)
    wanted = str(value).upper()
    for candidate in enum.values:
        if candidate.name == wanted or candidate.name.endswith("_" + wanted):
            if not candidate.name.endswith("_UNSPECIFIED") or wanted.endswith("UNSPECIFIED"):
                return candidate.number
    names = [v.name for v in enum.values if not v.name.endswith("_UNSPECIFIED")]
    raise ValueError("%s: unknown value %r (one of %s)" % (field.name, value, ", ".join(names)))


def fill_params(message, params, what):
    """Sets the fields of a kind's parameter message (FaastParams, ...) from keyword values."""
    fields = message.DESCRIPTOR.fields_by_name
    for name, value in params.items():
        field = fields.get(name)
        if field is None:
            raise ValueError("%s: unknown parameter %r (known: %s)" %
                             (what, name, ", ".join(sorted(fields))))
        if _is_repeated(field):
            values = [value] if isinstance(value, numbers.Number) else list(value)
            getattr(message, name).extend(values)
        elif field.type == descriptor.FieldDescriptor.TYPE_ENUM:
            setattr(message, name, _enum_value(field, value))
        elif field.type == descriptor.FieldDescriptor.TYPE_BOOL:
            setattr(message, name, bool(value))
        else:
            setattr(message, name, value)
    return message


def build_spec(kind, encoder, output, dim, params):
    if kind not in KINDS:
        raise ValueError("kind: expected one of %s, got %r" % (", ".join(KINDS), kind))
    spec = pb.StoreSpec(kind=KINDS[kind], encoder=encoder, output=parse_output(output), dim=dim)
    if kind not in _PARAMS:
        if params:
            raise ValueError("%s stores take no parameters, got %s" % (kind, ", ".join(params)))
        return spec
    fill_params(getattr(spec, kind), params, kind)
    # An empty parameter message still selects the kind's oneof case.
    getattr(spec, kind).SetInParent()
    return spec


def _field_has_value(message, field):
    if _is_repeated(field):
        return True
    presence = getattr(field, "has_presence",
                       field.message_type is not None or field.containing_oneof is not None)
    return not presence or message.HasField(field.name)


def _scalar(field, value):
    if field.type == descriptor.FieldDescriptor.TYPE_MESSAGE:
        return message_to_dict(value)
    if field.type == descriptor.FieldDescriptor.TYPE_ENUM:
        known = field.enum_type.values_by_number.get(value)
        return known.name if known is not None else value
    return value


def message_to_dict(message):
    """A message as a dict keyed by field name; unset optional and oneof fields are left out,
    enums become their names, repeated fields lists."""
    out = {}
    for field in message.DESCRIPTOR.fields:
        if not _field_has_value(message, field):
            continue
        value = getattr(message, field.name)
        if _is_repeated(field):
            out[field.name] = [_scalar(field, v) for v in value]
        else:
            out[field.name] = _scalar(field, value)
    return out


def spec_to_dict(spec):
    """StoreSpec → dict: kind ('faast', ...), encoder, output ('labels', 'vector:M', 'next'),
    dim, base ('TENANT/STORE' or ''), params (the kind's parameters that are set) and feedback
    ({count, max_age_s}: the feedback window, count 0 for none)."""
    params_case = spec.WhichOneof("params")
    return {
        "kind": KIND_NAMES.get(spec.kind, "unspecified"),
        "encoder": spec.encoder,
        "output": format_output(spec.output),
        "dim": spec.dim,
        "base": spec.base,
        "params": message_to_dict(getattr(spec, params_case)) if params_case else {},
        "feedback": {"count": spec.feedback.count, "max_age_s": spec.feedback.max_age_s},
    }


def store_info_to_dict(info):
    """StoreInfo → dict: the generic field mapping with the spec in the spec_to_dict form and
    the kind's statistics under 'stats'."""
    out = message_to_dict(info)
    out["spec"] = spec_to_dict(info.spec)
    stats_case = info.WhichOneof("stats")
    out["stats"] = {}
    if stats_case:
        out.pop(stats_case, None)
        out["stats"] = message_to_dict(getattr(info, stats_case))
    return out
