"""`[training] frozen`: parameters of the language model that a run leaves as they start.

A run that continues a model (`[paths] init_from`) may train only part of it,
e.g. the top LSTM layer and the softmax while the token layer and the first
LSTM layer keep the start model's values:

    [training]
    frozen = ["bilm.token_encoder.*", "bilm.lstm.*.0"]

Each pattern is a case-sensitive `fnmatch` glob over the language model's
parameter names (`bilm.token_encoder.conv_weights.0`, `bilm.lstm.weight_ih.1`,
`head.weight`, ...; the LSTM's stacked tensors end in the layer's index).
Only the language model's: `[training.distill]`'s map starts anew in every
run and always trains. A pattern that matches nothing is an error listing
the parameters, so that a misspelt pattern never trains what it meant to
freeze (raised before the corpus is tokenized); so is a set that leaves a
part of the objective nothing to train.
Frozen parameters get `requires_grad=False`: no gradient, no optimizer
state, no share of `grad_clip`'s norm; they are saved with the model as ever.
"""
import fnmatch
from typing import Any, Dict, List, Mapping, Optional, Sequence

import torch
from confection import Config

from .building import parameter_names_of
from .settings import SettingsError

WORD_TABLE = "bilm.token_encoder.word_table"
"""The word table's pretrained rows (its learned specials are `bilm.token_encoder.word_specials`)."""


def parameter_names(model: torch.nn.Module) -> List[str]:
    """The names `[training] frozen` matches, in the model's order."""
    return [name for name, _ in model.named_parameters()]


def matched_names(names: Sequence[str], patterns: Sequence[str]) -> List[str]:
    """The names (in their order) that one of the patterns matches, case-sensitively on every system
    (`fnmatch.filter` and `fnmatch.fnmatch` fold case on Windows)."""
    return [name for name in names if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)]


def check_frozen_setting(config: Config, new_table: bool) -> None:
    """`[training] frozen` checked before the corpus is read: a pattern that matches no parameter
    this config's model can have, and, where a run starts with a word table (`new_table`: from
    [paths] word_table or the init_from model; not on a resume, whose checkpoint's setting stands),
    that table both trainable and frozen, are SettingsErrors (the run would otherwise tokenize its
    corpus first, minutes on a large one). What only the data decide (the adaptive softmax's
    clusters) `freeze_parameters` checks."""
    patterns = config["training"]["frozen"]
    if not patterns:
        return
    check_patterns_match(parameter_names_of(config), patterns)
    if new_table and config["model"].get("word_table_trainable") and matched_names([WORD_TABLE], patterns):
        raise SettingsError(
            f"[training] frozen freezes the word table ({WORD_TABLE}) that [model] word_table_trainable = true "
            "trains: set word_table_trainable = false, or leave the table out of frozen"
        )


def check_patterns_match(names: Sequence[str], patterns: Sequence[str]) -> None:
    """SettingsError for the patterns that match none of `names`, listing the names."""
    unmatched = [pattern for pattern in patterns if not matched_names(names, [pattern])]
    if unmatched:
        raise SettingsError(
            f"[training] frozen: {', '.join(repr(p) for p in unmatched)} matches no parameter of the language "
            f"model; its parameters are {grouped(names)}"
        )


def freeze_parameters(model: torch.nn.Module, patterns: Sequence[str], names: Optional[Sequence[str]] = None
                      ) -> List[str]:
    """Set `requires_grad=False` on every parameter of `model` whose name matches one of
    `patterns`; returns the frozen names. `names`: `parameter_names(model)`, where the caller
    has it. SettingsError, before anything is frozen, for a pattern that matches no parameter,
    and for patterns that leave nothing to train."""
    if not patterns:
        return []
    names = parameter_names(model) if names is None else names
    check_patterns_match(names, patterns)
    frozen = matched_names(names, patterns)
    parameters = dict(model.named_parameters())
    frozen_set = set(frozen)
    if all(name in frozen_set or not parameters[name].requires_grad for name in names):
        raise SettingsError(f"[training] frozen = {list(patterns)!r} freezes every parameter: nothing would train")
    for name in frozen:
        parameters[name].requires_grad_(False)
    return frozen


def check_objective_trains(model: torch.nn.Module, frozen: Sequence[str], training: Mapping[str, Any]) -> None:
    """SettingsError where the frozen parameters leave a part of the run's objective nothing to train:
    the softmax warm-up with the softmax frozen (its steps would have no gradient at all), and a
    distillation term whose layer's parameters are all frozen (the teacher would run for nothing:
    a similarity loss has no parameter of its own, and a regression's map would learn alone)."""
    if not frozen:
        return
    trainable = [name for name, parameter in model.named_parameters() if parameter.requires_grad]
    if training["softmax_warmup_steps"] and not any(name.startswith("head.") for name in trainable):
        raise SettingsError(
            f"[training] frozen freezes the softmax, and softmax_warmup_steps = {training['softmax_warmup_steps']} "
            "trains the softmax alone: those steps would train nothing. Set softmax_warmup_steps = 0, or leave "
            "head.* out of frozen"
        )
    distill = training["distill"]
    if distill["teacher"] and distill["weight"]:
        reads = "bilm.token_encoder." if distill["layer"] == "token" else "bilm."
        if not any(name.startswith(reads) for name in trainable):
            raise SettingsError(
                f"[training] frozen freezes every parameter under {reads}* that [training.distill] layer = "
                f"{distill['layer']!r} reads: the distillation term would train nothing of the biLM. Leave some "
                "of them out of frozen, or unset [training.distill] teacher"
            )


def changed_on_resume(names: Sequence[str], now: Sequence[str], before: Optional[Sequence[str]]) -> Optional[str]:
    """Why a resume cannot take `[training] frozen = now` where the checkpoint was trained with `before`
    (None: a checkpoint written before the setting, which froze nothing), or None where both freeze the
    same parameters. Compared by what they freeze, not how the patterns are written."""
    new, old = set(matched_names(names, now)), set(matched_names(names, before or []))
    if new == old:
        return None
    parts = []
    if new - old:
        parts.append(f"it would freeze {grouped([name for name in names if name in new - old])}")
    if old - new:
        parts.append(f"it would train {grouped([name for name in names if name in old - new])}")
    return (
        f"[training] frozen = {list(now)!r} differs from the checkpoint's {list(before or [])!r}: {'; '.join(parts)}, "
        "and the optimizer's state holds the parameters the run trained. Resume with the checkpoint's setting"
    )


def grouped(names: Sequence[str]) -> str:
    """The names with runs of trailing indices folded ("bilm.lstm.weight_ih.0..1"), for a message."""
    groups: Dict[str, List[int]] = {}
    for name in names:
        stem, _, last = name.rpartition(".")
        if stem and last.isdigit():
            groups.setdefault(stem, []).append(int(last))
        else:
            groups.setdefault(name, [])
    parts = []
    for key, indices in groups.items():
        if not indices:
            parts.append(key)
            continue
        numbers = sorted(indices)
        contiguous = numbers == list(range(numbers[0], numbers[-1] + 1))
        if len(numbers) > 1 and contiguous:
            parts.append(f"{key}.{numbers[0]}..{numbers[-1]}")
        else:
            parts.append(", ".join(f"{key}.{n}" for n in numbers))
    return ", ".join(parts)
