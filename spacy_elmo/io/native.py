"""The package's own model format: a directory of JSON + safetensors.

    elmo.json            format name and version, the biLM config, what else is present
    bilm.safetensors     token encoder + LSTM weights (all that embedding needs), float32
                         or float16 (loaded as float32 either way)
    vocab.txt            softmax / word-input vocabulary (optional)
    token_vocab.json     the token layer's word-table vocabulary and character dictionary (optional)
    softmax.safetensors  the LM head (optional; only perplexity and further training need it)

All files are written to temporary names first and then renamed, so a crash
never leaves a half-written model behind under the real name, and a save over
an older model that fails partway (a full disk) leaves the older one whole.

The same files also travel as one blob of bytes (`save_native_bytes`,
`load_native_bytes`), which is how a spaCy pipeline serializes its biLM:

    MAGIC                  b"spacy-elmo native\n"
    sha256                 32 bytes: the digest of everything after it
    header length          8 bytes, little-endian
    header                 JSON: {"format", "format_version", "files": [[name, size], ...]}
    file contents          the files of the header, in its order, back to back

The files are those `save_native` writes (elmo.json with its own checksums
included), so the blob and the directory are one format with one version;
a blob whose bytes changed or were cut short fails its digest and is a
`WeightsError` before anything in it is parsed.
"""
import errno
import hashlib
import json
import os
import re
import struct
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple, TypeVar, Union

import torch

from ..bilm.config import BiLMConfig, OptionsError
from ..bilm.language_model import LanguageModel, SoftmaxHead
from ..bilm.model import BiLM
from ..bilm.vocab import Vocabulary
from .atomic import StagedFiles, staged_files
from .checksum import sha256_file
from .errors import DamagedFileError, WeightsError
from .token_vocabularies import VOCABULARIES_FILE, load_token_vocabularies, save_token_vocabularies

# how weights may be stored (they are always loaded into float32 modules)
STORAGE_DTYPES = {"float32": torch.float32, "float16": torch.float16}

FORMAT_NAME = "spacy-elmo"
FORMAT_VERSION = 1
META_FILE = "elmo.json"
BILM_FILE = "bilm.safetensors"
VOCAB_FILE = "vocab.txt"
SOFTMAX_FILE = "softmax.safetensors"
WORD_TABLE_TENSOR = "token_encoder.word_table"
BYTES_MAGIC = b"spacy-elmo native\n"
_DIGEST_SIZE = 32
_LENGTH = struct.Struct("<Q")
# every file a native model may hold: the only names a blob may carry
FILES = (META_FILE, BILM_FILE, VOCAB_FILE, VOCABULARIES_FILE, SOFTMAX_FILE)

PathLike = Union[str, Path]


@dataclass
class NativeModel:
    bilm: BiLM
    vocab: Optional[Vocabulary] = None
    head: Optional[SoftmaxHead] = None
    metadata: Dict[str, Any] = field(default_factory=dict)

    def language_model(self) -> LanguageModel:
        if self.head is None or self.vocab is None:
            raise WeightsError("this model has no softmax (it can embed, but not score text or train further)")
        return LanguageModel(self.bilm, self.vocab, self.head)


def is_native(directory: PathLike) -> bool:
    return (Path(directory) / META_FILE).is_file()


def save_native(
    directory: PathLike,
    bilm: BiLM,
    vocab: Optional[Vocabulary] = None,
    head: Optional[SoftmaxHead] = None,
    metadata: Optional[Dict[str, Any]] = None,
    storage_dtype: str = "float32",
    table_dtype: Optional[str] = None,
) -> Path:
    """Write the model; `storage_dtype="float16"` halves the files (the weights are
    read back into float32 but keep float16's rounding, which moves the layers
    visibly, so the embedded model ships in float32). `table_dtype` stores the
    word table's pretrained rows in another precision (default: `storage_dtype`)."""
    from .layouts import check_can_write  # layouts reads this module's file names

    check_can_write(directory, "native")
    # staged: a save over an older model that fails partway (a full disk) leaves the older one whole,
    # where one file at a time left the new weights beside the old elmo.json (the trainer's model-best)
    with staged_files() as stage:
        return _write_native(Path(directory), bilm, vocab, head, metadata, storage_dtype, table_dtype, stage)


