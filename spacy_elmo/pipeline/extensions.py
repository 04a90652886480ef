"""Doc, Span and Token extension attributes set by the `elmo` component.

    doc._.elmo          (L+1, len(doc), width) numpy: every layer (float32,
                        or float16 with the component's store_dtype)
    span._.elmo         (L+1, len(span), width): a view of it
    token._.elmo        (L+1, width): a view of it
    *._.elmo_vector     the mix of the layers under the component's own weights
                        (uniform unless configured), float32; Doc and Span
                        average their tokens' vectors, whitespace tokens left out

A doc keeps either every layer or, for users who keep many docs, only the
mixed vectors (component setting `store = "mix"`): then `*._.elmo` are None
and `*._.elmo_vector` read the stored mix. What is kept lives in
`doc.user_data`, so `Doc.to_bytes` and `DocBin(store_user_data=True)` keep
it; a component with `store_layers = false` keeps it outside user_data
instead, and serialization drops it. The name of the component that wrote
them is kept beside them (`layers_source`), so that a listener can tell its
own upstream's layers from those of a second `elmo` component that ran later.

The layers hold one row per token of the doc as the component saw it. A doc
retokenized afterwards (tokens merged or split, e.g. by `merge_entities`)
no longer matches them, and reading them is a `RetokenizedError` rather than
vectors silently shifted onto other tokens: the tokens' character offsets are
kept beside the rows and compared where rows are read (a merge and a split
in one `retokenize()` block leave the length as it was).
"""
import weakref
from typing import Any, Dict, List, Optional, Tuple, cast

import numpy
import numpy.typing
from spacy.attrs import IDX, LENGTH
from spacy.tokens import Doc, Span, Token
from thinc.util import to_numpy

from ..bilm.errors import SpacyElmoError

LAYERS_KEY = ("._.", "elmo", None, None)
MIX_KEY = ("._.", "elmo_mix", None, None)
MIXED_KEY = ("._.", "elmo_mixed", None, None)
"""user_data key of the (len(doc), width) mixed vectors of a doc that keeps only the mix."""
SOURCE_KEY = ("._.", "elmo_source", None, None)
"""user_data key of the name of the component that wrote the doc's layers or mix."""
OFFSETS_KEY = ("._.", "elmo_offsets", None, None)
"""user_data key of the (start, length) in characters of the tokens the doc's layers or mix are for."""
# what components with store_layers = false keep: alive as long as their doc
_TRANSIENT: "weakref.WeakKeyDictionary[Doc, numpy.ndarray]" = weakref.WeakKeyDictionary()
_TRANSIENT_MIXED: "weakref.WeakKeyDictionary[Doc, numpy.ndarray]" = weakref.WeakKeyDictionary()
_TRANSIENT_OFFSETS: "weakref.WeakKeyDictionary[Doc, numpy.ndarray]" = weakref.WeakKeyDictionary()


def _user_data(doc: Doc) -> Dict[Any, Any]:
    """doc.user_data, typed as what it is: keys are spaCy's extension tuples too."""
    return cast(Dict[Any, Any], doc.user_data)


class RetokenizedError(SpacyElmoError, ValueError):
    """The doc's ELMo rows no longer match its tokens: it was retokenized after the `elmo` component ran."""


def _offsets(tokens: Any) -> numpy.ndarray:
    """(n, 2) character start and length of each token of a Doc or Span."""
    return tokens.to_array([IDX, LENGTH]).reshape(-1, 2)


def _retokenized(doc: Doc, what: str) -> RetokenizedError:
    source = layers_source(doc) or "elmo"
    return RetokenizedError(
        f"doc._.elmo holds vectors for {what}: it was retokenized (tokens merged or split, e.g. by "
        f"merge_entities) after the '{source}' component ran. Put the components that merge or split "
        f"tokens before '{source}' in the pipeline, or run '{source}' on the doc again."
    )


def _matching(
    doc: Doc, rows: Optional[numpy.ndarray], axis: int, start: int = 0, end: Optional[int] = None
) -> Optional[numpy.ndarray]:
    """`rows` (one per token along `axis`), checked against the doc's tokens start..end (None: all).

    The length is checked first; then the tokens' character offsets against those kept with the
    rows (docs from before they were kept have none: the length alone). Reading one token's row
    compares that token only, so a loop over a long doc's tokens stays linear."""
    if rows is None:
        return None
    if rows.shape[axis] != len(doc):
        raise _retokenized(doc, f"{rows.shape[axis]} tokens but the doc has {len(doc)}")
    kept = _user_data(doc).get(OFFSETS_KEY)
    if kept is None:
        kept = _TRANSIENT_OFFSETS.get(doc)
    if kept is not None:
        kept = numpy.asarray(kept)
        now = _offsets(doc if end is None else doc[start:end])
        if kept.shape != (len(doc), 2) or not numpy.array_equal(kept[start:end], now):
            raise _retokenized(doc, "tokens that are no longer the doc's (the same number, other boundaries)")
    return rows


