"""scikit-learn estimators whose model is an adaptd store: AdaptdClassifier and AdaptdRegressor.

    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from adaptd_client.sklearn import AdaptdClassifier

    model = make_pipeline(StandardScaler(),
                          AdaptdClassifier("127.0.0.1:50051", "acme", "intents", ridge=1.0))
    model.fit(x_train, y_train)            # (re)creates acme/intents, adapts, compiles
    model.predict(x_test); model.predict_proba(x_test); model.score(x_test, y_test)

The estimator owns the store it names: `fit`, and the first `partial_fit` of an unfitted
estimator, delete it if it exists and create it anew from the estimator's parameters; later
`partial_fit` calls adapt it further. Every method opens its own connection, so an estimator
holds no channel and clones, pickles and deep copies like any other (a copy names the same
store: two estimators fitted on one store overwrite each other).

Parameters: address, tenant, store; kind ("faast", "falcon" or "fwpkm"); encoder (default
"identity", the rows are the keys; a text encoder takes a sequence of str as X); token, timeout
(as for Client); and **params, the kind's store parameters (ridge=1.0, rcond=..., variant="3",
...), which get_params/set_params expose like the named ones. faast stores are created with
auto_compile_every=0 and auto_compile_delay_ms=0 unless given: fit and partial_fit compile
explicitly once their examples are in.

Feedback (docs/FEEDBACK.md): with feedback_window=N the store remembers its last N served
predictions. `predict_with_ids(X)` returns the predictions and their ids, and `predict(X)`
keeps its call's ids in `last_prediction_ids_`; once the true targets are known,
`feedback(y)` (or `feedback(y, ids)`) teaches the store y for those predictions without
sending X again, as `partial_fit(X, y)` would with the same rows (and compiles, faast). A
resent call applies once; predictions the store no longer remembers raise NotFoundError, and
then `partial_fit` with the inputs does the same.

    clf = AdaptdClassifier(address, "acme", "tickets", ridge=1.0, feedback_window=10000)
    clf.fit(x_train, y_train)
    served = clf.predict(x_new)        # ids kept in clf.last_prediction_ids_
    clf.feedback(y_new)                # the true labels of those rows, X not sent again

AdaptdClassifier: labels of any type (sent as str, returned as the classes_ given);
predict_proba is the store's scores for classes_ clipped at 0 and normalised per row (a
softmax of the scores where every one is <= 0), so its argmax is predict's answer; the scores
are least-squares read-outs, not calibrated probabilities. AdaptdRegressor: y of one column
(predict returns 1-D) or several (a vector:M store, predict returns rows x M).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _convert
from .client import Client
from ._calls import predictions, prediction_ids
from .errors import NotFoundError

__all__ = ["AdaptdClassifier", "AdaptdRegressor"]

_NAMED = ("address", "tenant", "store", "kind", "encoder", "token", "timeout",
          "feedback_window")
_FEEDBACK_ITEMS = 10000  # the most items one Feedback call takes
_FAAST_MANUAL = {"auto_compile_every": 0, "auto_compile_delay_ms": 0}


def _is_texts(X: Any) -> bool:
    if isinstance(X, str):
        return False
    if _convert.pandas_kind(X) == "series":
        return _convert._is_text_dtype(X.dtype)
    if isinstance(X, (list, tuple)) or (isinstance(X, np.ndarray) and X.ndim == 1):
        return len(X) > 0 and all(isinstance(v, str) for v in X)
    return False


def _store_param_names(kind: str) -> List[str]:
    """The fields of the kind's parameter message (FaastParams, ...); [] for an unknown kind."""
    spec = _convert.pb.StoreSpec()
    if kind not in _convert.KINDS or kind not in spec.DESCRIPTOR.fields_by_name:
        return []
    return [f.name for f in spec.DESCRIPTOR.fields_by_name[kind].message_type.fields]


def _check_window(estimator: Any) -> None:
    if not estimator.feedback_window:
        raise ValueError("prediction ids and feedback need a store with a feedback window: set "
                         "feedback_window=N and fit again")


