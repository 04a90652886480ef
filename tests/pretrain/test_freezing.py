"""`[training] frozen`: a run that continues a model trains only what the patterns leave; a pattern
that matches nothing, or one that freezes everything, is an error; a resume cannot change the set."""
import pytest
import torch

from spacy_elmo.io import load_model
from spacy_elmo.bilm.vocab import SPECIAL_TOKENS, Vocabulary, WordTableVocabulary
from spacy_elmo.pretrain import SettingsError, Trainer, pretrain
from spacy_elmo.pretrain.building import build_language_model, parameter_names_of
from spacy_elmo.pretrain.checkpoint import load_checkpoint
from spacy_elmo.pretrain.freezing import freeze_parameters, parameter_names

from .runs import _config

TOP_LAYER_ONLY = ["bilm.token_encoder.*", "bilm.lstm.*.0"]


def _common(corpus, **extra):
    return {"paths__train": str(corpus), "paths__dev": str(corpus), "training__eval_every": 1000,
            "training__checkpoint_every": 1000, **extra}


def test_frozen_parameters_keep_the_start_models_values(tiny_config_path, small_corpus, tmp_path):
    """Only the top LSTM layer and the softmax move; the token layer and the first LSTM layer stay
    the start model's bit for bit, and they hold no optimizer state."""
    pretrain(_config(tiny_config_path, training__max_steps=10, **_common(small_corpus)), tmp_path / "start",
             progress=False)
    start = load_model(tmp_path / "start" / "model-last")
    config = _config(tiny_config_path, paths__init_from=str(tmp_path / "start" / "model-last"),
                     training__max_steps=10, training__frozen=TOP_LAYER_ONLY, **_common(small_corpus))
    pretrain(config, tmp_path / "top", progress=False)
    trained = load_model(tmp_path / "top" / "model-last")
    before, after = start.bilm.state_dict(), trained.bilm.state_dict()
    for name in before:
        frozen = name.startswith("token_encoder.") or name.endswith(".0")
        if frozen:
            assert torch.equal(after[name], before[name]), name
        elif name.startswith("lstm."):
            assert not torch.equal(after[name], before[name]), f"{name} should have trained"
    assert not torch.equal(trained.head.weight, start.head.weight)
    optimizer = load_checkpoint(tmp_path / "top" / "checkpoint.pt")["optimizer"]
    n_trained = sum(1 for name, p in trained.language_model().named_parameters()
                    if not (name.startswith("bilm.token_encoder.") or name.startswith("bilm.lstm.")
                            and name.endswith(".0")))
    assert sum(len(group["params"]) for group in optimizer["param_groups"]) == n_trained


def test_nothing_frozen_by_default_and_an_empty_list_changes_nothing(tiny_config_path, small_corpus, tmp_path):
    """`frozen = []` (the default) trains exactly what a config without the setting trains."""
    common = _common(small_corpus, training__max_steps=3)
    pretrain(_config(tiny_config_path, **common), tmp_path / "default", progress=False)
    pretrain(_config(tiny_config_path, training__frozen=[], **common), tmp_path / "empty", progress=False)
    a = load_model(tmp_path / "default" / "model-last").bilm.state_dict()
    b = load_model(tmp_path / "empty" / "model-last").bilm.state_dict()
    assert all(torch.equal(a[name], b[name]) for name in a)


def test_a_pattern_that_matches_nothing_is_an_error_listing_the_parameters():
    model = torch.nn.Module()
    model.lstm = torch.nn.Module()
    model.lstm.register_parameter("weight_ih", None)
    model.layer = torch.nn.Linear(2, 2)
    model.stack = torch.nn.ParameterList([torch.nn.Parameter(torch.zeros(1)) for _ in range(3)])
    with pytest.raises(SettingsError, match=r"'bilm\.lsmt\.\*' matches no parameter.*layer\.weight.*stack\.0\.\.2"):
        freeze_parameters(model, ["layer.bias", "bilm.lsmt.*"])
    assert all(p.requires_grad for p in model.parameters())  # nothing half-frozen by the failed call
    with pytest.raises(SettingsError, match="freezes every parameter"):
        freeze_parameters(model, ["*"])


def test_a_resume_cannot_change_what_is_frozen_but_may_reword_it(tiny_config_path, small_corpus, tmp_path):
    """Compared by the parameters frozen: reordered or rewritten patterns resume; another set is refused."""
    common = _common(small_corpus, training__max_steps=2, training__checkpoint_every=1,
                     training__frozen=["bilm.token_encoder.*", "bilm.lstm.*.0"])
    pretrain(_config(tiny_config_path, **common), tmp_path / "run", progress=False)
    reworded = {**common, "training__max_steps": 3, "training__frozen": ["bilm.lstm.*.0", "bilm.token_encoder.*"]}
    assert pretrain(_config(tiny_config_path, **reworded), tmp_path / "run", resume=True, progress=False)["step"] == 3
    changed = {**common, "training__max_steps": 4, "training__frozen": ["bilm.token_encoder.*"]}
    with pytest.raises(SettingsError, match=r"differs from the checkpoint's.*it would train bilm\.lstm\.weight_ih\.0"):
        pretrain(_config(tiny_config_path, **changed), tmp_path / "run", resume=True, progress=False)