def get_doc_layers(doc: Doc, start: int = 0, end: Optional[int] = None) -> Optional[numpy.ndarray]:
    """Every layer of the doc, (L+1, len(doc), width); None when the doc keeps none (or only the mix).

    Raises `RetokenizedError` when the doc's tokens (start..end of them; None: all) no longer
    match them."""
    layers = _user_data(doc).get(LAYERS_KEY)
    if layers is None:
        layers = _TRANSIENT.get(doc)
    return _matching(doc, layers, 1, start, end)


def layers_source(doc: Doc) -> Optional[str]:
    """The name of the component that set the doc's layers or mix (None: unknown, or nothing set)."""
    return _user_data(doc).get(SOURCE_KEY)


def _set_source(doc: Doc, source: Optional[str]) -> None:
    if source is not None:
        _user_data(doc)[SOURCE_KEY] = str(source)


def _clear(doc: Doc) -> None:
    for key in (LAYERS_KEY, MIXED_KEY, SOURCE_KEY, OFFSETS_KEY):
        _user_data(doc).pop(key, None)
    for transient in (_TRANSIENT, _TRANSIENT_MIXED, _TRANSIENT_OFFSETS):
        transient.pop(doc, None)


def _keep(doc: Doc, key: Tuple, transient: "weakref.WeakKeyDictionary[Doc, numpy.ndarray]",
          rows: numpy.ndarray, store: bool, source: Optional[str]) -> None:
    """Keep `rows` and the offsets of the tokens they are for: in user_data, or (store=False) beside it."""
    _set_source(doc, source)
    if store:
        _user_data(doc)[key] = rows
        _user_data(doc)[OFFSETS_KEY] = _offsets(doc)
    else:
        transient[doc] = rows
        _TRANSIENT_OFFSETS[doc] = _offsets(doc)


def _as_array(value: Any, what: str) -> numpy.ndarray:
    """`value` as a numpy array: a numpy array as it is, another array (with `ndim` and `shape`: cupy's,
    a torch tensor) copied to the host, a nested list converted to float32; anything else is a
    ValueError. The doc keeps numpy arrays only: `DocBin` and `Doc.to_bytes` serialize them, and the
    vectors are computed with numpy (a cupy array kept as it was failed in both)."""
    if not isinstance(value, numpy.ndarray) and hasattr(value, "ndim") and hasattr(value, "shape"):
        if hasattr(value, "detach"):  # a torch tensor, maybe on a GPU, maybe in a type numpy lacks
            value = value.detach().cpu()
            if str(value.dtype) == "torch.bfloat16":
                value = value.float()
        value = to_numpy(value)
    if isinstance(value, numpy.ndarray):
        if value.dtype.kind == "f":
            return value
        if value.dtype.kind in "biu":  # integers and booleans as the float32 they stand for
            return value.astype(numpy.float32)
        raise ValueError(f"{what} must be an array of floats, got one of dtype {value.dtype}")
    try:
        return numpy.asarray(value, dtype=numpy.float32)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{what} must be a numpy array of floats, got {type(value).__name__} ({err})") from None


def set_doc_layers(
    doc: Doc, layers: Optional[numpy.ndarray], store: bool = True, source: Optional[str] = None
) -> None:
    """Attach layers (replacing whatever layers or mix the doc kept); with store=False they are not serialized.

    `source`: the name of the component that computed them. Wrong input is a
    ValueError that leaves what the doc kept as it was."""
    if layers is not None:
        layers = _as_array(layers, "doc._.elmo")
        if layers.ndim != 3 or layers.shape[1] != len(doc):
            raise ValueError(f"doc._.elmo must have shape (L+1, {len(doc)}, width), got {layers.shape}")
    _clear(doc)
    if layers is not None:
        _keep(doc, LAYERS_KEY, _TRANSIENT, layers, store, source)


