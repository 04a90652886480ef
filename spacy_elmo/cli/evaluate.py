"""`evaluate`: score a trained pipeline and show what each task learned from the biLM."""
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional

import srsly
import typer
from wasabi import msg

from ._util import check_at_least, fail, try_load_pipeline

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.training import Example

_METRICS = [
    ("tag_acc", "TAG (XPOS)"),
    ("pos_acc", "POS (UPOS)"),
    ("morph_acc", "MORPH"),
    ("dep_uas", "UAS"),
    ("dep_las", "LAS"),
    ("ents_p", "NER P"),
    ("ents_r", "NER R"),
    ("ents_f", "NER F"),
    ("speed", "WORDS/S"),
]


def layer_mixes(nlp: "Language") -> Dict[str, Dict[str, Any]]:
    """softmax(s) and gamma of every ScalarMix in every component."""
    from ..layers.scalar_mix import mix_weights

    mixes = {}
    for name, component in nlp.pipeline:
        model = getattr(component, "model", None)
        if model is None or not hasattr(model, "walk"):
            continue
        found = [n for n in model.walk() if n.name == "scalar-mix" and n.maybe_get_param("s") is not None]
        for i, node in enumerate(found):
            weights, gamma = mix_weights(node)
            key = name if len(found) == 1 else f"{name}#{i}"
            mixes[key] = {"weights": [round(float(w), 6) for w in weights], "gamma": round(gamma, 6)}
    return mixes


def check_output(output: Optional[Path], data_path: Optional[Path] = None) -> None:
    """Exit with one message if the scores cannot be written to `output` (None: not asked for), or
    would be written over the gold data `data_path`.

    Checked before the pipeline is loaded, as `embed` checks its output: found when the JSON is
    written, a missing folder or a folder in the file's place cost the whole evaluation.
    """
    if output is None:
        return
    if data_path is not None and data_path.exists() and output.resolve() == data_path.resolve():
        fail(f"--output {output}: is the gold data file; write the scores elsewhere")
    if output.is_dir():
        fail(f"--output {output}: is a directory; the scores are one JSON file")
    if not output.parent.is_dir():
        fail(f"--output {output}: no such directory {output.parent} for it; create it first")


def use_gpu(gpu_id: int) -> None:
    """Run spaCy on GPU `gpu_id` (-1: stay on CPU), or exit with one message where it cannot
    (no CuPy, no GPU): thinc's ValueError was a traceback."""
    if gpu_id < 0:
        return
    from thinc.api import require_gpu

    try:
        require_gpu(gpu_id)
    except ValueError as err:
        fail(f"--gpu-id {gpu_id}: spaCy cannot use the GPU ({err})")


def check_data(data_path: Path) -> None:
    """Exit with one message if DATA_PATH is not named *.spacy, before the pipeline is loaded.

    spaCy's Corpus reads only files so named: a DocBin called dev.bin was read as nothing and
    reported as "no documents", which sent the user looking for a fault in a good file.
    """
    if data_path.suffix != ".spacy":
        fail(f"{data_path}: not named *.spacy, and spaCy reads gold data only from .spacy files; rename it if it "
             "is a DocBin, or convert it first (python -m spacy_elmo corpus ud FILE.conllu OUT.spacy)")


def load_pipeline(model: str) -> "Language":
    """spacy.load(model), or exit with one line naming the pipeline and why it cannot be loaded."""
    nlp, problem = try_load_pipeline(model)
    if nlp is None:
        fail(f"{model}: cannot load the pipeline ({problem})")
    return nlp


def check_scored(scores: Dict[str, Any], nlp: "Language", data_path: Path) -> None:
    """Exit with one message if the pipeline's components scored nothing: DATA_PATH has no gold
    annotation for any of them (NER-only docs on a tagger, say).

    The tokenizer's scores and the speed are there whatever the data holds, and so are a parser's
    sentence scores (its by-product), so they do not count; the table showed the speed alone, the
    status was 0 and the JSON's scores were all null. The sentence scores count where a component sets
    sentences as its task (a senter or sentencizer).
    """
    by_products = ("token_",) if _segments_sentences(nlp) else ("token_", "sents_")
    scored = [v for k, v in scores.items()
              if k != "speed" and not k.startswith(by_products) and (v is None or isinstance(v, (int, float)))]
    if scored and all(v is None for v in scored):
        names = ", ".join(name for name, component in nlp.pipeline if hasattr(component, "score"))
        fail(f"{data_path}: no gold annotation for any of the pipeline's components ({names}); nothing to score")


def _segments_sentences(nlp: "Language") -> bool:
    """Whether a component of `nlp` has sentence segmentation as its task (a senter or sentencizer)."""
    return any(factory in ("senter", "sentencizer") for factory in nlp.pipe_factories.values())


def read_examples(nlp: "Language", data_path: Path) -> List["Example"]:
    """The gold examples of DATA_PATH for `nlp`, or exit with one message: a file that is not a
    DocBin (spaCy's [E1014] ValueError, a traceback before) or that holds no documents."""
    from spacy.training import Corpus

    try:
        examples = list(Corpus(data_path, gold_preproc=False)(nlp))
    except ValueError as err:
        fail(f"{data_path}: cannot read it as a .spacy file ({err})")
    if not examples:
        fail(f"{data_path}: no documents")
    return examples


def evaluate_cli(
    model: str = typer.Argument(..., help="Trained pipeline: a directory or an installed package name"),
    data_path: Path = typer.Argument(..., help=".spacy file with gold annotations", exists=True, dir_okay=False),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write scores and layer mixes as JSON here"),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help="GPU to use (-1: CPU)"),
    batch_size: int = typer.Option(256, "--batch-size", "-b", help="Docs per batch (1 or more)"),
) -> None:
    """Evaluate MODEL on DATA_PATH (spaCy's scorer) and print each component's layer mix.

    The mix is what each task learned: softmax(s) over the biLM layers
    (layer 0 = character CNN, then one per LSTM layer) and its scale gamma.
    """
    check_at_least("--batch-size", batch_size, 1)
    check_output(output, data_path)
    check_data(data_path)
    use_gpu(gpu_id)
    nlp = load_pipeline(model)
    examples = read_examples(nlp, data_path)
    scores = nlp.evaluate(examples, batch_size=batch_size)
    check_scored(scores, nlp, data_path)
    mixes = layer_mixes(nlp)
    rows = []
    for key, label in _METRICS:
        value = scores.get(key)
        if value is None:
            continue
        rows.append((label, f"{value:,.0f}" if key == "speed" else f"{100 * value:.2f}"))
    msg.table(rows, header=("metric", "score"), divider=True)
    if mixes:
        header = ["component"] + [f"layer {i}" for i in range(len(next(iter(mixes.values()))["weights"]))] + ["gamma"]
        msg.table(
            [[name] + [f"{w:.3f}" for w in mix["weights"]] + [f"{mix['gamma']:.3f}"] for name, mix in mixes.items()],
            header=header,
            divider=True,
        )
    if output is not None:
        clean = {k: v for k, v in scores.items() if isinstance(v, (int, float)) or v is None}
        srsly.write_json(output, {"model": str(model), "data": str(data_path), "scores": clean, "mixes": mixes})
        msg.good(f"Wrote {output}")
