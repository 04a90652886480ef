"""A small random model in ELMoForManyLangs' layout, written with plain torch (no reference package).

Tensor names and shapes are those of the reference's `ConvTokenEmbedder` and
`ElmobiLm` state dicts; the dictionaries follow its `char.dic` / `word.dic`.
"""
import json
from pathlib import Path
from typing import Dict, Iterable, List

import torch

CHAR_SPECIALS = ["<bow>", "<eow>", "<oov>", "<pad>", "<bos>", "<eos>"]
WORD_SPECIALS = ["<oov>", "<pad>", "<bos>", "<eos>"]
ARCHITECTURE = {
    "encoder": {"name": "elmo", "projection_dim": 8, "cell_clip": 3, "proj_clip": 3, "dim": 16, "n_layers": 2},
    "token_embedder": {
        "name": "cnn",
        "activation": "relu",
        "filters": [[1, 4], [2, 5], [3, 6]],
        "n_highway": 2,
        "word_dim": 7,
        "char_dim": 6,
        "max_characters_per_token": 10,
    },
    "classifier": {"name": "sampled_softmax", "n_samples": 16},
    "dropout": 0.1,
}
# Chinese and Latin characters; the words cover some of the test sentences
CHARS = list("我们在银行旁边的河岸上坐着钱很多他去了abcdefghijklmnopqrstuvwxyz.,")
WORDS = ["我们", "银行", "河岸", "钱", "他", "bank", "river", "the", "of", "."]


def _write_dic(path: Path, entries: Iterable[str]) -> None:
    path.write_text("".join(f"{entry}\t{i}\n" for i, entry in enumerate(entries)), encoding="utf-8")


def random_state(arch: Dict, n_chars: int, n_words: int, seed: int) -> Dict[str, Dict[str, torch.Tensor]]:
    generator = torch.Generator().manual_seed(seed)

    def rand(*shape: int, scale: float = 0.5) -> torch.Tensor:
        return torch.randn(*shape, generator=generator) * scale

    emb, enc = arch["token_embedder"], arch["encoder"]
    F = sum(n for _, n in emb["filters"])
    W, C, P, H = emb["word_dim"], emb["char_dim"], enc["projection_dim"], enc["dim"]
    embedder = {
        "word_emb_layer.embedding.weight": rand(n_words, W),
        "char_emb_layer.embedding.weight": rand(n_chars, C),
    }
    for i, (width, n) in enumerate(emb["filters"]):
        embedder[f"convolutions.{i}.weight"] = rand(n, C, width)
        embedder[f"convolutions.{i}.bias"] = rand(n, scale=0.1)
    for k in range(emb["n_highway"]):
        embedder[f"highways._layers.{k}.weight"] = rand(2 * F, F, scale=0.3)
        embedder[f"highways._layers.{k}.bias"] = rand(2 * F, scale=0.3)
    embedder["projection.weight"] = rand(P, W + F, scale=0.3)
    embedder["projection.bias"] = rand(P, scale=0.1)
    encoder = {}
    for name in ("forward", "backward"):
        for layer in range(enc["n_layers"]):
            prefix = f"{name}_layer_{layer}"
            encoder[f"{prefix}.input_linearity.weight"] = rand(4 * H, P, scale=0.4)
            encoder[f"{prefix}.state_linearity.weight"] = rand(4 * H, P, scale=0.4)
            encoder[f"{prefix}.state_linearity.bias"] = rand(4 * H, scale=0.2)
            encoder[f"{prefix}.state_projection.weight"] = rand(P, H, scale=0.4)
    return {"token_embedder": embedder, "encoder": encoder}


def write_manylangs_model(
    directory: Path, seed: int = 0, chars: List[str] = CHARS, words: List[str] = WORDS, arch: Dict = ARCHITECTURE
) -> Path:
    """Write config.json, the architecture file, char.dic, word.dic and the two pickles."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps({"config_path": "/train/machine/cnn_tiny.json"}))
    (directory / "cnn_tiny.json").write_text(json.dumps(arch))
    all_chars = CHAR_SPECIALS + chars
    all_words = WORD_SPECIALS + words
    _write_dic(directory / "char.dic", all_chars)
    _write_dic(directory / "word.dic", all_words)
    state = random_state(arch, len(all_chars), len(all_words), seed)
    torch.save(state["token_embedder"], directory / "token_embedder.pkl")
    torch.save(state["encoder"], directory / "encoder.pkl")
    return directory
