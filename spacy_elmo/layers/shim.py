"""The torch side of `spacy-elmo.ElmoBiLM.v1`: a thinc PyTorchShim around the biLM.

The shim holds a `BatchedBiLM`: the biLM plus a forward over several
length-sorted batches of segments, so that thinc's shim sees one forward and
one backward per update (its gradient scaler must unscale each gradient
once). It may hold nothing yet: the weights then come on first use or from a
loader at `initialize`. It serializes the biLM in the native format (config,
vocabulary, safetensors weights), so a saved pipeline rebuilds the biLM
without the original files.
"""
from typing import List, Optional, Sequence

import srsly
import torch
from thinc.api import PyTorchShim
from thinc.util import get_torch_default_device

from ..bilm.config import BiLMConfig
from ..bilm.model import BiLM


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
            serialize_model=_serialize,
            deserialize_model=_deserialize,
        )

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

    def finish_update(self, optimizer) -> None:
        if self._model is not None:
            super().finish_update(optimizer)


def _serialize(module: Optional[BatchedBiLM]) -> bytes:
    from safetensors.torch import save

    if module is None:
        return srsly.msgpack_dumps({"empty": True})
    bilm = module.bilm
    state = {k: v.detach().cpu().contiguous() for k, v in bilm.state_dict().items()}
    payload = {
        "config": bilm.config.to_dict(),
        "boundary_strings": bilm.boundary_strings,
        "vocab": bilm.input_vocab.words if bilm.input_vocab is not None else None,
        "word_table_vocab": bilm.word_table_vocab.to_dict() if bilm.word_table_vocab is not None else None,
        "char_dictionary": bilm.char_dictionary.to_dict() if bilm.char_dictionary is not None else None,
        "state": save(state),
    }
    return srsly.msgpack_dumps(payload)


def _deserialize(old: Optional[BatchedBiLM], data: bytes, device) -> Optional[BatchedBiLM]:
    from safetensors.torch import load

    from ..bilm.token_vocab import CharDictionary, WordTableVocabulary
    from ..bilm.vocab import Vocabulary

    payload = srsly.msgpack_loads(data)
    if payload.get("empty"):
        return old
    config = BiLMConfig.from_dict(payload["config"], source="serialized elmo component")
    vocab = Vocabulary(payload["vocab"]) if payload.get("vocab") else None
    words, chars = payload.get("word_table_vocab"), payload.get("char_dictionary")
    bilm = BiLM(
        config,
        vocab=vocab,
        boundary_strings=payload.get("boundary_strings", False),
        word_table_vocab=WordTableVocabulary.from_dict(words) if words else None,
        char_dictionary=CharDictionary.from_dict(chars) if chars else None,
    )
    bilm.load_state_dict(load(payload["state"]))
    bilm.to(device)
    bilm.eval()
    return BatchedBiLM(bilm)


__all__ = ["ElmoShim", "BatchedBiLM"]
