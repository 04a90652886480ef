"""The biLM's outputs are the same bits as when tests/data/bit_identity.json was recorded.

Refactoring the inference and training paths must not move a single bit:
for the embedded English model and the two reference fixture models, per
backend, the SHA-256 of the float32 layers of a fixed set of sentences
(short, long, repeated tokens, a duplicate, an empty one, a 60-character
token) is compared with the recorded digest. `embed` is also run with small
batches and with the token cache on, which must give the same bits
(batch invariance).

The digests of `onednn+kernel`, `onednn` and `mkl` were recorded before the
inference code was restructured into backends (issue 17) and must never
change; those of `reference` were added with that backend.

Bits depend on the CPU's instruction set and on torch's kernels, so the
digests hold for the machine signature recorded with them (torch version,
CPU capability, architecture); elsewhere the test skips with the reason.
`tests/data/bit_identity.json` holds the digests of AVX2 on an AMD CPU;
`bit_identity_avx512.json` those of AVX512 on an AMD CPU, recorded from the
code before the token layer gained its word table (92c4ef1), so they pin
that change too; `bit_identity_avx512_genuineintel_amx.json` those of
AVX512 on an Intel CPU with AMX, recorded at c31267c's biLM code.

Each file also names the sha256 of the shipped weights its "embedded"
digests were computed from: after the shipped weights are replaced, a
machine whose file was not regenerated skips the embedded model (the
fixture models stay pinned there). If the shipped weights are replaced, or
the numbers are meant to change, regenerate the file with

    OMP_NUM_THREADS=1 python -m tests.bilm.test_bit_identity --write

and say why in the commit (it rewrites the file of this machine's
signature, or adds one).
"""
import hashlib
import json
import platform
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Dict, Iterator, List

import numpy
import pytest
import torch

from spacy_elmo.bilm import BiLM
from spacy_elmo.io import load_bilm
from spacy_elmo.resources import default_model_path

DIGESTS = Path(__file__).resolve().parent.parent / "data" / "bit_identity.json"
BACKENDS = ("onednn+kernel", "onednn", "mkl", "reference")
ROOT = Path(__file__).resolve().parent.parent.parent
FIXTURE_MODELS = {"allennlp": ("allennlp_elmo",), "bilm_tf": ("bilm_tf", "model")}

_TEXT = (
    "The bank of the river was steep , but the bank in town was closed on Monday . "
    "She said that the results , which nobody expected , would be published next week in Zürich . "
    "Prices rose 3.5 % in March after the central bank 's decision to hold rates at 4 % ."
).split()


def sentences() -> List[List[str]]:
    """A fixed set covering the paths that differ: lengths from 0 to 150,
    repeated tokens and first tokens, a duplicate sentence, a token longer
    than the 50 character slots, a literal "<S>"."""
    words = _TEXT
    out = [
        words[:17],
        words[17:36],
        words[36:],
        ["."],
        [],
        ["the"] * 40,
        (words * 4)[:150],
        words[5:9],
        words[:17],  # a duplicate: computed once, copied
        ["x" * 60, "<S>", "Zürich", "ünïcödé", "</S>", "."],
        [w.upper() for w in words[10:30]],
        ["The"] + words[40:44],
        ["The"] + words[20:27],
    ]
    out += [words[i : i + 1 + i % 7] for i in range(0, 40, 3)]  # many short rows, several first tokens shared
    return out


def machine() -> Dict[str, str]:
    """What the bits depend on: torch, the instruction set torch dispatches to, and the CPU
    (oneDNN picks other kernels on another vendor's CPU, or where AMX exists, at the same
    instruction set)."""
    return {
        "torch": torch.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "machine": platform.machine(),
        "cpu": _cpu_signature(),
    }


