"""`ConfigValue`: a layer setting that the config decides, not the saved model.

thinc saves every node's attrs with its weights and, when a pipeline loads,
puts the saved values back over the ones the config just built. For a
setting such as a listener's dropout that means an override at load
(`spacy.load(path, config={...})`) or an edited config.cfg is silently
ignored while `nlp.config` shows it. An attr holding a `ConfigValue` is
saved for inspection but, on load, keeps the value its config gave it (the
same rule as the `elmo` component's own settings); a pipeline saved with a
plain value in that attr loads the same way.
"""
from typing import Any

import srsly
from thinc.api import Model
from thinc.model import deserialize_attr, serialize_attr


class ConfigValue:
    """A setting built from the config; reads as its value (`bool()`, `float()`, `==`)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __bool__(self) -> bool:
        return bool(self.value)

    def __float__(self) -> float:
        return float(self.value)

    def __eq__(self, other: object) -> bool:
        return self.value == (other.value if isinstance(other, ConfigValue) else other)

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"ConfigValue({self.value!r})"


_REQUIRED = object()


def setting(model: Model, name: str, default: Any = _REQUIRED) -> Any:
    """The plain value of attr `name`, whether it holds a ConfigValue or a value set directly
    (`default` where the model has no such attr; without one that is a KeyError)."""
    value = model.attrs[name] if default is _REQUIRED else model.attrs.get(name, default)
    return value.value if isinstance(value, ConfigValue) else value


def decided_by_config(model: Model, names: Any) -> None:
    """Make the attrs `names` of `model` settings the config decides (`ConfigValue`), where it has them."""
    for name in names:
        if name in model.attrs:
            model.attrs[name] = ConfigValue(setting(model, name))


@serialize_attr.register(ConfigValue)
def _save(_: ConfigValue, value: ConfigValue, name: str, model: Model) -> bytes:
    return srsly.msgpack_dumps(value.value)


@deserialize_attr.register(ConfigValue)
def _load(built: ConfigValue, saved: bytes, name: str, model: Model) -> ConfigValue:
    return built  # the config's value (with any override) wins over the saved one


__all__ = ["ConfigValue", "decided_by_config", "setting"]