def _write_native(
    directory: Path,
    bilm: BiLM,
    vocab: Optional[Vocabulary],
    head: Optional[SoftmaxHead],
    metadata: Optional[Dict[str, Any]],
    storage_dtype: str,
    table_dtype: Optional[str],
    files: "Union[StagedFiles, _InPlace]",
) -> Path:
    """The native files in `directory`, each written through `files.write(path, writer)` (which returns
    where it wrote, to read back for its checksum), elmo.json last; the files it drops through
    `files.remove`."""
    for name in (storage_dtype, table_dtype or storage_dtype):
        if name not in STORAGE_DTYPES:
            raise ValueError(f"storage_dtype / table_dtype must be one of {sorted(STORAGE_DTYPES)}, got {name!r}")
    dtype = STORAGE_DTYPES[storage_dtype]
    overrides = {WORD_TABLE_TENSOR: STORAGE_DTYPES[table_dtype]} if table_dtype else {}

    if head is not None and vocab is None:
        raise ValueError("a softmax needs its vocabulary")
    vocab = vocab if vocab is not None else bilm.input_vocab
    # converted before anything is written, so a tensor that does not fit the storage type changes nothing
    bilm_state = _contiguous(bilm.state_dict(), dtype, overrides)
    head_state = _contiguous(head.state_dict(), dtype) if head is not None else None
    directory.mkdir(parents=True, exist_ok=True)
    written = {BILM_FILE: files.write(directory / BILM_FILE, lambda p: _save_safetensors(bilm_state, p))}
    if vocab is not None:
        written[VOCAB_FILE] = files.write(directory / VOCAB_FILE, lambda p: vocab.to_file(p))
    token_vocab = bilm.word_table_vocab is not None or bilm.char_dictionary is not None
    if token_vocab:
        written[VOCABULARIES_FILE] = files.write(
            directory / VOCABULARIES_FILE,
            lambda p: save_token_vocabularies(p, bilm.word_table_vocab, bilm.char_dictionary),
        )
    else:
        files.remove(directory / VOCABULARIES_FILE)
    if head_state is not None:
        written[SOFTMAX_FILE] = files.write(directory / SOFTMAX_FILE, lambda p: _save_safetensors(head_state, p))
    else:
        files.remove(directory / SOFTMAX_FILE)
    checksums = {name: sha256_file(path) for name, path in written.items()}
    meta = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "bilm": bilm.config.to_dict(),
        "boundary_strings": bilm.boundary_strings,
        "vocab": vocab is not None,
        "token_vocab": token_vocab,
        "softmax": head.config() if head is not None else None,
        "sha256": checksums,
        "metadata": metadata or {},
    }
    files.write(directory / META_FILE, lambda p: p.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8"))
    return directory


def save_native_bytes(
    bilm: BiLM,
    vocab: Optional[Vocabulary] = None,
    head: Optional[SoftmaxHead] = None,
    metadata: Optional[Dict[str, Any]] = None,
    storage_dtype: str = "float32",
    table_dtype: Optional[str] = None,
) -> bytes:
    """The model as one blob of bytes: the files `save_native` writes, packed (see the module docstring).

    They are written by the same code as a directory's (into a temporary
    one, as spacy-transformers serializes its models), so the two forms
    cannot drift apart.
    """
    with tempfile.TemporaryDirectory(prefix="spacy-elmo-") as tmp:
        directory = _write_native(Path(tmp), bilm, vocab, head, metadata, storage_dtype, table_dtype, _InPlace())
        meta = json.loads((directory / META_FILE).read_text(encoding="utf-8"))
        files = [(name, (directory / name).read_bytes()) for name in _listed_files(meta)]
    header = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "files": [[name, len(content)] for name, content in files],
    }
    encoded = json.dumps(header).encode("utf-8")
    body = b"".join([_LENGTH.pack(len(encoded)), encoded] + [content for _, content in files])
    return BYTES_MAGIC + hashlib.sha256(body).digest() + body