def _cpu_signature() -> str:
    """The CPU's vendor, with "+amx" where it has AMX tiles ("unknown" where /proc/cpuinfo is absent)."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown"
    fields = dict(line.split(":", 1) for line in info.splitlines()[:40] if ":" in line)
    vendor = fields.get("vendor_id\t", "").strip() or "unknown"
    flags = fields.get("flags\t\t", "").split()
    return vendor + ("+amx" if "amx_tile" in flags else "")


def digest(arrays: List[numpy.ndarray]) -> str:
    sha = hashlib.sha256()
    for array in arrays:
        array = numpy.ascontiguousarray(array, dtype=numpy.float32)
        sha.update(str(array.shape).encode())
        sha.update(array.tobytes())
    return sha.hexdigest()


@contextmanager
def backend(model: BiLM, name: str) -> Iterator[None]:
    """Run `model` on the named backend."""
    saved = model.backend
    model.backend = name
    try:
        yield
    finally:
        model.backend = saved


def _unpadded(output) -> List[numpy.ndarray]:
    layers = output.layers.detach().float().numpy()
    return [layers[:, i, :n] for i, n in enumerate(output.lengths.tolist())]


def model_digests(model: BiLM, name: str) -> Dict[str, str]:
    """Digests of every call the backend serves; raises if two calls that must
    agree (batchings, cache) do not."""
    data = sentences()
    model.disable_cache()
    model.clear_cache()
    out = {}
    with backend(model, name):
        out["embed"] = digest(model.embed(data))
        small = digest(model.embed(data, batch_tokens=64))
        if small != out["embed"]:
            raise AssertionError(f"{name}: embed in batches of 64 tokens differs from the default batching")
        model.enable_cache()
        cached = digest(model.embed(data[::-1])[::-1])
        model.disable_cache()
        if cached != out["embed"]:
            raise AssertionError(f"{name}: embed with the token cache differs from embed without")
        with torch.no_grad():
            out["forward_boundaries"] = digest(_unpadded(model(data, keep_boundaries=True)))
            model.stateful = True
            model.reset_states()
            first = _unpadded(model(data[:8]))
            second = _unpadded(model(data[8:]))
            out["stateful"] = digest(first + second)
            model.stateful = False
            model.reset_states()
        # the training path (training mode, with gradients), dropout off so that the bits are defined
        dropout, model.lstm.dropout = model.lstm.dropout, 0.0
        model.train()
        try:
            out["train_forward"] = digest(_unpadded(model(data, keep_boundaries=True)))
        finally:
            model.lstm.dropout = dropout
            model.eval()
        if name == BACKENDS[0]:
            out["embed_bfloat16"] = digest(model.embed(data[:6], precision="bfloat16"))
    return out


def _fixtures() -> Path:
    from tests.conftest import FIXTURES

    return FIXTURES


def load(model: str) -> BiLM:
    if model == "embedded":
        return load_bilm(default_model_path())
    path = _fixtures().joinpath(*FIXTURE_MODELS[model])
    if not path.exists():
        pytest.skip(f"needs {path} (set SPACY_ELMO_FIXTURES)")
    return load_bilm(path)


def _records() -> List[Path]:
    """Every recorded file: tests/data/bit_identity.json and one more per machine signature."""
    return sorted(DIGESTS.parent.glob("bit_identity*.json"))


def _recorded() -> dict:
    seen = []
    for path in _records():
        recorded = json.loads(path.read_text())
        if recorded["machine"] == machine():
            return recorded
        seen.append(recorded["machine"])
    pytest.skip(f"digests recorded on {seen}, this is {machine()}: regenerate to compare here")


@pytest.mark.parametrize("model_name", ["embedded", *FIXTURE_MODELS])
@pytest.mark.parametrize("backend_name", BACKENDS)
def test_outputs_are_the_recorded_bits(model_name, backend_name):
    recorded = _recorded()
    if model_name == "embedded" and recorded.get("weights", {}).get("embedded") != embedded_weights():
        pytest.skip(f"this machine's digests of the embedded model were recorded for other weights "
                    f"({recorded.get('weights', {}).get('embedded')}); regenerate them on such a machine")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        got = model_digests(load(model_name), backend_name)
    finally:
        torch.set_num_threads(threads)
    assert got == recorded["digests"][model_name][backend_name]


def embedded_weights() -> str:
    """The sha256 of the shipped weights: a record's digests of "embedded" hold for these alone."""
    from spacy_elmo.io.checksum import sha256_file

    return sha256_file(default_model_path() / "bilm.safetensors")


def write() -> None:
    torch.set_num_threads(1)
    digests: Dict[str, Dict[str, Dict[str, str]]] = {}
    for model_name in ["embedded", *FIXTURE_MODELS]:
        model = load(model_name)
        digests[model_name] = {name: model_digests(model, name) for name in BACKENDS}
    DIGESTS.parent.mkdir(exist_ok=True)
    matching = [p for p in _records() if json.loads(p.read_text())["machine"] == machine()]
    name = f"{machine()['cpu_capability']}_{machine()['cpu']}".lower().replace("+", "_")
    target = matching[0] if matching else DIGESTS.with_name(f"bit_identity_{name}.json")
    record = {
        "about": "SHA-256 of float32 biLM outputs; see tests/bilm/test_bit_identity.py (regenerate: "
        "OMP_NUM_THREADS=1 python -m tests.bilm.test_bit_identity --write)",
        "machine": machine(),
        "weights": {"embedded": embedded_weights()},
        "digests": digests,
    }
    target.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    print(f"wrote {target}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(f"usage: python -m tests.bilm.test_bit_identity --write  (rewrites {DIGESTS.relative_to(ROOT)})")
    write()