def test_a_checkpoint_from_before_the_setting_resumes_with_nothing_frozen(tiny_config_path, small_corpus, tmp_path):
    """A checkpoint whose config has no `frozen` froze nothing: `[]` resumes, a pattern is refused."""
    from spacy_elmo.pretrain.checkpoint import save_checkpoint

    common = _common(small_corpus, training__max_steps=2, training__checkpoint_every=1)
    pretrain(_config(tiny_config_path, **common), tmp_path / "run", progress=False)
    state = load_checkpoint(tmp_path / "run" / "checkpoint.pt")
    state["config"] = "\n".join(line for line in state["config"].splitlines() if not line.startswith("frozen ="))
    save_checkpoint(tmp_path / "run" / "checkpoint.pt", state)
    more = {**common, "training__max_steps": 3}
    assert pretrain(_config(tiny_config_path, **more), tmp_path / "run", resume=True, progress=False)["step"] == 3
    frozen = {**more, "training__max_steps": 4, "training__frozen": ["head.*"]}
    with pytest.raises(SettingsError, match=r"differs from the checkpoint's \[\]: it would freeze head\.weight"):
        pretrain(_config(tiny_config_path, **frozen), tmp_path / "run", resume=True, progress=False)


def test_patterns_match_case_sensitively_everywhere(monkeypatch):
    """`fnmatch.filter` folds case on Windows; the check and the freeze must agree (both case-sensitive)."""
    import fnmatch
    import ntpath

    monkeypatch.setattr(fnmatch.os, "path", ntpath)  # what fnmatch sees on Windows
    model = torch.nn.Module()
    model.head = torch.nn.Linear(2, 2)
    model.body = torch.nn.Linear(2, 2)
    with pytest.raises(SettingsError, match="'HEAD.\\*' matches no parameter"):
        freeze_parameters(model, ["HEAD.*"])
    assert freeze_parameters(model, ["head.*"]) == ["head.weight", "head.bias"]


def test_an_objective_left_nothing_to_train_is_an_error(tiny_config_path, small_corpus, tmp_path):
    """The softmax warm-up with the softmax frozen, and a distillation term whose layer is all frozen."""
    from .test_distill import _word_table

    word_table_dir = _word_table(tmp_path)
    pretrain(_config(tiny_config_path, training__max_steps=2, **_common(small_corpus)), tmp_path / "start",
             progress=False)
    start = {"paths__init_from": str(tmp_path / "start" / "model-last"), "training__max_steps": 1}
    warm = _config(tiny_config_path, training__frozen=["head.*"], training__softmax_warmup_steps=2,
                   **start, **_common(small_corpus))
    with pytest.raises(SettingsError, match="softmax_warmup_steps = 2 trains the softmax alone"):
        pretrain(warm, tmp_path / "warm", progress=False)
    distill = _config(tiny_config_path, training__frozen=["bilm.token_encoder.*"], training__distill__layer="token",
                      training__distill__teacher=str(word_table_dir), **start, **_common(small_corpus))
    with pytest.raises(SettingsError, match=r"every parameter under bilm\.token_encoder\.\* that"):
        pretrain(distill, tmp_path / "distill", progress=False)
    # the same teacher reading the top layer still reaches the LSTM: it trains
    top = _config(tiny_config_path, training__frozen=["bilm.token_encoder.*"], training__distill__layer="top",
                  training__distill__teacher=str(word_table_dir), **start, **_common(small_corpus))
    assert pretrain(top, tmp_path / "top", progress=False)["step"] == 1


def test_a_single_pattern_not_in_a_list_gets_the_list_form(tiny_config_path):
    with pytest.raises(SettingsError, match=r"\[training\] frozen = 'bilm.lstm.\*.0'.*e\.g\. \[\"bilm"):
        _config(tiny_config_path, training__frozen="bilm.lstm.*.0")


def test_the_command_lines_list_form_parses(tiny_config_path):
    from spacy_elmo.pretrain.settings import load_config, parse_overrides

    overrides = parse_overrides(["--training.frozen", '["bilm.token_encoder.*", "bilm.lstm.*.0"]'])
    config = load_config(tiny_config_path, overrides)
    assert config["training"]["frozen"] == ["bilm.token_encoder.*", "bilm.lstm.*.0"]


