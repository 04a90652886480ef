"""Where the package's embedded English biLM lives."""
from pathlib import Path

from .io.errors import WeightsError

DEFAULT_MODEL_DIR = Path(__file__).parent / "models" / "en_elmo_2x512_128"


def default_model_path() -> Path:
    """The embedded English model's directory (native format)."""
    if not (DEFAULT_MODEL_DIR / "elmo.json").is_file():
        raise WeightsError(
            f"{DEFAULT_MODEL_DIR}: the embedded English biLM is missing from this installation; "
            "pass weights=PATH (a directory in the published or native format)"
        )
    return DEFAULT_MODEL_DIR