def is_native_bytes(data: bytes) -> bool:
    """Whether `data` starts as a blob of `save_native_bytes` does (its integrity is checked on load)."""
    return bytes(data[: len(BYTES_MAGIC)]) == BYTES_MAGIC


def load_native_bytes(data: bytes, with_softmax: bool = True, source: str = "serialized biLM") -> NativeModel:
    """The model a blob of `save_native_bytes` holds; `source` names it in errors.

    A blob that is not one, was cut short, or whose bytes changed is a
    `WeightsError` (checked against its digest before anything is parsed),
    as is one written by a newer format version.
    """
    files = _unpack(data, source)
    with tempfile.TemporaryDirectory(prefix="spacy-elmo-") as tmp:
        for name, content in files:
            (Path(tmp) / name).write_bytes(content)
        try:
            return load_native(tmp, with_softmax=with_softmax)
        except WeightsError as err:
            raise WeightsError(str(err).replace(tmp, source)) from None


def _unpack(data: bytes, source: str) -> List[Tuple[str, bytes]]:
    """(name, content) of each file in a blob, after its digest, header and names are checked."""
    view = memoryview(data)
    start = len(BYTES_MAGIC) + _DIGEST_SIZE
    if not is_native_bytes(data):
        raise WeightsError(f"{source}: not a {FORMAT_NAME} native model (the bytes do not start with its marker)")
    if len(view) < start + _LENGTH.size:
        raise WeightsError(f"{source}: truncated ({len(view)} bytes, shorter than the format's header)")
    digest, body = bytes(view[len(BYTES_MAGIC) : start]), view[start:]
    if hashlib.sha256(body).digest() != digest:
        raise DamagedFileError(
            f"{source}: checksum mismatch: the bytes are truncated or corrupted (their sha256 differs from "
            "the one recorded when they were written)"
        )
    (length,) = _LENGTH.unpack(body[: _LENGTH.size])
    try:
        header = json.loads(bytes(body[_LENGTH.size : _LENGTH.size + length]).decode("utf-8"))
        entries = [(str(name), int(size)) for name, size in header["files"]]
    except (ValueError, KeyError, TypeError) as err:
        raise WeightsError(f"{source}: unreadable header ({err})") from None
    _check_version(header, source)
    offset = _LENGTH.size + length
    files: List[Tuple[str, bytes]] = []
    for name, size in entries:
        if name not in FILES:
            raise WeightsError(f"{source}: unexpected file {name!r:.80} in the header (a native model holds {FILES})")
        if size < 0 or name in [n for n, _ in files]:
            raise WeightsError(f"{source}: the header lists {name!r} twice or with a negative size ({size})")
        files.append((name, bytes(body[offset : offset + size])))
        offset += size
    if offset != len(body) or META_FILE not in dict(files):
        raise WeightsError(f"{source}: the header does not describe the bytes that follow it")
    return files


def _listed_files(meta: Dict[str, Any]) -> List[str]:
    """The files of a model whose elmo.json is `meta`, in the order a blob stores them."""
    listed = [META_FILE, BILM_FILE]
    if meta.get("vocab"):
        listed.append(VOCAB_FILE)
    if meta.get("token_vocab"):
        listed.append(VOCABULARIES_FILE)
    if meta.get("softmax"):
        listed.append(SOFTMAX_FILE)
    return listed


def _check_version(meta: Dict[str, Any], source: Union[str, Path]) -> None:
    version = meta.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise WeightsError(
            f"{source}: format_version {version!r} is not a format version (an integer from 1; this package "
            f"writes {FORMAT_VERSION}): the file was edited or damaged, so save or convert the model again"
        )
    if version > FORMAT_VERSION:
        raise WeightsError(
            f"{source}: format_version {version!r} is not supported by this spacy-elmo (it reads versions "
            f"1..{FORMAT_VERSION}); upgrade spacy-elmo to load this model"
        )


