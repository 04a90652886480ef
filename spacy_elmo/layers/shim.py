"""The torch side of `spacy-elmo.ElmoBiLM.v1`: a thinc PyTorchShim around the biLM.

The shim holds a `BatchedBiLM`: the biLM plus a forward over several
length-sorted batches of segments, so that thinc's shim sees one forward and
one backward per update (its gradient scaler must unscale each gradient
once). It may hold nothing yet: a loader fills it (`loaders.py`), or
deserialization does.

Its bytes are the native format's (`spacy_elmo.io.save_native_bytes`: the
files of a native model directory, versioned and checksummed), so a saved
pipeline rebuilds the biLM without the original files and a damaged one is a
`WeightsError` that says so. An empty shim serializes as no bytes. The
legacy form, a msgpack map of the same contents with no version or
checksum, is read too (`_read_legacy`), so that pipelines saved in it load.
"""
import contextlib
import copy
from typing import Any, Dict, Iterator, List, Optional, Sequence

import srsly
import torch
from thinc.api import PyTorchShim, torch2xp, xp2torch
from thinc.shims import Shim
from thinc.util import get_torch_default_device

from ..bilm.config import BiLMConfig
from ..bilm.model import BiLM
from ..io import WeightsError, is_native_bytes, load_native_bytes, save_native_bytes

SOURCE = "serialized elmo component"


class BatchedBiLM(torch.nn.Module):
    """The biLM, run over several batches of segments in one call."""

    def __init__(self, bilm: BiLM) -> None:
        super().__init__()
        self.bilm = bilm

    def forward(self, batches: Sequence[Sequence[Sequence[str]]]) -> List[List[torch.Tensor]]:
        """Per batch, per segment: its layers (L+1, n_tokens, width), float32, with autograd."""
        return [[layers.float() for layers in self.bilm(batch).unpadded()] for batch in batches]


class ElmoShim(PyTorchShim):
    """A PyTorchShim whose model may not be loaded yet (then it holds None)."""

    def __init__(self, bilm: Optional[BiLM] = None, mixed_precision: bool = False) -> None:
        super().__init__(
            BatchedBiLM(bilm) if bilm is not None else None,
            mixed_precision=mixed_precision,
            serialize_model=serialize_bilm,
            deserialize_model=deserialize_bilm,
        )

    def copy(self) -> "ElmoShim":
        """A deep copy with an id of its own (thinc's `Shim.copy` keeps the original's).

        thinc's optimizer keys a shim's parameters, their moments and their
        averages by (shim id, parameter name): a copy that kept the id (the
        biLM `replace_listeners` gives a component) would share them with the
        `elmo` component's biLM when both train.
        """
        copied = copy.deepcopy(self)
        with Shim.global_id_lock:
            Shim.global_id += 1
            copied.id = Shim.global_id
        return copied

    @property
    def bilm(self) -> Optional[BiLM]:
        return self._model.bilm if self._model is not None else None

    def set_bilm(self, bilm: BiLM) -> None:
        bilm.to(self.device)
        self._model = BatchedBiLM(bilm)

    @property
    def device(self) -> torch.device:
        if self._model is None:
            return get_torch_default_device()
        return super().device

    def to_device(self, device_type: str, device_id: int) -> None:
        if self._model is not None:
            super().to_device(device_type, device_id)

    # optimizer: a thinc Optimizer, typed Any because its arguments are typed FloatsXd and torch2xp gives ArrayXd
    def finish_update(self, optimizer: Any) -> None:
        """thinc's update, in place: each parameter keeps its storage.

        PyTorchShim.finish_update assigns `param.data = xp2torch(updated)`,
        a tensor made from the numpy view of the previous one, whose base is
        that previous tensor: every update lengthened a chain of tensor and
        array objects per parameter that was never freed (28 objects a step
        for the embedded biLM). The optimizer updates the view in place, so
        there is nothing to assign; an optimizer that returns a new array
        has it copied in.

        Those writes do not move the parameters' version counters (they must
        not: spaCy calls this between a batch's forward pass and its
        listeners' backward pass, whose saved tensors autograd checks), so
        the `WeightsKey` of the weights stays the same. Caches of values
        computed from them are therefore told here, through
        `BiLM.clear_cache()`: the biLM's own are cleared, and its
        `cache_generation` moves on, which the frozen biLM's doc cache
        (layers/bilm_model.py) checks.
        """
        if self._model is None:
            return
        changed = False
        for name, param in self._model.named_parameters():
            if param.grad is None:
                continue
            if not self._grad_scaler.found_inf:  # an overflowed gradient skips the update
                updated, _ = optimizer((self.id, name), torch2xp(param.data), torch2xp(param.grad))
                updated = xp2torch(updated, device=param.device)
                if updated.data_ptr() != param.data_ptr():
                    with torch.no_grad():
                        param.copy_(updated)
                changed = True
            param.grad = None  # as torch's zero_grad(set_to_none=True): a step without a gradient skips it
        self._grad_scaler.update()
        if changed:
            clear_cache = getattr(getattr(self._model, "bilm", None), "clear_cache", None)
            if clear_cache is not None:  # a BiLM (tests wrap plain torch modules too)
                clear_cache()

    @contextlib.contextmanager
    def use_params(self, params: Dict[Any, Any]) -> Iterator[None]:
        """Run with the biLM's parameters taken from `params` (spaCy passes the optimizer's averages).

        thinc's optimizer keys a PyTorch parameter as (shim id, name), but
        PyTorchShim.use_params looks for "pytorch_{id}_{name}" strings, so a
        fine-tuned biLM was evaluated and saved (model-best) with its last
        weights beside task layers that use their averages. Both key forms
        are read here; the parameters are restored afterwards, in place.
        """
        named = dict(self._model.named_parameters()) if self._model is not None else {}
        prefix = f"pytorch_{self.id}_"
        chosen = {}
        for key, value in params.items():
            if isinstance(key, tuple) and len(key) == 2 and key[0] == self.id and key[1] in named:
                chosen[key[1]] = value
            elif isinstance(key, str) and key.startswith(prefix) and key[len(prefix):] in named:
                chosen[key[len(prefix):]] = value
        if not chosen:
            yield
            return
        backup = {name: named[name].detach().clone() for name in chosen}
        with torch.no_grad():
            for name, value in chosen.items():
                named[name].copy_(xp2torch(value, device=named[name].device))
        try:
            yield
        finally:
            with torch.no_grad():
                for name, value in backup.items():
                    named[name].copy_(value)

    def from_bytes(self, bytes_data: bytes) -> "ElmoShim":
        """PyTorchShim.from_bytes, with thinc's envelope (a msgpack map around the biLM's bytes)
        checked: a cut or garbled one is a WeightsError, not msgpack's exception."""
        device = get_torch_default_device()
        try:
            msg = srsly.msgpack_loads(bytes_data)
            cfg, state = msg["config"], msg["state"]
        except Exception as err:  # msgpack raises several types for cut or garbled input
            raise WeightsError(f"{SOURCE}: the bytes are truncated or corrupted ({type(err).__name__})") from None
        self.cfg = cfg
        self._model = self._deserialize_model(self._model, state, device)
        self._grad_scaler.to_(device)
        return self