class _AdaptdEstimator(BaseEstimator):
    def __init__(self, address: str, tenant: str, store: str, kind: str = "faast", *,
                 encoder: str = "identity", token: Optional[str] = None, timeout: float = 30.0,
                 feedback_window: int = 0, **params: Any) -> None:
        self.address = address
        self.tenant = tenant
        self.store = store
        self.kind = kind
        self.encoder = encoder
        self.token = token
        self.timeout = timeout
        self.feedback_window = feedback_window
        # The kind's store parameters, kept as given; get_params lists them with the others.
        self._store_params = dict(params)

    # -- parameters (get_params / set_params / clone) --------------------------------------

    def get_params(self, deep: bool = True) -> Dict[str, Any]:
        params = super().get_params(deep=deep)
        params.update(self._store_params)
        return params

    def set_params(self, **params: Any) -> "_AdaptdEstimator":
        named = {k: v for k, v in params.items() if k in _NAMED}
        super().set_params(**named)
        for name, value in params.items():
            if name in _NAMED:
                continue
            if name not in self._store_params and name not in _store_param_names(self.kind):
                raise ValueError("Invalid parameter %r for estimator %s: the named parameters "
                                 "are %s and %s stores take %s" % (
                                     name, type(self).__name__, ", ".join(_NAMED), self.kind,
                                     ", ".join(_store_param_names(self.kind)) or "none"))
            self._store_params[name] = value
        return self

    # -- the store ---------------------------------------------------------------------------

    def _client(self) -> Client:
        return Client(self.address, token=self.token, timeout=self.timeout)

    def _output(self, y: np.ndarray) -> str:
        raise NotImplementedError

    def _recreate(self, client: Client, X: Any, y: np.ndarray) -> None:
        params = dict(self._store_params)
        if self.kind == "faast":
            params = {**_FAAST_MANUAL, **params}
        dim = 0 if self._texts_ else int(np.asarray(X).shape[1])
        try:
            client.delete_store(self.tenant, self.store)
        except NotFoundError:
            pass
        client.create_store(self.tenant, self.store, kind=self.kind, encoder=self.encoder,
                            output=self._output(y), dim=dim,
                            feedback_window=int(self.feedback_window), **params)

    def _publish(self, client: Client) -> None:
        if self.kind == "faast":
            self.store_version_ = client.compile(self.tenant, self.store)["version"]
        else:
            self.store_version_ = client.get_store(self.tenant, self.store)["version"]

    def _texts(self, X: Any) -> List[str]:
        return list(X.to_numpy(dtype=object) if _convert.pandas_kind(X) else X)

    def _validate_fit(self, X: Any, y: Any, reset: bool) -> Any:
        """(X, y) checked as scikit-learn does; texts are passed through as a list."""
        if reset:
            self._texts_ = _is_texts(X)
        if self._texts_:
            if y is None:
                raise ValueError("%s requires y to be passed, but the target y is None" %
                                 type(self).__name__)
            texts, y = self._texts(X), self._check_y(np.asarray(y))
            if len(y) != len(texts):
                raise ValueError("X has %d texts but y has %d rows" % (len(texts), len(y)))
            return texts, y
        X, y = validate_data(self, X, y, reset=reset, dtype=np.float64,
                             **self._y_validation())
        return X, self._check_y(y)

    def _validate_predict(self, X: Any) -> Any:
        if self._texts_:
            return self._texts(X)
        return validate_data(self, X, reset=False, dtype=np.float64)

    def _y_validation(self) -> Dict[str, Any]:
        return {}

    def _check_y(self, y: np.ndarray) -> np.ndarray:
        return y

    def _adapt(self, client: Client, X: Any, y: np.ndarray) -> None:
        raise NotImplementedError

    def _fit(self, X: Any, y: Any, first: bool) -> "_AdaptdEstimator":
        X, y = self._validate_fit(X, y, reset=first)
        with self._client() as client:
            if first:
                self._start(y)
                self._recreate(client, X, y)
            else:
                self._check_continuation(y)
            self._adapt(client, X, y)
            self._publish(client)
        return self

    def _start(self, y: np.ndarray) -> None:
        pass

    def _check_continuation(self, y: np.ndarray) -> None:
        pass

    def fit(self, X: Any, y: Any) -> "_AdaptdEstimator":
        """Creates the store anew (deleting one of that name), adapts it with every row of X
        and y, and compiles it (faast)."""
        return self._fit(X, y, first=True)

    def _raw_predict(self, X: Any) -> Any:
        check_is_fitted(self, "store_version_")
        return self._validate_predict(X)

    def _served(self, X: Any, top_k: int) -> Any:
        """The store's PredictResponse for X; with a feedback window, its ids are kept in
        last_prediction_ids_ (an estimator without one keeps nothing, as scikit-learn expects
        of predict)."""
        X = self._raw_predict(X)
        with self._client() as client:
            response = client.predict_raw(self.tenant, self.store, X, top_k=top_k)
        if self.feedback_window:
            self.last_prediction_ids_ = prediction_ids(response)
        return response

    def _truths(self, y: Any) -> List[Any]:
        raise NotImplementedError

    def feedback(self, y: Any, ids: Optional[Sequence[str]] = None) -> "_AdaptdEstimator":
        """Teaches the store the true targets y of predictions it served: `ids` (default: those
        of the last predict or predict_with_ids), one per row of y. The store learns from what
        it remembered of each prediction, exactly as partial_fit from the same rows, and
        compiles (faast); X is not sent again. Resent ids apply once. NotFoundError when the
        store no longer remembers a prediction (past its window, or forgotten at a restart):
        nothing of that call is applied; send the rows with partial_fit instead."""
        check_is_fitted(self, "store_version_")
        _check_window(self)
        if ids is None:
            ids = getattr(self, "last_prediction_ids_", None)
            if ids is None:
                raise ValueError("feedback without ids needs a predict first")
        ids = list(ids)
        truths = self._truths(y)
        if len(truths) != len(ids):
            raise ValueError("y has %d rows but there are %d prediction ids" %
                             (len(truths), len(ids)))
        with self._client() as client:
            for start in range(0, len(ids), _FEEDBACK_ITEMS):
                client.feedback(self.tenant, self.store,
                                zip(ids[start:start + _FEEDBACK_ITEMS],
                                    truths[start:start + _FEEDBACK_ITEMS]))
            self._publish(client)
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags


