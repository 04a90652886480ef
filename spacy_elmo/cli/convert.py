"""`convert`: between the published format and the native one, and from ELMoForManyLangs' layout."""
from pathlib import Path

import typer
from wasabi import msg

from ._util import fail, load_weights_or_fail


def convert_cli(
    input_dir: str = typer.Argument(..., help="Model to convert: a directory, archive, URL or catalogue name"),
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
    char.dic, word.dic, token_embedder.pkl and encoder.pkl.

    Published output is readable by AllenNLP, bilm-tf and any tool that reads
    the published ELMo files; the softmax (not part of that format) is dropped.
    --table-float16 rounds a fine-tuned word table to float16, as the shipped
    model's is: its held-out perplexity moved by less than 0.001.
    """
    from ..io import WeightsError, export_published, save_native

    if to not in ("native", "published"):
        fail(f"--to must be 'native' or 'published', got {to!r}")
    loaded = load_weights_or_fail(input_dir, with_softmax=not no_softmax)
    if to == "published":
        try:
            options, weights = export_published(loaded.bilm, output_dir)
        except WeightsError as err:  # e.g. a word table, which the published format has no place for
            fail(str(err))
        msg.good(f"Wrote {options} and {weights}")
        return
    head = None if no_softmax else loaded.head
    # the softmax vocabulary only travels with the softmax (word-input models keep theirs)
    try:
        save_native(output_dir, loaded.bilm, loaded.vocab if head is not None else None, head, loaded.metadata,
                    storage_dtype="float16" if float16 else "float32",
                    table_dtype="float16" if table_float16 else None)
    except (WeightsError, ValueError) as err:  # another model in OUTPUT_DIR; weights beyond float16's range
        fail(str(err))
    msg.good(f"Wrote native model to {output_dir}")
