"""ELMoForManyLangs (HIT-SCIR) models: their directory layout, read into this package's biLM.

A model directory holds:

* `config.json`: `{"config_path": ...}` naming the architecture file (a path
  that may be absolute on the machine that trained it: it is looked up as
  given, then by its file name in the directory, then among the two
  architectures the reference package ships);
* `char.dic` and `word.dic`: one `entry<TAB>id` per line (a line with one
  field is the ideographic space U+3000, which `strip()` removed);
* `token_embedder.pkl` and `encoder.pkl`: torch state dicts, read only through
  torch's safe loader (`weights_only=True`), so a crafted pickle runs nothing.

Its token layer is [word embedding; highway(char CNN over its character
dictionary)] -> projection: this package's character CNN with a word table
(`BiLMConfig.word_table_*`, `characters = "dictionary"`), whose vocabularies
reproduce the reference's lookups (`create_one_batch`: tokens cut to
max_characters_per_token - 2 characters, begin- and end-of-word ids swapped,
<bos> / <eos> as one-character words). Its encoder is AllenNLP's projected
LSTM (gates i, f, g, o; no forget-gate offset; a highway gate g where
TensorFlow's has 1 - g), converted on load.

The reference encoder is stateful across batches (and shuffles them); this
package starts every sentence from zero state, which equals the reference
with its state reset before each sentence.
"""
import json
import pickle
import re
import zipfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

import torch

from ..bilm.config import BiLMConfig, OptionsError
from ..bilm.model import BiLM
from ..bilm.token_encoder import CharCNNEncoder
from ..bilm.char_ids import CharDictionary
from ..bilm.vocab import WordTableVocabulary
from .errors import DamagedFileError, WeightsError
from .gate_order import permute_gates
from .options import integer_setting

PathLike = Union[str, Path]

LAYOUT_FILES = ("config.json", "char.dic", "word.dic", "token_embedder.pkl", "encoder.pkl")

# the reference's gate order (i, f, g, o) -> this package's (i, f, o, g)
MANYLANGS_TO_INTERNAL = (0, 1, 3, 2)

# the architectures elmoformanylangs ships (configs/), which published models name
# without including them; both files hold the same settings
_SHIPPED_ARCHITECTURE = {
    "encoder": {"name": "elmo", "projection_dim": 512, "cell_clip": 3, "proj_clip": 3, "dim": 4096, "n_layers": 2},
    "token_embedder": {
        "name": "cnn",
        "activation": "relu",
        "filters": [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]],
        "n_highway": 2,
        "word_dim": 100,
        "char_dim": 50,
        "max_characters_per_token": 50,
    },
    "classifier": {"name": "sampled_softmax", "n_samples": 8192},
    "dropout": 0.1,
}
SHIPPED_ARCHITECTURES = {
    "cnn_50_100_512_4096_sample.json": _SHIPPED_ARCHITECTURE,
    "cnn_0_100_512_4096_sample.json": _SHIPPED_ARCHITECTURE,
}


def is_manylangs(directory: PathLike) -> bool:
    """Whether a directory looks like an ELMoForManyLangs model (its config and pickles)."""
    directory = Path(directory)
    return (directory / "config.json").is_file() and (directory / "encoder.pkl").is_file()


def read_architecture(directory: PathLike) -> Dict[str, Any]:
    """The architecture dict that `config.json`'s `config_path` names."""
    directory = Path(directory)
    path = directory / "config.json"
    top = _read_json(path)
    if not isinstance(top, dict) or not isinstance(top.get("config_path"), str):
        raise WeightsError(f"{path}: expected an object with a 'config_path' (an ELMoForManyLangs model)")
    named = Path(top["config_path"])
    for candidate in (directory / named, directory / named.name):
        if candidate.is_file():
            return _check_architecture(_read_json(candidate), candidate)
    if named.name in SHIPPED_ARCHITECTURES:
        return SHIPPED_ARCHITECTURES[named.name]
    raise WeightsError(
        f"{path}: the architecture file {top['config_path']!r} is neither in {directory} nor one of the "
        f"reference package's own ({sorted(SHIPPED_ARCHITECTURES)}); copy it into the model directory"
    )


def _check_architecture(arch: Any, path: Path) -> Dict[str, Any]:
    """The architecture's outline (objects where objects belong), so that reading it cannot crash."""
    if not isinstance(arch, dict):
        raise WeightsError(f"{path}: expected a JSON object (an ELMoForManyLangs architecture), "
                           f"got {type(arch).__name__}")
    for section in ("token_embedder", "encoder"):
        if section in arch and not isinstance(arch[section], dict):
            raise WeightsError(f"{path}: '{section}' must be an object, got {type(arch[section]).__name__}")
    return arch