def set_doc_mixed(
    doc: Doc, vectors: Optional[numpy.ndarray], store: bool = True, source: Optional[str] = None
) -> None:
    """Keep only the mixed vectors, (len(doc), width), in place of the layers (which are removed).

    `*._.elmo_vector` then read them as they are (the mix and gamma already
    applied); with store=False they are not serialized. `source`: the name of
    the component that computed them. Wrong input is a ValueError that leaves
    what the doc kept as it was.
    """
    if vectors is not None:
        vectors = _as_array(vectors, "mixed ELMo vectors")
        if vectors.ndim != 2 or vectors.shape[0] != len(doc):
            raise ValueError(f"mixed ELMo vectors must have shape ({len(doc)}, width), got {vectors.shape}")
    _clear(doc)
    if vectors is not None:
        _keep(doc, MIXED_KEY, _TRANSIENT_MIXED, vectors, store, source)


def get_doc_mixed(doc: Doc, start: int = 0, end: Optional[int] = None) -> Optional[numpy.ndarray]:
    """The doc's kept mixed vectors (len(doc), width), or None when it keeps layers or nothing.

    Checked against the doc's tokens start..end (None: all), as `get_doc_layers`."""
    vectors = _user_data(doc).get(MIXED_KEY)
    if vectors is None:
        vectors = _TRANSIENT_MIXED.get(doc)
    return _matching(doc, vectors, 0, start, end)


def has_elmo(doc: Doc) -> bool:
    """Whether the doc keeps ELMo layers or mixed vectors, so that *._.elmo_vector are not None."""
    return get_doc_layers(doc, 0, 0) is not None or get_doc_mixed(doc, 0, 0) is not None


def set_doc_mix(doc: Doc, weights: numpy.ndarray, gamma: float) -> None:
    _user_data(doc)[MIX_KEY] = [float(w) for w in weights] + [float(gamma)]


def get_doc_mix(doc: Doc, n_layers: int) -> Tuple[numpy.ndarray, float]:
    stored = _user_data(doc).get(MIX_KEY)
    if stored is None or len(stored) != n_layers + 1:
        return numpy.full(n_layers, 1.0 / n_layers, dtype=numpy.float32), 1.0
    return numpy.asarray(stored[:-1], dtype=numpy.float32), float(stored[-1])


def mix_layers(layers: "numpy.typing.ArrayLike", weights: "numpy.typing.ArrayLike", gamma: float) -> numpy.ndarray:
    """gamma * sum_j weights[j] * layers[j]: float32, the shape of `layers` without its first axis.
    `weights` and `layers` may be any array-like (a list of weights too, as the docs show)."""
    weights = numpy.asarray(weights, dtype=numpy.float32)
    layers = numpy.asarray(layers)
    if weights.shape != (layers.shape[0],):
        raise ValueError(f"mix_layers: {weights.shape[0] if weights.ndim else 0} weights for {layers.shape[0]} layers")
    mixed = numpy.tensordot(weights, layers.astype(numpy.float32, copy=False), axes=(0, 0))
    return (gamma * mixed).astype(numpy.float32, copy=False)


def mixed_vectors(doc: Doc) -> Optional[numpy.ndarray]:
    """(len(doc), width) mixed vectors, float32: the kept mix, else computed from the layers; None without either.

    A float32 kept mix is returned as it is (no copy).
    """
    vectors = get_doc_mixed(doc)
    if vectors is not None:
        return vectors.astype(numpy.float32, copy=False)
    layers = get_doc_layers(doc)
    if layers is None:
        return None
    weights, gamma = get_doc_mix(doc, layers.shape[0])
    return mix_layers(layers, weights, gamma)


def _mean_vector(doc: Doc, start: int, end: int) -> Optional[numpy.ndarray]:
    """The mean mixed vector of tokens start..end, whitespace left out (zeros where none is left).

    Only those tokens' rows are mixed: a sentence's vector costs its own length, not the doc's."""
    vectors = get_doc_mixed(doc, start, end)
    layers = get_doc_layers(doc, start, end) if vectors is None else None
    if vectors is None and layers is None:
        return None
    rows = [i for i in range(start, end) if not doc[i].is_space]
    if vectors is not None:
        mixed = vectors[rows].astype(numpy.float32, copy=False)
    else:
        assert layers is not None
        weights, gamma = get_doc_mix(doc, layers.shape[0])
        mixed = mix_layers(layers[:, rows], weights, gamma)
    if not rows:
        return numpy.zeros(mixed.shape[1], dtype=numpy.float32)
    return mixed.mean(axis=0, dtype=numpy.float32)


def _token_layers(token: Token) -> Optional[numpy.ndarray]:
    layers = get_doc_layers(token.doc, token.i, token.i + 1)
    return None if layers is None else layers[:, token.i]


