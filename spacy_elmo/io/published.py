"""The published ELMo format: `options.json` + `weights.hdf5` (bilm-tf / AllenNLP layout).

Dataset names, shapes and semantics (see ../shared/fixtures/README.md):

    char_embed                                  (261, char_dim)   row k = char id k+1
    CNN/W_cnn_i, CNN/b_cnn_i                    (1, width, char_dim, n), (n,)
    CNN_high_k/{W,b}_{transform,carry}          (F, F), (F,)      carry gate multiplies transform
    CNN_proj/{W,b}_proj                         (F, P), (P,)      only if F != P
    embedding                                   (V, P)            word inputs only
    RNN_d/RNN/MultiRNNCell/Cell{l}/LSTMCell/W_0 (in + P, 4H)      gates i, j, f, o; d=0 fwd, 1 bwd
                                         .../B  (4H,)
                                       .../W_P_0 (H, P)
"""
import fnmatch
import json
import re
from pathlib import Path
from typing import Any, Dict, Iterator, Optional, Tuple, Union

import numpy
import torch

from ..bilm.config import BiLMConfig, OptionsError
from ..bilm.model import BiLM
from ..bilm.token_encoder import CharCNNEncoder, WordEncoder
from ..bilm.vocab import Vocabulary
from .atomic import staged_files
from .errors import DamagedFileError, WeightsError
from .gate_order import INTERNAL_TO_TF, TF_TO_INTERNAL, permute_gates
from .layouts import PUBLISHED_VOCAB, check_can_write
from .options import config_from_options, config_to_options

PathLike = Union[str, Path]


def read_options(path: PathLike) -> BiLMConfig:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise WeightsError(f"{path}: cannot read options file ({err.strerror or err})") from None
    except UnicodeDecodeError as err:
        raise WeightsError(f"{path}: not a UTF-8 text file ({err.reason} at byte {err.start})") from None
    try:
        options = json.loads(text)
    except ValueError as err:
        raise WeightsError(f"{path}: not valid JSON ({err})") from None
    try:
        return config_from_options(options, source=str(path))
    except OptionsError as err:
        raise WeightsError(str(err)) from None


def expected_datasets(config: BiLMConfig) -> Iterator[Tuple[str, Tuple[int, ...]]]:
    """Every dataset name the options imply, with its shape."""
    P, H = config.projection_dim, config.lstm_dim
    if config.use_character_inputs:
        dim = config.char_embedding_dim
        yield "char_embed", (261, dim)
        for i, (width, n) in enumerate(config.filters):
            yield f"CNN/W_cnn_{i}", (1, width, dim, n)
            yield f"CNN/b_cnn_{i}", (n,)
        F = config.n_filters
        for k in range(config.n_highway):
            for kind in ("transform", "carry"):
                yield f"CNN_high_{k}/W_{kind}", (F, F)
                yield f"CNN_high_{k}/b_{kind}", (F,)
        if F != P:
            yield "CNN_proj/W_proj", (F, P)
            yield "CNN_proj/b_proj", (P,)
    else:
        yield "embedding", (config.n_tokens_vocab, P)
    for direction in (0, 1):
        for layer in range(config.n_layers):
            prefix = _cell(direction, layer)
            yield f"{prefix}/W_0", (2 * P, 4 * H)
            yield f"{prefix}/B", (4 * H,)
            yield f"{prefix}/W_P_0", (H, P)


def _cell(direction: int, layer: int) -> str:
    return f"RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/LSTMCell"


_FAMILIES = [
    (re.compile(r"CNN/[Wb]_cnn_(\d+)$"), "filters", lambda c: len(c.filters)),
    (re.compile(r"CNN_high_(\d+)/"), "n_highway", lambda c: c.n_highway),
    (re.compile(r"RNN_\d+/RNN/MultiRNNCell/Cell(\d+)/"), "n_layers", lambda c: c.n_layers),
]