class AdaptdClassifier(ClassifierMixin, _AdaptdEstimator):
    """A classifier backed by the label store tenant/store (see the module's doc).

    Fitted attributes: classes_ (sorted), n_features_in_ (and feature_names_in_ for a
    DataFrame), store_version_ (the store's version after the last fit or partial_fit).
    """

    def _output(self, y: np.ndarray) -> str:
        return "labels"

    def _check_y(self, y: np.ndarray) -> np.ndarray:
        check_classification_targets(y)
        return y

    def _start(self, y: np.ndarray) -> None:
        if getattr(self, "_partial_classes", None) is None:
            self.classes_ = np.unique(y)
        else:
            self.classes_ = self._partial_classes
            self._check_continuation(y)

    def _check_continuation(self, y: np.ndarray) -> None:
        unknown = np.setdiff1d(np.unique(y), self.classes_)
        if len(unknown):
            raise ValueError("y holds labels %s that are not in classes_ %s (given on the first "
                             "partial_fit)" % (list(unknown), list(self.classes_)))

    def _adapt(self, client: Client, X: Any, y: np.ndarray) -> None:
        client.adapt(self.tenant, self.store, X, labels=[str(v) for v in y])

    def fit(self, X: Any, y: Any) -> "AdaptdClassifier":
        self._partial_classes = None
        return self._fit(X, y, first=True)

    def partial_fit(self, X: Any, y: Any, classes: Any = None) -> "AdaptdClassifier":
        """Adapts the store with more rows. The first call of an unfitted estimator needs
        `classes` (every label y will hold) and creates the store anew, as fit does."""
        first = not hasattr(self, "store_version_")
        if first:
            if classes is None:
                raise ValueError("classes must be passed on the first call to partial_fit")
            self._partial_classes = np.unique(np.asarray(classes))
        elif classes is not None and not np.array_equal(np.unique(classes), self.classes_):
            raise ValueError("classes %s differ from classes_ %s given on the first "
                             "partial_fit" % (list(np.unique(classes)), list(self.classes_)))
        return self._fit(X, y, first=first)

    def _scores(self, X: Any) -> np.ndarray:
        """The store's scores, rows x classes_ (-inf for a class the store has not learned)."""
        check_is_fitted(self, "store_version_")
        names = [str(c) for c in self.classes_]
        response = self._served(X, top_k=len(names))
        from ._calls import score_matrix

        scores = score_matrix(names, response)
        scores[np.isnan(scores)] = -np.inf
        return scores

    def predict(self, X: Any) -> np.ndarray:
        """The best-scoring class of each row."""
        scores = self._scores(X)
        return self.classes_[np.argmax(scores, axis=1)]

    def predict_with_ids(self, X: Any) -> Tuple[np.ndarray, List[str]]:
        """predict's classes and each prediction's id for feedback (feedback_window > 0)."""
        _check_window(self)
        predicted = self.predict(X)
        return predicted, list(self.last_prediction_ids_)

    def _truths(self, y: Any) -> List[Any]:
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError("y must be one label per prediction, got shape %s" % (y.shape,))
        self._check_continuation(y)
        return [str(v) for v in y]

    def predict_proba(self, X: Any) -> np.ndarray:
        """Rows x classes_: the scores clipped at 0 and normalised (see the module's doc)."""
        scores = self._scores(X)
        proba = np.clip(scores, 0.0, None)
        totals = proba.sum(axis=1)
        flat = totals <= 0
        if np.any(flat):
            shifted = scores[flat] - np.max(scores[flat], axis=1, keepdims=True)
            soft = np.exp(shifted)
            proba[flat] = soft / soft.sum(axis=1, keepdims=True)
            totals = proba.sum(axis=1)
        return proba / totals[:, None]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = False
        return tags


