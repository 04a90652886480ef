"""`[paths] init_from` / `pretrain --init-from`: a new run from an existing native model's weights.

The run gets a fresh optimizer and schedule: training continues across runs
without keeping optimizer state. The model's architecture replaces the
config's `[model]`, so that the run's config.cfg describes what is trained;
a resume takes it again from the checkpoint's config (`resume_architecture`).
"""
from pathlib import Path
from typing import Any, Dict, List, Mapping, MutableMapping, Optional, Tuple

import torch
from confection import Config

from ..bilm.language_model import LanguageModel
from ..bilm.vocab import WordTableVocabulary
from ..io.errors import WeightsError
from ..io.native import WORD_TABLE_TENSOR, NativeModel, is_native, load_native, read_meta
from ..io import not_native_reason
from ..resources import default_model_path
from .settings import SettingsError

# [paths] init_from value that names the package's embedded biLM
EMBEDDED_MODEL = "embedded"
# [model] settings that stay the config's when a start model's architecture replaces the others
KEPT_MODEL_SETTINGS = ("dropout", "word_table_trainable")


def model_path(source: str) -> Path:
    """The directory a model name means: the embedded biLM's for "embedded", else the path itself."""
    return default_model_path() if source == EMBEDDED_MODEL else Path(source)


def start_model(config: Config, report: bool) -> Optional[NativeModel]:
    """The native model named by [paths] init_from (None for a run from scratch).

    Its architecture replaces the config's [model] settings in place (dropout
    and word_table_trainable, training settings, stay the config's), so that
    the run's config.cfg describes what is trained and a resume checks against
    it. Its token layer comes with it, word table included, so [paths]
    word_table must be unset. `report`: print what changed (the main process).
    """
    source = config["paths"].get("init_from")
    if not source:
        return None
    if config["paths"].get("word_table"):
        raise SettingsError(
            "[paths] word_table and init_from: the start model brings its own token layer (with its word table "
            "or without one); unset word_table"
        )
    path = model_path(source)
    if not is_native(path):
        raise SettingsError(f"[paths] init_from = {source!r}: {not_native_reason(path)}")
    try:
        start = load_native(path)
    except WeightsError as err:
        raise SettingsError(f"[paths] init_from: {err}") from None
    if start.bilm.config.characters != "bytes":
        # [model] has no place for a character dictionary: the run would build a byte-reading biLM and
        # fail to load the start model's weights into it ("size mismatch for token_encoder.char_embed")
        raise SettingsError(
            f"[paths] init_from = {source!r}: its biLM reads characters through a dictionary of its own "
            f"(characters = {start.bilm.config.characters!r}, an ELMoForManyLangs model), which pretraining "
            "cannot continue; start from a model that reads bytes, or from scratch"
        )
    changed = take_architecture(config["model"], start.bilm.config.to_dict())
    if changed and report:
        from wasabi import msg

        msg.info(f"[model] taken from {path}: " + "; ".join(changed))
    if start.head is not None and start.head.kind != config["softmax"]["kind"]:
        start.head = None  # another kind of softmax: trained afresh
    return start


def take_architecture(model_cfg: MutableMapping[str, Any], arch: Mapping[str, Any]) -> List[str]:
    """Set the [model] settings `model_cfg` to the architecture `arch` (a biLM config's or a
    saved [model] section's values), in place, except KEPT_MODEL_SETTINGS (training settings);
    keys `arch` lacks stay as they are. Returns the changes, as "key: before -> after" lines."""
    changed = []
    for key in model_cfg:
        if key in arch and key not in KEPT_MODEL_SETTINGS:
            before, after = model_cfg[key], arch[key]
            if key == "filters":
                before, after = [list(f) for f in before], [list(f) for f in after]
            if before != after:
                changed.append(f"{key}: {before!r} -> {after!r}")
            model_cfg[key] = after
    return changed