def read_meta(directory: PathLike) -> Dict[str, Any]:
    path = Path(directory) / META_FILE
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise WeightsError(f"{path}: cannot read ({err.strerror or err})") from None
    except ValueError as err:
        raise WeightsError(f"{path}: not valid JSON ({err})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
        raise WeightsError(f"{path}: not a {FORMAT_NAME} model file (missing \"format\": \"{FORMAT_NAME}\")")
    _check_version(meta, path)
    for key in ("bilm",):
        if key not in meta:
            raise WeightsError(f"{path}: missing key '{key}'")
    # edited by hand, a value of the wrong type gave a TypeError traceback, an AttributeError in
    # `convert` and `info`, or (bool("false") is True) another model
    if not isinstance(meta["bilm"], dict):
        raise WeightsError(f"{path}: 'bilm' must be an object (the model's sizes), got {meta['bilm']!r}")
    if not isinstance(meta.get("metadata", {}), dict):
        raise WeightsError(f"{path}: 'metadata' must be an object, got {meta['metadata']!r}")
    for flag in ("boundary_strings", "vocab", "token_vocab"):
        if flag in meta and meta[flag] is not None and not isinstance(meta[flag], bool):
            raise WeightsError(f"{path}: '{flag}' must be true or false, got {meta[flag]!r}")
    return meta


def load_native(directory: PathLike, with_softmax: bool = True) -> NativeModel:
    directory = Path(directory)
    meta = read_meta(directory)
    try:
        config = BiLMConfig.from_dict(meta["bilm"], source=str(directory / META_FILE))
    except OptionsError as err:
        raise WeightsError(str(err)) from None
    checksums = meta.get("sha256") or {}
    softmax = meta.get("softmax")
    if not isinstance(checksums, dict) or not (softmax is None or isinstance(softmax, dict)):
        raise WeightsError(f"{directory / META_FILE}: 'sha256' and 'softmax' must be objects (or null)")
    vocab = None
    if meta.get("vocab"):
        vocab_path = directory / VOCAB_FILE
        if not vocab_path.is_file():
            raise DamagedFileError(f"{vocab_path}: missing (listed in {META_FILE})")
        _verify(vocab_path, checksums.get(VOCAB_FILE))
        try:
            vocab = Vocabulary.from_file(vocab_path)
        except ValueError as err:  # named once: Vocabulary names the file where its words are wrong
            raise WeightsError(str(err) if str(vocab_path) in str(err) else f"{vocab_path}: {err}") from None
        except OSError as err:
            raise WeightsError(f"{vocab_path}: cannot read ({err.strerror or err})") from None
    words, chars = None, None
    if meta.get("token_vocab"):
        path = directory / VOCABULARIES_FILE
        if not path.is_file():
            raise DamagedFileError(f"{path}: missing (listed in {META_FILE})")
        _verify(path, checksums.get(VOCABULARIES_FILE))
        try:
            words, chars = load_token_vocabularies(path)
        except ValueError as err:
            raise WeightsError(str(err)) from None

    def build_bilm() -> BiLM:
        return BiLM(
            config,
            vocab=vocab if not config.use_character_inputs else None,
            boundary_strings=bool(meta.get("boundary_strings", False)),
            word_table_vocab=words,
            char_dictionary=chars,
        )

    _verify(directory / BILM_FILE, checksums.get(BILM_FILE))
    bilm = _loaded(build_bilm, directory / BILM_FILE)
    head = None
    if with_softmax and softmax:
        if vocab is None:
            raise WeightsError(f"{directory / META_FILE}: a softmax is listed but no vocabulary")

        def build_head() -> SoftmaxHead:
            try:
                return SoftmaxHead(
                    softmax["n_vocab"], softmax["dim"], softmax["kind"], softmax.get("n_samples", 8192),
                    softmax.get("cutoffs"),
                )
            except KeyError as err:
                raise WeightsError(f"{directory / META_FILE}: the softmax entry lacks {err}") from None
            except (TypeError, ValueError) as err:
                raise WeightsError(f"{directory / META_FILE}: invalid softmax entry ({err})") from None

        with torch.device("meta"):
            _check_softmax_fits(directory, build_head(), vocab, config)
        _verify(directory / SOFTMAX_FILE, checksums.get(SOFTMAX_FILE))
        head = _loaded(build_head, directory / SOFTMAX_FILE)
    bilm.eval()
    return NativeModel(bilm, vocab, head, meta.get("metadata", {}))


def _check_softmax_fits(directory: Path, head: SoftmaxHead, vocab: Vocabulary, config: BiLMConfig) -> None:
    """The softmax must score the vocabulary's words from the biLM's top layer.

    Checked at load, so that a model whose files disagree (a vocab.txt edited
    or swapped, an elmo.json written by hand) is refused here with its files
    named, and not loaded only to crash when `perplexity` or training builds
    the language model.
    """
    if head.n_vocab != len(vocab):
        raise WeightsError(
            f"{directory / META_FILE}: the softmax has {head.n_vocab} classes but {directory / VOCAB_FILE} holds "
            f"{len(vocab)} words; they must be the same vocabulary"
        )
    if head.dim != config.projection_dim:
        raise WeightsError(
            f"{directory / META_FILE}: the softmax reads vectors of {head.dim} values but the biLM's "
            f"projection_dim is {config.projection_dim}"
        )


_Built = TypeVar("_Built", bound=torch.nn.Module)


def _loaded(build: Callable[[], _Built], path: Path) -> _Built:
    """The module `build` makes, holding the weights of safetensors file `path`.

    Its shapes are compared with the file's before anything is allocated (on the meta device): the
    sizes in elmo.json are the file's to back, so an edited one (lstm_dim 10**5 beside a file of four
    bytes) is a WeightsError, where building first took gigabytes, or failed in torch's allocator."""
    with torch.device("meta"):
        try:
            shapes = build()
        except ValueError as err:
            raise WeightsError(f"{path.parent}: {err}") from None
    state = _read_state(shapes, path)
    try:
        module = build()
    except (RuntimeError, MemoryError) as err:  # the file's own sizes, past this machine's memory
        raise WeightsError(f"{path}: cannot build the model in memory ({' '.join(str(err).split())[:200]})") from None
    module.load_state_dict(state)
    return module


def _utf8_name(path: Path) -> bool:
    """Whether `path`'s bytes on the file system are UTF-8 (a Latin-1 locale's "modèle" is not)."""
    try:
        os.fsencode(path).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _read_state(module: torch.nn.Module, path: Path) -> Dict[str, torch.Tensor]:
    """The tensors of `path`, checked against `module`'s names and shapes (it may be on the meta device)."""
    from safetensors import SafetensorError
    from safetensors.torch import load, load_file

    if not path.is_file():
        raise DamagedFileError(f"{path}: missing")
    try:
        # safetensors opens a path only where its bytes are UTF-8; read any other name here
        state = load_file(str(path)) if _utf8_name(path) else load(path.read_bytes())
    except (SafetensorError, OSError, ValueError, RuntimeError) as err:
        raise DamagedFileError(f"{path}: not a readable safetensors file ({err})") from None
    expected = module.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    if missing or unexpected:
        raise WeightsError(
            f"{path}: tensors do not match the config: missing {missing[:5]}, unexpected {unexpected[:5]}"
        )
    for name, tensor in state.items():
        if tuple(tensor.shape) != tuple(expected[name].shape):
            raise WeightsError(
                f"{path}: tensor '{name}' has shape {tuple(tensor.shape)}, the config implies "
                f"{tuple(expected[name].shape)}"
            )
        if tensor.is_floating_point() != expected[name].is_floating_point():  # int bits read as floats: garbage
            raise WeightsError(f"{path}: tensor '{name}' is stored as {tensor.dtype}, the model holds "
                               f"{expected[name].dtype} there: the file is damaged or not this model's")
        if tensor.is_floating_point() and tensor.dtype != expected[name].dtype:  # as load_state_dict will store it
            tensor = state[name] = tensor.to(expected[name].dtype)
        if not torch.isfinite(tensor).all():
            raise WeightsError(f"{path}: tensor '{name}' contains NaN or infinite values (in "
                               f"{expected[name].dtype})")
    return state


def verify_listed_files(directory: PathLike) -> None:
    """Every file the model's metadata lists a checksum for is there with those bytes (the softmax
    among them, which a load without it never reads): DamagedFileError naming the first that is not.
    What a download checks before it caches a model, so that a cut or damaged archive never enters
    the cache as complete."""
    directory = Path(directory)
    checksums = read_meta(directory).get("sha256") or {}
    if not isinstance(checksums, dict):
        raise WeightsError(f"{directory / META_FILE}: 'sha256' must be an object (or null)")
    for name, digest in sorted(checksums.items()):
        path = directory / name
        if not path.is_file():
            raise DamagedFileError(f"{path}: missing (listed in {META_FILE})")
        _verify(path, digest)


def _verify(path: Path, expected: Optional[str]) -> None:
    """A file whose bytes changed since it was saved is corrupted: say so before parsing it."""
    if expected is None or not path.is_file():
        return
    if sha256_file(path) != expected:
        raise DamagedFileError(
            f"{path}: checksum mismatch (sha256 differs from the one recorded in {META_FILE}): "
            "the file is corrupted or was replaced; restore it or re-export the model"
        )


def _contiguous(
    state: Dict[str, torch.Tensor],
    dtype: torch.dtype = torch.float32,
    overrides: Optional[Dict[str, torch.dtype]] = None,
) -> Dict[str, torch.Tensor]:
    """CPU tensors to store; floating-point ones in `dtype` (or their entry of `overrides`)."""
    overrides = overrides or {}

    def stored(name: str, value: torch.Tensor) -> torch.dtype:
        return overrides.get(name, dtype) if value.is_floating_point() else value.dtype

    out = {}
    for name, value in state.items():
        value = value.detach().cpu()
        out[name] = value.to(stored(name, value)).contiguous()
        if not out[name].is_floating_point() or torch.isfinite(out[name]).all():
            continue
        if not torch.isfinite(value).all():  # every loader refuses it: saved, it would only replace a good model
            raise WeightsError(f"tensor '{name}' contains NaN or infinite values, so the model is not saved "
                               "(no loader would read it back): did its training diverge?")
        remedy = ("store the word table in float32 (no table_dtype / --table-float16)" if name in overrides
                  else "store the model in float32")
        raise ValueError(f"tensor '{name}' has values beyond {out[name].dtype}'s range (largest "
                         f"{value.abs().max().item():.4g}); {remedy}")
    return out


class _InPlace:
    """`StagedFiles`' calls, written in place: for a temporary directory nobody reads before it is complete."""

    def write(self, path: Path, writer: Callable[[Path], Any]) -> Path:
        writer(path)
        return path

    def remove(self, path: Path) -> None:
        path.unlink(missing_ok=True)


def _save_safetensors(state: Dict[str, torch.Tensor], path: Path) -> None:
    """safetensors' `save_file`; its failure to write (a full disk: a `SafetensorError`, which is no
    OSError, so commands showed a traceback) as the OSError it reports, naming the file."""
    from safetensors import SafetensorError
    from safetensors.torch import save_file

    try:
        save_file(state, str(path))
    except SafetensorError as err:
        found = re.search(r"os error (\d+)", str(err))
        code = int(found.group(1)) if found else errno.EIO
        raise OSError(code, os.strerror(code) if found else " ".join(str(err).split()), str(path)) from None


__all__ = [
    "NativeModel",
    "save_native",
    "load_native",
    "verify_listed_files",
    "save_native_bytes",
    "load_native_bytes",
    "is_native_bytes",
    "read_meta",
    "is_native",
    "FORMAT_VERSION",
]