def _span_layers(span: Span) -> Optional[numpy.ndarray]:
    layers = get_doc_layers(span.doc, span.start, span.end)
    return None if layers is None else layers[:, span.start : span.end]


def _token_vector(token: Token) -> Optional[numpy.ndarray]:
    vectors = get_doc_mixed(token.doc, token.i, token.i + 1)
    if vectors is not None:
        return vectors[token.i].astype(numpy.float32, copy=False)  # a float32 mix: a view of it
    layers = get_doc_layers(token.doc, token.i, token.i + 1)
    if layers is None:
        return None
    weights, gamma = get_doc_mix(token.doc, layers.shape[0])
    return mix_layers(layers[:, token.i], weights, gamma)


class ExtensionConflict(SpacyElmoError, ValueError):
    """Another package registered an extension attribute of the same name."""


def _extensions() -> List[Tuple[type, str, Dict[str, Any]]]:
    return [
        (Doc, "elmo", {"getter": get_doc_layers, "setter": set_doc_layers}),
        (Doc, "elmo_vector", {"getter": _doc_vector, "setter": _ReadOnly("doc._.elmo_vector")}),
        (Span, "elmo", {"getter": _span_layers, "setter": _ReadOnly("span._.elmo")}),
        (Span, "elmo_vector", {"getter": _span_vector, "setter": _ReadOnly("span._.elmo_vector")}),
        (Token, "elmo", {"getter": _token_layers, "setter": _ReadOnly("token._.elmo")}),
        (Token, "elmo_vector", {"getter": _token_vector, "setter": _ReadOnly("token._.elmo_vector")}),
    ]


class _ReadOnly:
    """A setter that refuses: without one, spaCy keeps an assigned value in `doc.user_data`, which the
    getter never reads, so the assignment did nothing but travel with the doc.

    A class, not a closure: `nlp.pipe(n_process=N)` pickles every registered extension for its
    workers where they are spawned (macOS, Windows), and a closure does not pickle."""

    def __init__(self, attribute: str) -> None:
        self.attribute = attribute

    def __call__(self, obj: Any, value: Any) -> None:
        raise AttributeError(
            f"{self.attribute} is read-only: it is computed from doc._.elmo, which can be assigned (the layers "
            "of every token, (L+1, len(doc), width))"
        )


def _owner(cls: type, name: str) -> Optional[str]:
    """The module whose functions implement an existing extension (None: a plain default)."""
    default, method, getter, setter = cls.get_extension(name)  # type: ignore[attr-defined]
    for func in (getter, method, setter):
        if func is not None:
            return getattr(func, "__module__", None) or repr(func)
    return None


def register_extensions(strict: bool = True) -> List[str]:
    """Declare the six extension attributes, never replacing another package's.

    An attribute of the same name that this module did not define is left
    alone; with `strict` (as the component does when it is created) that is
    an `ExtensionConflict` naming it and its owner, else (on import) it is
    returned in the list of conflicts. Ours are (re)declared, so a reloaded
    module replaces its own older functions.
    """
    conflicts = []
    for cls, name, funcs in _extensions():
        if cls.has_extension(name):  # type: ignore[attr-defined]
            owner = _owner(cls, name)
            if owner != __name__:
                conflicts.append(f"{cls.__name__}._.{name} (registered by {owner or 'a default value'})")
                continue
            cls.remove_extension(name)  # type: ignore[attr-defined]  # ours: replaced by the current functions
        cls.set_extension(name, **funcs)  # type: ignore[attr-defined]
    if conflicts and strict:
        raise ExtensionConflict(
            "spacy-elmo cannot register its extension attributes because another package already "
            f"uses these names: {', '.join(conflicts)}. Remove them first (e.g. Doc.remove_extension('elmo')) "
            "or do not use both packages in one process."
        )
    return conflicts


def _doc_vector(doc: Doc) -> Optional[numpy.ndarray]:
    return _mean_vector(doc, 0, len(doc))


def _span_vector(span: Span) -> Optional[numpy.ndarray]:
    return _mean_vector(span.doc, span.start, span.end)


def _tensor_rows(doc: Doc) -> bool:
    """Whether spaCy's own vector API reads this doc's `doc.tensor`: the vocab has no static vectors
    and the tensor has a row per token (`set_doc_tensor = true` put the mixed vectors there)."""
    tensor = doc.tensor
    return doc.vocab.vectors.size == 0 and getattr(tensor, "size", 0) != 0 and tensor.shape[0] == len(doc)