def read_weights(
    path: PathLike, config: BiLMConfig, options_path: Optional[PathLike] = None
) -> Dict[str, numpy.ndarray]:
    """Every dataset of `config` from an HDF5 file, checked against the options."""
    import h5py

    path = Path(path)
    source = options_path or "the options"
    arrays: Dict[str, numpy.ndarray] = {}
    try:  # an unreadable file is a PermissionError, not the damage h5py's OSError would be taken for
        path.open("rb").close()
    except PermissionError:
        raise
    except OSError:
        pass  # missing or otherwise unopenable: h5py's error below says so
    try:
        with h5py.File(path, "r") as f:
            for name, shape in expected_datasets(config):
                if name not in f or not isinstance(f[name], h5py.Dataset):
                    raise WeightsError(f"{path}: missing dataset '{name}' required by {source}")
                dataset = f[name]
                if tuple(dataset.shape) != shape:
                    raise WeightsError(
                        f"{path}: dataset '{name}' has shape {tuple(dataset.shape)} but {source} "
                        f"implies {shape}"
                    )
                _check_stored(dataset, name, path)
                arrays[name] = numpy.asarray(dataset[...], dtype=numpy.float32)
            present = []
            f.visititems(lambda n, o: present.append(n) if isinstance(o, h5py.Dataset) else None)
    except WeightsError:
        raise
    except (OSError, KeyError, ValueError, RuntimeError, TypeError) as err:
        raise DamagedFileError(f"{path}: not a readable HDF5 weight file ({err})") from None
    for name in present:
        for pattern, setting, limit in _FAMILIES:
            match = pattern.match(name)
            if match and int(match.group(1)) >= limit(config):
                raise WeightsError(
                    f"{path}: dataset '{name}' does not fit {source} ({setting} = "
                    f"{getattr(config, setting) if setting != 'filters' else len(config.filters)}): "
                    "the weights and the options belong to different models"
                )
    for name, array in arrays.items():
        if not numpy.isfinite(array).all():
            raise WeightsError(f"{path}: dataset '{name}' contains NaN or infinite values")
    return arrays


# a compressed dataset may declare this many times the bytes it stores (float weights compress ~1.1x)
MAX_COMPRESSION = 100


