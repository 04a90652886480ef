"""`[training] frozen`: a run that continues a model trains only what the patterns leave; a pattern
that matches nothing, or one that freezes everything, is an error; a resume cannot change the set."""
import pytest
import torch

from spacy_elmo.io import load_model
from spacy_elmo.pretrain import SettingsError, pretrain
from spacy_elmo.pretrain.freezing import freeze_parameters

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
    optimizer = torch.load(tmp_path / "top" / "checkpoint.pt", weights_only=False)["optimizer"]
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
    from spacy_elmo.pretrain.checkpoint import load_checkpoint, save_checkpoint

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