def _word_dim(arch: Dict[str, Any], source: Path) -> int:
    value = arch.get("token_embedder", {}).get("word_dim", 0) or 0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value or value < 0:
        raise WeightsError(f"{source}: 'word_dim' must be a whole number >= 0, got {value!r}")
    return int(value)


def read_dictionary(path: PathLike) -> List[str]:
    """The entries of a `char.dic` / `word.dic`, in id order (as the reference parses them)."""
    path = Path(path)
    ids: Dict[str, int] = {}
    number = 0
    try:
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                fields = line.strip().split("\t")
                if len(fields) == 1:
                    fields.insert(0, "\u3000")
                if len(fields) != 2 or not re.fullmatch(r"-?[0-9]+", fields[1]):
                    raise WeightsError(f"{path}:{number}: expected 'entry<TAB>id', got {line.rstrip()!r}")
                ids[fields[0]] = int(fields[1])  # a repeated entry keeps its last id, as a dict does
    except OSError as err:
        raise WeightsError(f"{path}: cannot read ({err.strerror or err})") from None
    except UnicodeDecodeError as err:
        raise WeightsError(f"{path}: not UTF-8 text ({err})") from None
    if not ids:
        raise WeightsError(f"{path}: empty dictionary")
    size = max(ids.values()) + 1
    if min(ids.values()) < 0:
        raise WeightsError(f"{path}: negative ids")
    if size > number:  # ids are 0..n-1 over the file's n lines; a stray huge id must not allocate its range
        raise WeightsError(f"{path}: ids run to {size - 1} but the file has only {number} lines")
    # ids no entry keeps (overwritten duplicates) get names no token can have
    entries = [f"\x00unused {i}" for i in range(size)]
    for entry, i in ids.items():
        entries[i] = entry
    return entries


