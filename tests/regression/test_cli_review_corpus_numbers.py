"""Regression: `corpus -n 0` was a ZeroDivisionError (ud) or range() traceback (ner), `--limit -1`
silently dropped the last sentence, and `--dev-output` on a corpus of one doc wrote a training file of
0 docs with exit status 0. -n must now be 1 or more and --limit 0 or more (one message each), and a
split that would leave either side without docs is refused; in every case nothing is written."""
import pytest

from spacy_elmo.cli import app
from spacy_elmo.gold_data import ud_docs, uner_docs

from ..cli.invoke import refused, runner

CONLLU = "1\tHi\thi\tINTJ\tUH\t_\t0\troot\t_\t_\n2\t!\t!\tPUNCT\t.\t_\t1\tpunct\t_\t_\n\n"
IOB2 = "1\tJohn\tB-PER\t-\t-\n2\tleft\tO\t-\t-\n\n"


@pytest.fixture(params=["ud", "ner"])
def source(request, tmp_path):
    """(kind, a file of three sentences of that kind)."""
    kind = request.param
    path = tmp_path / ("in.conllu" if kind == "ud" else "in.iob2")
    path.write_text((CONLLU if kind == "ud" else IOB2) * 3)
    return kind, path


@pytest.mark.parametrize("args,expected", [
    (["-n", "0"], "--n-sents must be 1 or more, got 0"),
    (["--n-sents", "-2"], "--n-sents must be 1 or more, got -2"),
    (["--limit", "-1"], "--limit must be 0 or more (0: all), got -1"),
])
def test_numbers_out_of_range_are_refused(source, tmp_path, args, expected):
    kind, path = source
    refused(["corpus", kind, path, tmp_path / "o.spacy", *args], expected)
    assert not (tmp_path / "o.spacy").exists()


@pytest.mark.parametrize("reader", [ud_docs, uner_docs])
def test_the_readers_refuse_them_too(tmp_path, reader):
    path = tmp_path / "x"
    path.write_text(CONLLU if reader is ud_docs else IOB2)
    with pytest.raises(ValueError, match="n_sents must be 1 or more"):
        reader(path, n_sents=0)
    with pytest.raises(ValueError, match="limit must be 0"):
        reader(path, limit=-1)


def test_a_split_that_leaves_no_training_docs_is_refused(source, tmp_path):
    kind, path = source
    # three sentences, ten to a doc: one doc, which would all go to --dev-output
    refused(["corpus", kind, path, tmp_path / "o.spacy", "--dev-output", tmp_path / "d.spacy"],
            "--dev-output: 1 doc(s) of up to 10 sentences leave no training docs")
    # three docs of one sentence, 0.9 of them held out: all three
    refused(["corpus", kind, path, tmp_path / "o.spacy", "-n", "1", "--dev-output", tmp_path / "d.spacy",
             "--dev-fraction", "0.9"], "leave no training docs when --dev-fraction 0.9 holds out 3")
    assert not (tmp_path / "o.spacy").exists() and not (tmp_path / "d.spacy").exists()

    result = runner.invoke(app, ["corpus", kind, str(path), str(tmp_path / "o.spacy"), "-n", "1",
                                 "--dev-output", str(tmp_path / "d.spacy")])
    assert result.exit_code == 0, result.output
    assert "Wrote 2 docs" in result.output and "Wrote 1 held-out docs" in result.output