@pytest.fixture
def corpus_unread(monkeypatch):
    """Reading the corpus fails the test: what is checked must be checked before it."""
    def read(self, state=None):
        raise AssertionError("the corpus was read before the settings were checked")

    monkeypatch.setattr(Trainer, "prepare_data", read)


def test_a_misspelt_pattern_is_refused_before_the_corpus_is_read(tiny_config_path, small_corpus, tmp_path,
                                                                 corpus_unread):
    config = _config(tiny_config_path, training__frozen=["bilm.lsmt.*"], **_common(small_corpus))
    with pytest.raises(SettingsError, match=r"'bilm\.lsmt\.\*' matches no parameter"):
        pretrain(config, tmp_path / "run", progress=False)


def test_a_word_table_both_trainable_and_frozen_is_refused_before_the_corpus_is_read(
        tiny_config_path, small_corpus, tmp_path, corpus_unread):
    """It was frozen in silence, while the saved model's config said the table trains."""
    from .test_distill import _word_table

    config = _config(tiny_config_path, paths__word_table=str(_word_table(tmp_path)), model__word_table_trainable=True,
                     training__frozen=["bilm.token_encoder.*"], **_common(small_corpus))
    with pytest.raises(SettingsError, match=r"freezes the word table .*word_table_trainable = true"):
        pretrain(config, tmp_path / "run", progress=False)


def test_the_early_check_reads_the_init_from_models_architecture(tiny_config_path, small_corpus, tmp_path):
    """The run's [model] is its start model's: a pattern for a layer only the start model has is valid
    (checked against the config's own [model] it would be refused), and it freezes that layer."""
    pretrain(_config(tiny_config_path, training__max_steps=2, **_common(small_corpus)), tmp_path / "start",
             progress=False)
    n_layers = load_model(tmp_path / "start" / "model-last").bilm.config.n_layers
    top = f"bilm.lstm.*.{n_layers - 1}"
    config = _config(tiny_config_path, paths__init_from=str(tmp_path / "start" / "model-last"),
                     model__n_layers=n_layers - 1, training__max_steps=1, training__frozen=[top],
                     **_common(small_corpus))
    assert pretrain(config, tmp_path / "run", progress=False)["step"] == 1


@pytest.mark.parametrize("settings, table", [
    ({}, False),
    ({}, True),
    ({"softmax__kind": "adaptive"}, False),
    ({"softmax__kind": "adaptive"}, True),
    ({"softmax__kind": "full", "model__use_character_inputs": False}, False),  # no table: it joins the char CNN
])
def test_the_names_known_before_the_corpus_hold_every_name_a_run_has(tiny_config_path, settings, table):
    """The early check must never refuse a pattern the model would match: whatever the vocabulary's size
    and whether a table comes, the model's names are among `parameter_names_of`'s."""
    config = _config(tiny_config_path, **settings)
    known = set(parameter_names_of(config))
    for size in (5, 3000, 60000):
        vocab = Vocabulary(list(SPECIAL_TOKENS) + [f"w{i}" for i in range(size)])
        words = WordTableVocabulary(["the", "of"]) if table else None
        model = build_language_model(config, vocab, 0, words, 4 if table else 0)
        assert set(parameter_names(model)) <= known, (size, set(parameter_names(model)) - known)


def test_a_run_from_before_the_table_check_still_resumes(tiny_config_path, small_corpus, tmp_path, monkeypatch):
    """A checkpoint trained with the table trainable and frozen (accepted before the check existed) resumes:
    its own setting stands, and neither way out the fresh-run error advises is open to a resume."""
    from spacy_elmo.pretrain import trainer

    from .test_distill import _word_table

    settings = dict(paths__word_table=str(_word_table(tmp_path)), model__word_table_trainable=True,
                    training__frozen=["bilm.token_encoder.*"],
                    **_common(small_corpus, training__checkpoint_every=1))
    with monkeypatch.context() as patch:
        patch.setattr(trainer, "check_frozen_setting", lambda config, new_table: None)
        pretrain(_config(tiny_config_path, training__max_steps=2, **settings), tmp_path / "run", progress=False)
    more = _config(tiny_config_path, **{**settings, "training__max_steps": 3})
    assert pretrain(more, tmp_path / "run", resume=True, progress=False)["step"] == 3


def test_a_trainable_table_that_does_not_exist_gets_its_own_error(tiny_config_path, small_corpus, tmp_path):
    """Without a table the error is that there is none, not that it is frozen."""
    config = _config(tiny_config_path, model__word_table_trainable=True, training__frozen=["bilm.token_encoder.*"],
                     **_common(small_corpus))
    with pytest.raises(SettingsError, match="word_table_trainable = true, but there is no word table"):
        pretrain(config, tmp_path / "run", progress=False)