def _check_stored(dataset: Any, name: str, path: Path) -> None:
    """A dataset must store the bytes its shape declares (through filters: within `MAX_COMPRESSION` of them)
    before it is read: a file of 29 kB declaring datasets it never wrote was read into gigabytes of
    zeros, in an options.json's sizes."""
    declared = int(dataset.size) * dataset.dtype.itemsize
    stored = int(dataset.id.get_storage_size())
    filtered = dataset.id.get_create_plist().get_nfilters() > 0  # compression, scale-offset, n-bit, plugins
    if not filtered and stored < declared:
        raise DamagedFileError(
            f"{path}: dataset '{name}' declares {declared:,} bytes but stores {stored:,} (never written, or cut "
            "short); restore the file or export the model again"
        )
    if filtered and declared and not stored:
        raise DamagedFileError(
            f"{path}: dataset '{name}' declares {declared:,} bytes but stores none (never written); restore "
            "the file or export the model again"
        )
    chunks = dataset.chunks
    get_num_chunks = getattr(dataset.id, "get_num_chunks", None)  # h5py 3 with HDF5 1.10.5 or later
    if chunks and declared and get_num_chunks is not None:
        needed = 1
        for size, chunk in zip(dataset.shape, chunks):
            needed *= -(-size // chunk)
        if get_num_chunks() < needed:  # a chunk never written reads as the fill value (zeros)
            raise DamagedFileError(
                f"{path}: dataset '{name}' stores {get_num_chunks()} of its {needed} chunks (never written, or "
                "cut short); restore the file or export the model again"
            )
    if filtered and declared > MAX_COMPRESSION * max(stored, 1) + 2**20:
        raise DamagedFileError(
            f"{path}: dataset '{name}' declares {declared:,} bytes from {stored:,} compressed, more than "
            f"{MAX_COMPRESSION}x: not model weights"
        )


def load_published(
    options_path: PathLike, weights_path: PathLike, vocab_path: Optional[PathLike] = None
) -> BiLM:
    """A BiLM holding the published weights; it reproduces the reference numbers."""
    config = read_options(options_path)
    arrays = read_weights(weights_path, config, options_path)
    vocab = None
    if not config.use_character_inputs:
        if vocab_path is None or not Path(vocab_path).exists():
            raise WeightsError(
                f"{options_path}: a word-input model needs its vocabulary file (vocab.txt, or one *vocab*.txt, "
                "beside the weights)"
            )
        try:
            vocab = Vocabulary.from_file(vocab_path)
        except (OSError, ValueError) as err:  # UnicodeDecodeError is a ValueError
            raise WeightsError(f"{vocab_path}: not a usable vocabulary ({err})") from None
        if len(vocab) != config.n_tokens_vocab:
            raise WeightsError(
                f"{vocab_path}: {len(vocab)} words but {options_path} says n_tokens_vocab = {config.n_tokens_vocab}"
            )
    model = BiLM(config, vocab=vocab)
    with torch.no_grad():
        _assign(model, config, arrays)
    model.eval()
    return model


def _assign(model: BiLM, config: BiLMConfig, arrays: Dict[str, numpy.ndarray]) -> None:
    t = torch.from_numpy
    enc = model.token_encoder
    if isinstance(enc, CharCNNEncoder):  # config.use_character_inputs
        enc.char_embed.zero_()
        enc.char_embed[1:] = t(arrays["char_embed"])
        for i in range(len(config.filters)):
            enc.conv_weights[i].copy_(t(arrays[f"CNN/W_cnn_{i}"][0]))
            enc.conv_biases[i].copy_(t(arrays[f"CNN/b_cnn_{i}"]))
        F = config.n_filters
        for k in range(config.n_highway):
            enc.highways[k][:, :F] = t(arrays[f"CNN_high_{k}/W_transform"])
            enc.highways[k][:, F:] = t(arrays[f"CNN_high_{k}/W_carry"])
            enc.highway_biases[k][:F] = t(arrays[f"CNN_high_{k}/b_transform"])
            enc.highway_biases[k][F:] = t(arrays[f"CNN_high_{k}/b_carry"])
        if enc.has_projection:
            enc.proj_weight.copy_(t(arrays["CNN_proj/W_proj"]))
            enc.proj_bias.copy_(t(arrays["CNN_proj/b_proj"]))
    elif isinstance(enc, WordEncoder):
        enc.embedding.copy_(t(arrays["embedding"]))
    P = config.projection_dim
    lstm = model.lstm
    for direction in (0, 1):
        for layer in range(config.n_layers):
            prefix = _cell(direction, layer)
            w0 = permute_gates(t(arrays[f"{prefix}/W_0"]), TF_TO_INTERNAL)
            lstm.weight_ih[layer][direction] = w0[:P]
            lstm.weight_hh[layer][direction] = w0[P:]
            lstm.bias[layer][direction, 0] = permute_gates(t(arrays[f"{prefix}/B"]), TF_TO_INTERNAL)
            lstm.weight_proj[layer][direction] = t(arrays[f"{prefix}/W_P_0"])


def export_published(model: BiLM, directory: PathLike, vocab_name: str = "vocab.txt") -> Tuple[Path, Path]:
    """Write options.json + weights.hdf5 that any published-format reader loads.

    A model the format cannot carry the same numbers of (a word table, a
    character dictionary, `boundary_strings`) is a `WeightsError` before
    anything is written. `vocab_name` (a word-input model's vocabulary file)
    must be one the loaders find: "vocab.txt", or a name holding "vocab"
    and ending in ".txt".
    """
    import h5py

    if not fnmatch.fnmatchcase(vocab_name, PUBLISHED_VOCAB[1]) or "/" in vocab_name or vocab_name.startswith("."):
        raise ValueError(f"vocab_name {vocab_name!r}: the loaders find vocab.txt, or one file named *vocab*.txt "
                         "beside the weights; choose such a name")
    config = model.config
    try:
        options = config_to_options(config)  # before anything is written: some models have no published form
    except OptionsError as err:
        raise WeightsError(str(err)) from None
    if model.boundary_strings:  # read back without it, the model would embed "<S>" / "</S>" differently
        raise WeightsError(
            "the published format (options.json + weights.hdf5) has no place for boundary_strings (this model "
            "reads the tokens \"<S>\" and \"</S>\" as sentence boundaries, as models pretrained in stream mode "
            "do); save this model in the native format (spacy_elmo.io.save_native, or `convert --to native`)"
        )
    directory = Path(directory)
    check_can_write(directory, "published")
    directory.mkdir(parents=True, exist_ok=True)
    options_path = directory / "options.json"
    weights_path = directory / "weights.hdf5"
    arrays = _collect(model, config)
    for name, array in arrays.items():  # before anything is written: no reader would load it back
        if not numpy.isfinite(array).all():
            raise WeightsError(f"'{name}' contains NaN or infinite values, so the model is not exported "
                               "(no loader would read it back): did its training diverge?")

    def write_weights(path: Path) -> None:
        with h5py.File(path, "w") as f:
            for name, array in arrays.items():
                f.create_dataset(name, data=array)

    # all written before any is renamed, the options last: an export over an older one that fails
    # partway (a full disk) leaves the older one whole, where deleting its options first lost it
    with staged_files() as stage:
        stage.write(weights_path, write_weights)
        if model.input_vocab is not None:
            input_vocab = model.input_vocab
            stage.write(directory / vocab_name, lambda tmp: input_vocab.to_file(tmp))
        stage.write(options_path, lambda tmp: tmp.write_text(json.dumps(options, indent=2) + "\n", encoding="utf-8"))
    return options_path, weights_path


def _collect(model: BiLM, config: BiLMConfig) -> Dict[str, numpy.ndarray]:
    def n(x: torch.Tensor) -> numpy.ndarray:
        return x.detach().float().cpu().numpy().copy()

    arrays: Dict[str, numpy.ndarray] = {}
    enc = model.token_encoder
    if isinstance(enc, CharCNNEncoder):  # config.use_character_inputs
        arrays["char_embed"] = n(enc.char_embed[1:])
        for i in range(len(config.filters)):
            arrays[f"CNN/W_cnn_{i}"] = n(enc.conv_weights[i])[None]
            arrays[f"CNN/b_cnn_{i}"] = n(enc.conv_biases[i])
        F = config.n_filters
        for k in range(config.n_highway):
            arrays[f"CNN_high_{k}/W_transform"] = n(enc.highways[k][:, :F])
            arrays[f"CNN_high_{k}/W_carry"] = n(enc.highways[k][:, F:])
            arrays[f"CNN_high_{k}/b_transform"] = n(enc.highway_biases[k][:F])
            arrays[f"CNN_high_{k}/b_carry"] = n(enc.highway_biases[k][F:])
        if enc.has_projection:
            arrays["CNN_proj/W_proj"] = n(enc.proj_weight)
            arrays["CNN_proj/b_proj"] = n(enc.proj_bias)
    elif isinstance(enc, WordEncoder):
        arrays["embedding"] = n(enc.embedding)
    lstm = model.lstm
    for direction in (0, 1):
        for layer in range(config.n_layers):
            prefix = _cell(direction, layer)
            w0 = torch.cat([lstm.weight_ih[layer][direction], lstm.weight_hh[layer][direction]], dim=0)
            arrays[f"{prefix}/W_0"] = n(permute_gates(w0, INTERNAL_TO_TF))
            arrays[f"{prefix}/B"] = n(permute_gates(lstm.bias[layer][direction, 0], INTERNAL_TO_TF))
            arrays[f"{prefix}/W_P_0"] = n(lstm.weight_proj[layer][direction])
    return arrays


__all__ = ["read_options", "read_weights", "load_published", "export_published", "expected_datasets"]