def serialize_bilm(module: Optional[BatchedBiLM]) -> bytes:
    """The biLM in the native format's bytes; an empty shim: no bytes."""
    if module is None:
        return b""
    return save_native_bytes(module.bilm)


def deserialize_bilm(old: Optional[BatchedBiLM], data: bytes, device: Any) -> Optional[BatchedBiLM]:
    """The biLM that `serialize_bilm` (or the legacy format) wrote, on `device`; no bytes: keep `old`."""
    if not data:
        return old
    bilm = _read_legacy(data) if not is_native_bytes(data) else load_native_bytes(data, False, SOURCE).bilm
    if bilm is None:
        return old  # the legacy format's empty marker
    bilm.to(device)
    bilm.eval()
    return BatchedBiLM(bilm)


def _read_legacy(data: bytes) -> Optional[BiLM]:
    """The biLM of a legacy msgpack map (None for its empty marker)."""
    from safetensors import SafetensorError
    from safetensors.torch import load

    from ..bilm.char_ids import CharDictionary
    from ..bilm.vocab import Vocabulary, WordTableVocabulary

    try:
        payload: Dict[str, Any] = srsly.msgpack_loads(data)
    except Exception as err:  # msgpack raises several types for cut or garbled input
        raise WeightsError(f"{SOURCE}: neither the native format nor a readable legacy payload ({err})") from None
    if not isinstance(payload, dict) or not ({"empty"} <= set(payload) or {"config", "state"} <= set(payload)):
        raise WeightsError(f"{SOURCE}: neither the native format nor a legacy payload (no config and state)")
    if payload.get("empty"):
        return None
    try:
        config = BiLMConfig.from_dict(payload["config"], source=SOURCE)
        words, chars = payload.get("word_table_vocab"), payload.get("char_dictionary")
        bilm = BiLM(
            config,
            vocab=Vocabulary(payload["vocab"]) if payload.get("vocab") else None,
            boundary_strings=payload.get("boundary_strings", False),
            word_table_vocab=WordTableVocabulary.from_dict(words) if words else None,
            char_dictionary=CharDictionary.from_dict(chars) if chars else None,
        )
        bilm.load_state_dict(load(payload["state"]))
    except (SafetensorError, ValueError, KeyError, TypeError, RuntimeError) as err:
        raise WeightsError(f"{SOURCE}: a legacy payload that does not load ({err})") from None
    return bilm


__all__ = ["ElmoShim", "BatchedBiLM", "serialize_bilm", "deserialize_bilm"]
