"""`info`: describe a biLM directory and the machine it would run on."""
import dataclasses
import os
from typing import Any, Dict, Optional

import srsly
import torch
import typer
from wasabi import msg

from ..bilm.engine import backends
from ..machine import cpu_name
from ._util import huge_pages, load_weights_or_fail, model_source


def cpu_inference() -> dict:
    """How this install computes on the CPU: the backend `auto` resolves to, every
    backend (the exact ones, then the opt-in int8) and why it cannot run here (None: it can),
    and huge pages."""
    return {
        "backend": backends.resolve(backends.AUTO),
        "backends": {name: backends.unavailable_reason(name) for name in backends.NAMES},
        "huge_page_tensors": huge_pages()["in_use"],
    }


def print_catalogue(as_json: bool = False) -> None:
    """The catalogue as a table (or JSON): name, language, title, size, licence, URL."""
    from ..io.catalogue import catalogue, catalogue_rows

    if as_json:
        entries = [dataclasses.asdict(entry) for entry in catalogue().values()]
        print(srsly.json_dumps(entries, indent=2))
        return
    header = ("name", "lang", "model", "size", "licence", "files")
    msg.table(catalogue_rows(), header=header, divider=True, max_col=90)
    msg.text("A name goes wherever a model is asked for: `--weights small`, "
             "nlp.add_pipe(\"elmo\", config={\"weights\": \"efml-de\"}). `info --list --json` gives the URLs "
             "and checksums; docs/sources.md says more.")


def machine() -> dict:
    """The CPU, its cores, and the CUDA device torch sees (None: CPU only)."""
    return {
        "cpu": cpu_name(),
        "cpu_cores": os.cpu_count(),
        "torch": torch.__version__,
        "cuda_device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    }


def _token_encoder(config: Any) -> str:
    """What the token layer reads: characters, words, and a word table beside the characters."""
    kind = "characters" if config.use_character_inputs else "words"
    if config.word_table_rows:
        frozen = "trainable" if config.word_table_trainable else "frozen"
        kind += f" + word table ({config.word_table_rows:,} x {config.word_table_dim}, {frozen})"
    return kind


def info_cli(
    model_path: Optional[str] = typer.Argument(
        None,
        help="Model: a directory, archive, URL, catalogue name or \"embedded\" (default: the embedded English "
        "model)",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON"),
    list_models: bool = typer.Option(
        False, "--list", help="List the catalogue of published models that MODEL_PATH may name, and exit"
    ),
) -> None:
    """Architecture, size and provenance of a biLM, or (--list) the catalogue of published models."""
    if list_models:
        print_catalogue(as_json)
        return
    loaded = load_weights_or_fail(model_path, with_softmax=True)
    bilm = loaded.bilm
    config = bilm.config
    n_params = sum(p.numel() for p in bilm.parameters())
    info: Dict[str, Any] = {
        "path": str(model_path) if model_source(model_path) else "(embedded English model)",
        "layers": config.n_output_layers,
        "width": config.width,
        "parameters": n_params,
        "token_encoder": _token_encoder(config),
        "softmax": loaded.head.config() if loaded.head is not None else None,
        "vocab_size": len(loaded.vocab) if loaded.vocab is not None else None,
        "config": config.to_dict(),
        "metadata": {k: v for k, v in loaded.metadata.items() if k != "config"},
        "cpu_inference": cpu_inference(),
        "machine": machine(),
    }
    if as_json:
        print(srsly.json_dumps(info, indent=2))
        return
    msg.divider("biLM")
    rows = [(k, v) for k, v in info.items() if k not in ("config", "metadata", "cpu_inference", "machine")]
    msg.table(rows)
    msg.divider("architecture")
    msg.table(list(info["config"].items()))
    msg.divider("machine")
    msg.table(list(info["machine"].items()))
    msg.divider("CPU inference on this install")
    cpu = info["cpu_inference"]
    msg.table([("backend (auto)", cpu["backend"]), ("huge_page_tensors", cpu["huge_page_tensors"])])
    msg.table([(name, reason or "available") for name, reason in cpu["backends"].items()])
    if info["metadata"]:
        msg.divider("metadata")
        msg.table([(k, v) for k, v in info["metadata"].items()])
