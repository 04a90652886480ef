"""`perplexity`: score text with a pretrained biLM's softmax."""
from pathlib import Path

import srsly
import typer
from wasabi import msg

from ._util import check_at_least, check_spacy_lang_or_fail, fail, load_weights_or_fail, pick_device


def perplexity_cli(
    model_path: str = typer.Argument(
        ...,
        help="Model with a softmax (native format, as a pretrain run's model-last or model-best): a directory, "
        "archive, URL or catalogue name",
    ),
    text_path: Path = typer.Argument(
        ..., help="Text file (.txt or .gz), one sentence or paragraph per line, or a .spacy file (its sentences), "
        "read as pretrain reads its data", exists=True
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object: forward, backward, mean, tokens"),
    lang: str = typer.Option("en", "--lang", help="spaCy language of the tokenizer"),
    tokenizer: str = typer.Option(
        "spacy", "--tokenizer", help="spacy (spaCy's --lang tokenizer) or whitespace (the text is already tokenized)"
    ),
    max_length: int = typer.Option(
        64, "--max-length", help="Cut longer lines into segments of this many tokens (0: no limit)"
    ),
    batch_tokens: int = typer.Option(4096, "--batch-tokens", help="Padded tokens per batch"),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help="GPU to use (-1: CPU)"),
) -> None:
    """Forward, backward and mean perplexity of MODEL_PATH on TEXT_PATH."""
    from ..io.errors import WeightsError
    from ..pretrain.text_corpus import TOKENIZERS, CorpusError, LanguageError, SpacyRequired, text_segments

    if tokenizer not in TOKENIZERS:
        fail(f"--tokenizer {tokenizer!r}: choose one of {TOKENIZERS}")
    check_at_least("--max-length", max_length, 0, "0: no limit")
    check_at_least("--batch-tokens", batch_tokens, 1)
    if tokenizer == "spacy" or str(text_path).endswith(".spacy"):  # a .spacy file is read with lang's vocab
        check_spacy_lang_or_fail(lang)

    loaded = load_weights_or_fail(model_path, with_softmax=True)
    try:
        lm = loaded.language_model()
    except WeightsError:
        fail(
            f"{model_path}: this model carries no softmax, so it cannot score text (published ELMo weights "
            "have none, and the models this package ships or publishes, the embedded one included, drop it to "
            "save space); perplexity needs the model-last or model-best directory of a `spacy_elmo pretrain` run, "
            "which keeps it"
        )
    lm.to(pick_device(gpu_id))
    try:
        segments = text_segments(text_path, lang, max_length, tokenizer)
    except (SpacyRequired, CorpusError, LanguageError) as err:  # a gzip file cut short or not gzip at all: one line
        fail(str(err))
    if not segments:
        fail(f"{text_path}: no tokens to score")
    result = lm.perplexity(segments, batch_tokens=batch_tokens)
    if as_json:
        print(srsly.json_dumps(result))
        return
    msg.table(
        [(k, f"{result[k]:.3f}") for k in ("forward", "backward", "mean")] + [("tokens", f"{result['tokens']:,}")],
        header=("perplexity", "value"),
    )