class AdaptdRegressor(RegressorMixin, _AdaptdEstimator):
    """A regressor backed by the vector store tenant/store (output vector:M, M the columns of
    y; see the module's doc).

    Fitted attributes: n_outputs_, n_features_in_ (and feature_names_in_), store_version_.
    """

    def _y_validation(self) -> Dict[str, Any]:
        return {"multi_output": True, "y_numeric": True}

    def _output(self, y: np.ndarray) -> str:
        return "vector:%d" % (1 if y.ndim == 1 else y.shape[1])

    def _start(self, y: np.ndarray) -> None:
        self._y_1d_ = y.ndim == 1
        self.n_outputs_ = 1 if y.ndim == 1 else int(y.shape[1])

    def _check_continuation(self, y: np.ndarray) -> None:
        outputs = 1 if y.ndim == 1 else int(y.shape[1])
        if outputs != self.n_outputs_:
            raise ValueError("y has %d columns but the store was fitted with %d" %
                             (outputs, self.n_outputs_))

    def _adapt(self, client: Client, X: Any, y: np.ndarray) -> None:
        targets = np.asarray(y, dtype=np.float64).reshape(len(y), -1)
        client.adapt(self.tenant, self.store, X, targets=targets)

    def partial_fit(self, X: Any, y: Any) -> "AdaptdRegressor":
        """Adapts the store with more rows; the first call of an unfitted estimator creates
        the store anew, as fit does."""
        return self._fit(X, y, first=not hasattr(self, "store_version_"))

    def predict(self, X: Any) -> np.ndarray:
        out = np.asarray(predictions(self._served(X, top_k=1)), dtype=np.float64)
        return out.ravel() if self._y_1d_ else out

    def predict_with_ids(self, X: Any) -> Tuple[np.ndarray, List[str]]:
        """predict's rows and each prediction's id for feedback (feedback_window > 0)."""
        _check_window(self)
        predicted = self.predict(X)
        return predicted, list(self.last_prediction_ids_)

    def _truths(self, y: Any) -> List[Any]:
        y = np.asarray(y, dtype=np.float64)
        self._check_continuation(y)
        return [list(row) for row in y.reshape(len(y), -1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags
