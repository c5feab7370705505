"""The requests and results of each call, shared by the sync and asyncio clients: both build
the same messages here and turn the same responses into the same Python values, so they differ
only in how the call is made."""

from __future__ import annotations

import secrets
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple, Union

import numpy as np

from . import _convert
from ._stubs import pb

IMPORT_CHUNK_BYTES = 1 << 20

# Per input: (label, score) best first, or one float32 array rows × M for a vector store.
Predictions = Union[List[List[Tuple[str, float]]], np.ndarray]


def _batches(items, batch):
    for start in range(0, len(items), batch):
        yield items[start:start + batch]


def new_id_prefix() -> str:
    """A prefix no other call uses: 64 random bits."""
    return secrets.token_hex(8)


def examples(inputs: Any, labels: Any, targets: Any, ids: Any,
             auto_ids: bool) -> List[Any]:
    """The call's examples; without ids and with auto_ids, each gets `<prefix>-<row>`, the
    prefix new for this call, so a retried stream carries the same ids (and the store applies
    each example once) while another call never repeats them."""
    converted = _convert.to_examples(inputs, labels, targets, ids)
    if ids is None and auto_ids:
        prefix = new_id_prefix()
        for row, example in enumerate(converted):
            example.id = "%s-%d" % (prefix, row)
    return converted


def _check_batch(batch: Any) -> None:
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
        raise ValueError("batch: must be a positive int, got %r" % (batch,))


def _passes(passes: Optional[int]) -> Dict[str, int]:
    """The AdaptRequest field for `passes` (None: the server's default, once)."""
    if passes is None:
        return {}
    if not isinstance(passes, int) or isinstance(passes, bool) or passes < 1:
        raise ValueError("passes: must be a positive int, got %r" % (passes,))
    return {"passes": passes}


def example_messages(message_type: Any, tenant: str, store: str, items: List[Any],
                     batch: int, passes: Optional[int] = None) -> List[Any]:
    """The request messages of an Adapt or Forget stream (built eagerly, so that a bad argument
    raises here rather than inside gRPC's sending thread). passes: Adapt only."""
    _check_batch(batch)
    extra = _passes(passes)
    if not items:
        return [message_type(tenant=tenant, store=store)]
    return [message_type(tenant=tenant, store=store, examples=part, **extra)
            for part in _batches(items, batch)]


def sequence_messages(tenant: str, store: str, sequences: Iterable[Any], batch: int,
                      passes: Optional[int], continue_sequence: bool,
                      auto_ids: bool = True) -> Tuple[List[Any], int]:
    """The Adapt messages for a `next` store and the number of (non-empty) sequences: each
    sequence's items (rows × dim, or texts) in order, `batch` a message, a message never mixing
    two sequences; the first message of each sequence restarts it, except the very first under
    continue_sequence. With auto_ids every item gets `<prefix>-<sequence>-<item>` in
    sequence_ids, the prefix new for this call, so a retried stream is skipped message by
    message instead of applied twice."""
    _check_batch(batch)
    extra = _passes(passes)
    prefix = new_id_prefix() if auto_ids else None
    if isinstance(sequences, str):
        raise ValueError("sequences: give a list of sequences, not one str")
    messages: List[Any] = []
    count = 0
    for index, sequence in enumerate(sequences):
        if len(sequence) == 0:
            continue
        try:
            items = _convert.to_inputs(sequence)
        except ValueError as error:
            raise ValueError("sequences[%d]: %s" % (index, error)) from None
        first = 0
        for start, part in enumerate(_batches(items, batch)):
            restart = start == 0 and not (count == 0 and continue_sequence)
            ids = [] if prefix is None else [
                "%s-%d-%d" % (prefix, index, first + i) for i in range(len(part))]
            first += len(part)
            messages.append(pb.AdaptRequest(tenant=tenant, store=store, sequence=part,
                                            sequence_ids=ids, restart_sequence=restart,
                                            **extra))
        count += 1
    if not messages:
        messages.append(pb.AdaptRequest(tenant=tenant, store=store))
    return messages, count


def adapt_result(response: Any) -> Dict[str, Any]:
    return {
        "accepted": response.accepted,
        "version": response.version,
        "evaluated": response.evaluated,
        "correct": response.correct,
        "accuracy": response.accuracy if response.evaluated else None,
        "loss": response.loss if response.evaluated else None,
        "duplicates": response.duplicates,
        "truncated_texts": response.truncated_texts,
    }


def forget_result(response: Any) -> Dict[str, Any]:
    return {"forgotten": response.forgotten, "version": response.version}


def create_store_request(tenant: str, store: str, kind: str, encoder: str, output: str,
                         dim: int, label_encoder: str, labels: Iterable[Any], base: str,
                         params: Dict[str, Any], feedback_window: int = 0,
                         feedback_age_s: int = 0) -> Any:
    spec = _convert.build_spec(kind, encoder, output, dim, params)
    if feedback_window:
        spec.feedback.count = feedback_window
        spec.feedback.max_age_s = feedback_age_s
    elif feedback_age_s:
        raise ValueError("feedback_age_s needs a feedback_window")
    spec.output.label_encoder = label_encoder
    spec.output.labels.extend(str(name) for name in labels)
    spec.base = base
    return pb.CreateStoreRequest(tenant=tenant, store=store, spec=spec)


def compile_request(tenant: str, store: str, refresh_base: bool,
                    overrides: Dict[str, Any]) -> Any:
    request = pb.CompileRequest(tenant=tenant, store=store, refresh_base=refresh_base)
    if overrides:
        _convert.fill_params(request.faast, overrides, "compile")
    return request


def compile_result(response: Any) -> Dict[str, Any]:
    stats = _convert.message_to_dict(response.faast) if response.HasField("faast") else {}
    return {"version": response.version, "stats": stats}


def feedback_request(tenant: str, store: str, items: Iterable[Any]) -> Any:
    """items: (prediction_id, truth) pairs, truth a label, a sequence of floats (vector
    stores) or None (the served prediction was right); or bare prediction ids."""
    request = pb.FeedbackRequest(tenant=tenant, store=store)
    for entry in items:
        prediction_id, truth = (entry, None) if isinstance(entry, str) else entry
        item = request.items.add(prediction_id=prediction_id)
        if isinstance(truth, str):
            item.label = truth
        elif truth is not None:
            item.vector.values.extend(float(v) for v in truth)
    return request


def feedback_result(response: Any) -> Dict[str, Any]:
    return {"accepted": response.accepted, "version": response.version,
            "duplicates": response.duplicates, "evaluated": response.evaluated,
            "correct": response.correct, "served_correct": response.served_correct}


def prediction_ids(response: Any) -> List[str]:
    """The prediction ids of a PredictResponse (empty strings for a store without a feedback
    window)."""
    return [p.prediction_id for p in response.predictions]


def predict_request(tenant: str, store: str, inputs: Any, top_k: int) -> Any:
    return pb.PredictRequest(tenant=tenant, store=store, inputs=_convert.to_inputs(inputs),
                             top_k=top_k)


def predictions(response: Any) -> Predictions:
    """Label stores: per input a list of (label, score) best first. Vector stores: a float32
    numpy array rows × M."""
    items = response.predictions
    if items and not items[0].labels:
        return np.array([list(p.vector) for p in items], dtype=np.float32)
    return [[(item.label, item.score) for item in p.labels] for p in items]


def score_matrix(labels: List[str], response: Any) -> np.ndarray:
    """Scores rows × labels in `labels` order (NaN where the version read lacks a label)."""
    column = {label: j for j, label in enumerate(labels)}
    scores = np.full((len(response.predictions), len(labels)), np.nan)
    for i, prediction in enumerate(response.predictions):
        for item in prediction.labels:
            j = column.get(item.label)
            if j is not None:
                scores[i, j] = item.score
    return scores


def import_chunks(tenant: str, store: str, data: bytes) -> Iterator[Any]:
    yield pb.StoreChunk(tenant=tenant, store=store, data=data[:IMPORT_CHUNK_BYTES])
    for start in range(IMPORT_CHUNK_BYTES, len(data), IMPORT_CHUNK_BYTES):
        yield pb.StoreChunk(data=data[start:start + IMPORT_CHUNK_BYTES])


def list_request(tenant: str, page_size: int, page_token: str) -> Any:
    return pb.ListStoresRequest(tenant=tenant, page_size=page_size, page_token=page_token)


def check_next_token(response: Any, token: str) -> Optional[str]:
    """The next page's token, None at the end; raises on a token answered with itself."""
    if not response.next_page_token:
        return None
    if response.next_page_token == token:
        from grpc import StatusCode

        from .errors import error_for
        raise error_for(StatusCode.INTERNAL, "the server answered a page token with itself",
                        "ListStores")
    return response.next_page_token
