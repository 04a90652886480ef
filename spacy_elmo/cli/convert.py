"""`convert`: between the published format and the native one, and from ELMoForManyLangs' layout."""
from pathlib import Path
from typing import Any, Dict

import typer
from wasabi import msg

from ._util import fail, load_weights_or_fail

# formats whose loaders describe the model in its metadata (`source`, `format`): they carry none of their own
# (a pipeline's elmo component saves its biLM without the metadata of the model it started from)
_FOREIGN_FORMATS = ("published", "elmoformanylangs", "spacy-pipeline")


def convert_cli(
    input_dir: str = typer.Argument(
        ..., help="Model to convert: a directory (a saved spaCy pipeline too), archive, URL or catalogue name"),
    output_dir: Path = typer.Argument(..., help="Directory to write"),
    to: str = typer.Option("native", "--to", "-t", help="Target format: native or published"),
    no_softmax: bool = typer.Option(False, "--no-softmax", help="Native target: leave the softmax out"),
    float16: bool = typer.Option(
        False, "--float16", help="Native target: store the weights as float16 (half the size; loaded as float32)"
    ),
    table_float16: bool = typer.Option(
        False, "--table-float16",
        help="Native target: store the word table (if any) as float16, the rest as --float16 says",
    ),
) -> None:
    """Convert biLM weights: published <-> native, and ELMoForManyLangs -> native.

    Published: options.json + weights.hdf5. ELMoForManyLangs: config.json,
    char.dic, word.dic, token_embedder.pkl and encoder.pkl. A saved spaCy
    pipeline (e.g. a fine-tuned one's model-best) gives the biLM it holds.

    Published output is readable by AllenNLP, bilm-tf and any tool that reads
    the published ELMo files; the softmax (not part of that format) is dropped.
    --table-float16 rounds a fine-tuned word table to float16, as the shipped
    model's is: its held-out perplexity moved by less than 0.001.
    """
    from ..io import WeightsError, export_published, save_native

    if to not in ("native", "published"):
        fail(f"--to must be 'native' or 'published', got {to!r}")
    native_only = [name for name, given in (("--no-softmax", no_softmax), ("--float16", float16),
                                            ("--table-float16", table_float16)) if given]
    if to == "published" and native_only:  # they would change nothing: say so rather than ignore them
        fail(f"{', '.join(native_only)}: only for a native target; the published format stores float32 "
             "weights and never a softmax")
    if output_dir.exists() and not output_dir.is_dir():
        fail(f"{output_dir}: exists and is not a directory; give a directory to write the model into")
    loaded = load_weights_or_fail(input_dir, with_softmax=to == "native" and not no_softmax)
    try:
        if to == "published":
            options, weights = export_published(loaded.bilm, output_dir)
            msg.good(f"Wrote {options} and {weights}")
            return
        head = None if no_softmax else loaded.head
        # the softmax vocabulary only travels with the softmax (word-input models keep theirs)
        save_native(output_dir, loaded.bilm, loaded.vocab if head is not None else None, head,
                    native_metadata(loaded.metadata),
                    storage_dtype="float16" if float16 else "float32",
                    table_dtype="float16" if table_float16 else None)
    except (WeightsError, ValueError) as err:  # a model the target cannot hold; another model in OUTPUT_DIR
        fail(str(err))
    except OSError as err:  # the output cannot be written: no permission, a full disk, a file in the way
        fail(f"{output_dir}: cannot write ({err.strerror or err})")
    msg.good(f"Wrote native model to {output_dir}")


def native_metadata(metadata: Dict[str, Any]) -> Dict[str, Any]:
    """The metadata a native copy of a model records.

    A published or ELMoForManyLangs model has no metadata of its own: its
    loader describes where it came from (`source`, `format`). Stored as it
    is, the native copy would claim to be in the format it was converted
    from, so it is kept under `converted_from` instead. A native model's own
    metadata (what `pretrain` recorded) goes over unchanged.
    """
    if metadata.get("format") in _FOREIGN_FORMATS:
        return {"format": "native", "converted_from": dict(metadata)}
    return metadata