def read_state(path: PathLike) -> Dict[str, torch.Tensor]:
    """A torch state dict through the safe loader: tensors only, no code."""
    path = Path(path)
    if not path.is_file():
        raise DamagedFileError(f"{path}: missing")
    try:
        state = torch.load(str(path), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:  # the safe unpickler refused what the file holds, or a cut header
        if _cut_inside_a_pickle(path):
            raise DamagedFileError(
                f"{path}: cut short inside its pickled header ({_first_line(err)}): restore it or fetch the model "
                "again"
            ) from None
        raise WeightsError(
            f"{path}: not a plain torch state dict (read with weights_only=True, which runs no code): "
            f"{_first_line(err)}"
        ) from None
    except Exception as err:  # cut short or damaged: EOFError, OSError, a zip or a stream reader's RuntimeError
        raise DamagedFileError(
            f"{path}: unreadable or cut short as a torch file ({type(err).__name__}: {_first_line(err)}): "
            "restore it or fetch the model again"
        ) from None
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise WeightsError(f"{path}: expected a dict of tensors")
    return state


def _cut_inside_a_pickle(path: Path, pickles: int = 5) -> bool:
    """Whether the file ends inside one of its first `pickles` pickle streams (torch's legacy format, the one
    ELMoForManyLangs ships, starts with five: magic number, protocol, system info, the state, its storage
    keys). Read with pickletools, which runs nothing; a file that ends between two streams is not cut."""
    import pickletools

    size = path.stat().st_size
    with open(path, "rb") as handle:
        if zipfile.is_zipfile(handle):  # the zip format: torch names a cut zip itself
            return False
        handle.seek(0)
        for _ in range(pickles):
            if handle.tell() >= size:
                return False
            try:
                for _op in pickletools.genops(handle):
                    pass
            except Exception:  # ValueError: the stream ended before its STOP; other errors: garbage
                return True
    return False


def _first_line(err: BaseException) -> str:
    return str(err).splitlines()[0] if str(err) else ""


def manylangs_config(arch: Dict[str, Any], n_chars: int, n_words: int, source: str = "config") -> BiLMConfig:
    """This package's config for an ELMoForManyLangs architecture and dictionary sizes."""
    try:
        encoder, embedder = arch["encoder"], arch["token_embedder"]
        if str(encoder.get("name", "")).lower() != "elmo" or str(embedder.get("name", "")).lower() != "cnn":
            raise WeightsError(
                f"{source}: encoder {encoder.get('name')!r} with token embedder {embedder.get('name')!r}: "
                "only the 'elmo' encoder over the 'cnn' token embedder (every published model) is supported"
            )

        def whole(section: Dict[str, Any], key: str, default: Optional[int] = None) -> int:
            """A count or size as a whole number (int() took 1.7 for 1 and "2" for 2: another model)."""
            if default is not None and key not in section:
                return default
            where = "encoder" if section is encoder else "token_embedder"
            return integer_setting(section, key, f"{source}: {where}")

        if whole(embedder, "char_dim", 0) <= 0:
            raise WeightsError(f"{source}: a token embedder without characters (char_dim 0) is not supported")
        word_dim = whole(embedder, "word_dim", 0)
        return BiLMConfig(
            lstm_dim=whole(encoder, "dim"),
            projection_dim=whole(encoder, "projection_dim"),
            n_layers=whole(encoder, "n_layers"),
            cell_clip=float(encoder["cell_clip"]) if encoder.get("cell_clip") else None,
            proj_clip=float(encoder["proj_clip"]) if encoder.get("proj_clip") else None,
            use_skip_connections=True,
            filters=tuple(tuple(f) for f in embedder["filters"]),
            n_highway=whole(embedder, "n_highway"),
            char_embedding_dim=whole(embedder, "char_dim"),
            n_characters=n_chars,
            characters="dictionary",
            max_characters_per_token=whole(embedder, "max_characters_per_token"),
            activation=str(embedder.get("activation", "relu")),
            word_table_rows=n_words if word_dim > 0 else 0,
            word_table_dim=word_dim,
        )
    except (KeyError, TypeError, ValueError, OptionsError) as err:
        if isinstance(err, WeightsError):
            raise
        problem = f"{type(err).__name__}: {err}"
        raise WeightsError(f"{source}: not a valid ELMoForManyLangs architecture ({problem})") from None


def load_manylangs(directory: PathLike) -> BiLM:
    """An ELMoForManyLangs model directory as a biLM (inference mode)."""
    directory = Path(directory)
    missing = [name for name in LAYOUT_FILES if not (directory / name).is_file()]
    arch = read_architecture(directory)
    word_dim = _word_dim(arch, directory / "config.json")
    if word_dim <= 0 and "word.dic" in missing:
        missing.remove("word.dic")
    if missing:
        raise WeightsError(f"{directory}: an ELMoForManyLangs model needs {list(LAYOUT_FILES)}; missing {missing}")
    chars = read_dictionary(directory / "char.dic")
    words = read_dictionary(directory / "word.dic") if word_dim > 0 else []
    config = manylangs_config(arch, len(chars), len(words), source=str(directory / "config.json"))
    max_chars = config.max_characters_per_token
    try:
        char_dictionary = CharDictionary(chars, swap_word_ends=True)
        table_vocab = (
            WordTableVocabulary(
                words, specials=[], bos="<bos>", eos="<eos>", unknown="<oov>", truncate_chars=max_chars - 2
            )
            if word_dim > 0
            else None
        )
    except ValueError as err:
        raise WeightsError(f"{directory}: {err}") from None
    embedder = read_state(directory / "token_embedder.pkl")
    encoder = read_state(directory / "encoder.pkl")
    undeclared = _undeclared_layers(config, embedder, encoder)
    if undeclared:  # config.json of another model: the layers it leaves out would be dropped silently
        raise WeightsError(
            f"{directory}: the weights hold layers config.json does not declare ({', '.join(undeclared[:4])}"
            f"{', ...' if len(undeclared) > 4 else ''}): its n_layers, n_highway or filters belong to another "
            "model than token_embedder.pkl and encoder.pkl"
        )
    # the weights checked against config.json's sizes first, on a model of the meta device (no memory):
    # building first, an edited dim (10**5) beside a file of one byte took gigabytes, or failed in torch
    for device in ("meta", "cpu"):
        try:
            with torch.device(device):
                bilm = BiLM(config, word_table_vocab=table_vocab, char_dictionary=char_dictionary)
        except (RuntimeError, MemoryError) as err:  # the files' own sizes, past this machine's memory
            message = " ".join(str(err).split())[:200]
            raise WeightsError(f"{directory}: cannot build the model in memory ({message})") from None
        with torch.no_grad():
            _assign_token_layer(bilm, config, embedder, directory / "token_embedder.pkl")
            _assign_encoder(bilm, config, encoder, directory / "encoder.pkl")
    bilm.eval()
    return bilm


_NUMBERED = (  # (pattern of a numbered layer's tensors, the config's count of those layers)
    (re.compile(r"highways\._layers\.(\d+)\."), lambda config: config.n_highway),
    (re.compile(r"convolutions\.(\d+)\."), lambda config: len(config.filters)),
    (re.compile(r"(?:forward|backward)_layer_(\d+)\."), lambda config: config.n_layers),
)


def _undeclared_layers(config: BiLMConfig, *states: Dict[str, torch.Tensor]) -> List[str]:
    """The tensors of numbered layers (highway, convolution, LSTM) past the config's counts."""
    found = []
    for state in states:
        for name in state:
            for pattern, count in _NUMBERED:
                match = pattern.match(name)
                if match and int(match.group(1)) >= count(config):
                    found.append(name)
    return sorted(found)


def _take(state: Dict[str, torch.Tensor], name: str, shape: Tuple[int, ...], path: Path) -> torch.Tensor:
    if name not in state:
        raise WeightsError(f"{path}: tensor {name!r} missing (has {sorted(state)[:6]}...)")
    if not state[name].is_floating_point():
        raise WeightsError(f"{path}: tensor {name!r} is stored as {state[name].dtype}, not as floating point")
    tensor = state[name].float()
    if tuple(tensor.shape) != shape:
        raise WeightsError(f"{path}: tensor {name!r} has shape {tuple(tensor.shape)}, the config implies {shape}")
    if not torch.isfinite(tensor).all():
        raise WeightsError(f"{path}: tensor {name!r} contains NaN or infinite values")
    return tensor


def _assign_token_layer(bilm: BiLM, config: BiLMConfig, state: Dict[str, torch.Tensor], path: Path) -> None:
    enc = bilm.token_encoder
    assert isinstance(enc, CharCNNEncoder)
    F, P, W = config.n_filters, config.projection_dim, config.word_table_dim
    if not enc.has_projection:
        raise WeightsError(f"{path}: a model without words whose filters sum to projection_dim is not supported")
    enc.char_embed.zero_()
    enc.char_embed[1:] = _take(
        state, "char_emb_layer.embedding.weight", (config.n_characters, config.char_embedding_dim), path
    )
    for i, (width, n) in enumerate(config.filters):
        weight = _take(state, f"convolutions.{i}.weight", (n, config.char_embedding_dim, width), path)
        enc.conv_weights[i].copy_(weight.permute(2, 1, 0))
        enc.conv_biases[i].copy_(_take(state, f"convolutions.{i}.bias", (n,), path))
    for k in range(config.n_highway):
        weight = _take(state, f"highways._layers.{k}.weight", (2 * F, F), path)
        bias = _take(state, f"highways._layers.{k}.bias", (2 * F,), path)
        # reference: y = g x + (1 - g) f(A x); here y = c f(A x) + (1 - c) x, so c = 1 - g = sigmoid(-gate)
        enc.highways[k][:, :F] = weight[:F].t()
        enc.highways[k][:, F:] = -weight[F:].t()
        enc.highway_biases[k][:F] = bias[:F]
        enc.highway_biases[k][F:] = -bias[F:]
    projection = _take(state, "projection.weight", (P, W + F), path)
    # reference input [word; chars], here [chars; word]
    enc.proj_weight.copy_(torch.cat([projection[:, W:], projection[:, :W]], dim=1).t())
    enc.proj_bias.copy_(_take(state, "projection.bias", (P,), path))
    if W > 0:
        enc.word_table.copy_(_take(state, "word_emb_layer.embedding.weight", (config.word_table_rows, W), path))


def _assign_encoder(bilm: BiLM, config: BiLMConfig, state: Dict[str, torch.Tensor], path: Path) -> None:
    H, P = config.lstm_dim, config.projection_dim
    lstm = bilm.lstm
    for direction, name in enumerate(("forward", "backward")):
        for layer in range(config.n_layers):
            prefix = f"{name}_layer_{layer}"
            w_in = _take(state, f"{prefix}.input_linearity.weight", (4 * H, P), path)
            w_state = _take(state, f"{prefix}.state_linearity.weight", (4 * H, P), path)
            bias = permute_gates(_take(state, f"{prefix}.state_linearity.bias", (4 * H,), path), MANYLANGS_TO_INTERNAL)
            bias[H : 2 * H] -= 1.0  # this package's LSTM adds TensorFlow's +1 to the forget gate
            lstm.weight_ih[layer][direction] = permute_gates(w_in.t(), MANYLANGS_TO_INTERNAL)
            lstm.weight_hh[layer][direction] = permute_gates(w_state.t(), MANYLANGS_TO_INTERNAL)
            lstm.bias[layer][direction, 0] = bias
            lstm.weight_proj[layer][direction] = _take(state, f"{prefix}.state_projection.weight", (P, H), path).t()


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise WeightsError(f"{path}: cannot read ({err.strerror or err})") from None
    except ValueError as err:
        raise WeightsError(f"{path}: not valid JSON ({err})") from None


__all__ = ["is_manylangs", "load_manylangs", "read_architecture", "read_dictionary", "read_state", "manylangs_config"]
