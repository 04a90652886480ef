"""token_vocab.json: the token layer's vocabularies inside a native model directory.

One JSON object with the word table's vocabulary and the character
dictionary (`bilm/vocab.py`, `bilm/char_ids.py`), each null where the model has none.
"""
import json
from pathlib import Path
from typing import Optional, Tuple, Union

from ..bilm.char_ids import CharDictionary
from ..bilm.vocab import WordTableVocabulary

VOCABULARIES_FILE = "token_vocab.json"


def save_token_vocabularies(
    path: Union[str, Path], words: Optional[WordTableVocabulary], chars: Optional[CharDictionary]
) -> None:
    data = {
        "word_table": words.to_dict() if words is not None else None,
        "characters": chars.to_dict() if chars is not None else None,
    }
    Path(path).write_text(json.dumps(data, ensure_ascii=False) + "\n", encoding="utf-8")


def load_token_vocabularies(path: Union[str, Path]) -> Tuple[Optional[WordTableVocabulary], Optional[CharDictionary]]:
    """(word table vocabulary or None, character dictionary or None); ValueError if malformed."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        words, chars = data.get("word_table"), data.get("characters")
        return (
            WordTableVocabulary.from_dict(words) if words else None,
            CharDictionary.from_dict(chars) if chars else None,
        )
    except (OSError, ValueError, TypeError, AttributeError) as err:
        raise ValueError(f"{path}: not a valid token vocabulary file ({err})") from None


__all__ = ["VOCABULARIES_FILE", "load_token_vocabularies", "save_token_vocabularies"]