def _fallback_vector(doc: Doc, start: int, end: int) -> numpy.ndarray:
    """spaCy's own vector for tokens start..end of a doc that keeps no ELMo (cleared, or kept with
    store_layers = false and lost by `doc.copy()` or `span.as_doc()`): the mean of their `doc.tensor`
    rows where spaCy reads those (no static vectors; with `set_doc_tensor` they are the mixed ELMo
    vectors, which such copies keep), else of their static vectors; zeros of that width where there
    are no tokens or no vectors. The hooks fall back to it so that `.vector` stays what it would be
    without them, and a numpy array (spaCy's `vector_norm` and similarity need one; on a GPU spaCy's
    tensor and vectors may be cupy arrays)."""
    vocab = doc.vocab
    if _tensor_rows(doc):
        if end <= start:
            return numpy.zeros((doc.tensor.shape[1],), dtype=numpy.float32)
        return to_numpy(doc.tensor[start:end]).astype(numpy.float32, copy=False).mean(axis=0)
    if end <= start or vocab.vectors.size == 0:
        return numpy.zeros((vocab.vectors_length,), dtype=numpy.float32)
    return sum(to_numpy(vocab.get_vector(doc[i].orth)) for i in range(start, end)) / (end - start)


def _hook_vector(vector: Optional[numpy.ndarray], doc: Doc, start: int, end: int) -> numpy.ndarray:
    return vector if vector is not None else _fallback_vector(doc, start, end)


def _fallback_has_vector(doc: Doc, start: int, end: int) -> bool:
    """spaCy's own `.has_vector` for tokens start..end of a doc that keeps no ELMo: its tensor rows
    (as `_fallback_vector`), else whether any of them has a static vector."""
    if _tensor_rows(doc):
        return True
    vocab = doc.vocab
    return vocab.vectors.size != 0 and any(vocab.has_vector(doc[i].orth) for i in range(start, end))


def _has_vector(doc: Doc, start: int, end: int) -> bool:
    return has_elmo(doc) or _fallback_has_vector(doc, start, end)


def set_vector_hooks(doc: Doc) -> None:
    """Make .vector, .has_vector and .similarity of the doc, its spans and tokens use ELMo.

    Where the doc keeps no ELMo, they are what spaCy's own would be: the `doc.tensor` rows where the
    vocab has no static vectors and the tensor has a row per token (`set_doc_tensor = true`), else the
    static vectors (`.vector` is never None)."""
    doc.user_hooks["vector"] = lambda d: _hook_vector(d._.elmo_vector, d, 0, len(d))
    doc.user_hooks["has_vector"] = lambda d: _has_vector(d, 0, len(d))
    doc.user_hooks["similarity"] = lambda a, b: _cosine(a.vector, _other_vector(b))
    doc.user_span_hooks["vector"] = lambda s: _hook_vector(s._.elmo_vector, s.doc, s.start, s.end)
    doc.user_span_hooks["has_vector"] = lambda s: _has_vector(s.doc, s.start, s.end)
    doc.user_span_hooks["similarity"] = lambda a, b: _cosine(a.vector, _other_vector(b))
    doc.user_token_hooks["vector"] = lambda t: _hook_vector(t._.elmo_vector, t.doc, t.i, t.i + 1)
    doc.user_token_hooks["has_vector"] = lambda t: _has_vector(t.doc, t.i, t.i + 1)
    doc.user_token_hooks["similarity"] = lambda a, b: _cosine(a.vector, _other_vector(b))


def _other_vector(obj: Any) -> Optional[numpy.ndarray]:
    vector = getattr(obj._, "elmo_vector", None) if hasattr(obj, "_") else None
    return vector if vector is not None else getattr(obj, "vector", None)


def _cosine(a: Optional[numpy.ndarray], b: Optional[numpy.ndarray]) -> float:
    if a is None or b is None or a.shape != b.shape:
        return 0.0
    norm = float(numpy.linalg.norm(a) * numpy.linalg.norm(b))
    return float(numpy.dot(a, b) / norm) if norm > 0 else 0.0


register_extensions(strict=False)

__all__ = [
    "register_extensions",
    "set_doc_layers",
    "get_doc_layers",
    "set_doc_mixed",
    "get_doc_mixed",
    "has_elmo",
    "mix_layers",
    "mixed_vectors",
    "set_doc_mix",
    "get_doc_mix",
    "set_vector_hooks",
    "layers_source",
    "LAYERS_KEY",
    "MIXED_KEY",
    "SOURCE_KEY",
    "OFFSETS_KEY",
    "ExtensionConflict",
    "RetokenizedError",
]