def resume_architecture(config: Config, saved: Optional[str], report: bool) -> None:
    """On --resume of a run that started from an init_from model: its [model] architecture,
    as the checkpoint's config recorded it, replaces the config's again, in place.

    `start_model` replaced the config's [model] with the start model's architecture when the
    run began, and the checkpoint saved that config; a resume does not load the start model,
    so without this the user's own [model] (e.g. the defaults, for a config without one) was
    compared with the saved one and the resume refused. Taken from the checkpoint, not the
    start model's directory, so a resume needs only the checkpoint (the start model may have
    moved). `saved`: the checkpoint's config text (None for old checkpoints: nothing to do);
    a run without init_from is left alone, so changing its [model] is still refused.
    `report`: print what changed (the main process)."""
    if not saved:
        return
    old = Config().from_str(saved, interpolate=False)
    if not old.get("paths", {}).get("init_from") or "model" not in old:
        return
    changed = take_architecture(config["model"], old["model"])
    if changed and report:
        from wasabi import msg

        msg.info("[model] taken from the checkpoint (the init_from model's architecture): " + "; ".join(changed))


def model_word_table(
    source: str, loaded: Optional[Tuple[str, NativeModel]] = None
) -> Optional[Tuple[WordTableVocabulary, torch.Tensor]]:
    """The word table (vocabulary, float32 vectors of its pretrained rows) of the native model
    `source` names ("embedded" or a directory), for [paths] softmax_init; None where `source`
    is not a native model directory. A native model without a table is a SettingsError.
    `loaded`: (its name, a model already in memory), e.g. the init_from model: used instead of
    reading the files again where both names mean the same directory."""
    path = model_path(source)
    if not is_native(path):
        return None
    if loaded is not None and model_path(loaded[0]).resolve() == path.resolve():
        model = loaded[1]
    else:
        try:
            model = load_native(path)
        except WeightsError as err:
            raise SettingsError(f"[paths] softmax_init: {err}") from None
    if model.bilm.word_table_vocab is None:
        raise SettingsError(
            f"[paths] softmax_init = {source!r}: that model has no word table to start the softmax from"
        )
    return model.bilm.word_table_vocab, model.bilm.state_dict()[WORD_TABLE_TENSOR].float()


def provenance(metadata: Mapping[str, Any]) -> Dict[str, Any]:
    """What a continued model records of the model it started from (its own chain included;
    `widened_from`: scripts/widen_bilm.py made it from a narrower one)."""
    keys = ("init_from", "tokens_seen", "training_seconds", "widened_from", "continued_from")
    return {k: metadata.get(k) for k in keys if k != "widened_from" or metadata.get(k)}


def start_provenance(config: Config) -> Optional[Dict[str, Any]]:
    """`provenance` of the [paths] init_from model, read from its elmo.json alone
    (a resumed run's saved models keep it too); None for a run from scratch."""
    source = config["paths"].get("init_from")
    if not source:
        return None
    path = model_path(source)
    try:
        return provenance(read_meta(path).get("metadata") or {})
    except WeightsError:
        return None  # the start model has moved since: the checkpoint holds its weights anyway


def continue_from(lm: LanguageModel, start: NativeModel, counts: Mapping[str, int]) -> Dict[str, Any]:
    """Load the start model's weights into the fresh language model; returns its provenance.

    A start model without a softmax (the shipped one) gets a new one whose
    bias is the log unigram frequency of each word (`counts`: the training
    text's): the first steps then refine the biLM instead of undoing it while
    the softmax catches up.
    """
    with torch.no_grad():
        lm.bilm.load_state_dict(start.bilm.state_dict())
        if start.head is not None:
            lm.head.load_state_dict(start.head.state_dict())
        elif lm.head.kind != "adaptive":
            total = sum(counts.values())
            words = lm.vocab.words
            freq = torch.tensor([counts.get(w, 0) + 1.0 for w in words], dtype=torch.float64)
            lm.head.bias.copy_(torch.log(freq / (total + len(words))))
    lm.bilm.clear_cache()
    return provenance(start.metadata)


__all__ = [
    "EMBEDDED_MODEL", "KEPT_MODEL_SETTINGS", "continue_from", "model_path", "model_word_table", "provenance",
    "resume_architecture", "start_model", "start_provenance", "take_architecture",
]
