"""The pretraining loop: corpus -> vocabulary -> biLM + softmax -> checkpoints and models.

    pretrain(config, output_dir)           a fresh run
    pretrain(config, output_dir, resume=True)   continue from output_dir/checkpoint.pt

With [paths] init_from = MODEL_DIR (or "embedded", the package's own biLM),
a new run starts from that native model's weights with a fresh optimizer and
schedule (`init_from.py`). With [paths] word_table = TABLE_DIR the token layer
gets a word table beside the character CNN, its pretrained rows filled from
that directory (`word_table.py`); the checkpoint and the saved models carry it.

Output directory:
    model-best/, model-last/   native format (with softmax), loadable by the `elmo` component
    snapshots/step-N/          the same, every [training] snapshot_every steps (if set)
    checkpoint.pt              everything needed to resume exactly
    (model-last's elmo.json says "finished": true once the run has reached its end: `run_finished`)
    log.jsonl                  one JSON object per evaluation
    perplexity.png             training and dev curves
    config.cfg                 the resolved config of the run
"""
import configparser
import contextlib
import glob
import inspect
import json
import math
import os
import platform
import time
from pathlib import Path
from typing import Any, ContextManager, Dict, Iterator, List, Optional, Tuple, Union

import numpy
import torch
from confection import Config

from ..bilm.errors import SpacyElmoError
from ..bilm.language_model import LanguageModel, LMBatch
from ..bilm.lstm import LSTMState
from ..bilm.vocab import Vocabulary, WordTableVocabulary
from ..faults import fault_point
from ..io.errors import WeightsError
from ..io.atomic import remove_abandoned_temporaries
from ..io.file_lock import output_lock
from ..io.native import NativeModel, read_meta, save_native
from ..machine import cpu_name
from ..progress_bars import progress_bar
from .batching import sentence_batches, shuffled, skip, stream_batches
from .building import (
    build_language_model, build_optimizer, init_softmax_from_table, learning_rate, training_autocast,
)
from .checkpoint import CheckpointError, load_checkpoint, rng_state, save_checkpoint, set_rng_state
from .distill import (
    DistilledLM, DistillError, DistillTargets, Teacher, batch_sentences, build_distillation, check_distill_settings,
    resolve_teacher,
)
from .distributed import Dist, check_replicas, init_distributed, launched_world_size, shutdown
from .freezing import (
    changed_on_resume, check_frozen_setting, check_objective_trains, freeze_parameters, grouped, parameter_names,
)
from .init_from import continue_from, model_word_table, resume_architecture, start_model, start_provenance
from .plot import keep_rows_through, plot_perplexity, read_log
from .progress import Progress, StopFlag, Window
from .settings import RunPaths, SettingsError, check_resume_config
from .shards import ShardedCorpus, Share, plan_shares, shares_from_state
from .teacher_cache import CachedTeacher, build_cache
from .text_corpus import TokenizedCorpus, expand_paths, is_glob_pattern, iter_segments
from .word_table import WordTableError, load_word_table, read_table_info

PathLike = Union[str, Path]


class Interrupted(Exception):
    """Training stopped on SIGINT/SIGTERM after writing a checkpoint.

    `signal`: the name of the signal that stopped it ("SIGINT", "SIGTERM"); None where another
    rank's signal stopped this one, which the command reports as SIGINT's (exit status 130).
    """

    def __init__(self, message: str, signal: Optional[str] = None) -> None:
        super().__init__(message)
        self.signal = signal


class NonFiniteError(SpacyElmoError, FloatingPointError, ValueError):
    """The loss, the gradient or the weights became inf or NaN: training stopped before the
    step's update (the last checkpoint and model-best are untouched). A ValueError too, so
    the command line reports it in one line."""


class Trainer:
    """One pretraining run: `run()` prepares the data and the model, trains, and writes the outputs."""

    def __init__(self, config: Config, output_dir: PathLike, device: Optional[str] = None,
                 progress: bool = True) -> None:
        self.config = config
        self.paths = RunPaths(Path(output_dir))
        self.progress = progress
        check_stream_processes(config, launched_world_size())  # before joining any process group
        # the device per rank (LOCAL_RANK's GPU under torchrun), set before any collective
        self.dist: Dist = init_distributed(device)
        self.device = self.dist.device
        training = config["training"]
        if training["threads"]:
            torch.set_num_threads(int(training["threads"]))
        self.seed = int(training["seed"])
        # provenance of the model this run started from ([paths] init_from), if any
        self.start_metadata: Optional[Dict[str, Any]] = None
        # the token layer's word table: its vocabulary, width and table.json (None: no table)
        self.word_table: Optional[Dict[str, Any]] = None
        self.position = Progress()
        self.window = Window()
        self.distill_window: List[float] = []  # distillation losses since the last log line
        self.carried: Optional[LSTMState] = None  # stream mode: the state carried between batches
        self.last_eval: Optional[Dict[str, float]] = None
        self.logged_step = -1  # the last step with a row in log.jsonl (main process; -1: none)
        # what `_architecture` read before the corpus, for `_build`: [paths] word_table's (its record,
        # its vectors) and [paths] softmax_init's table (vocabulary, vectors)
        self.table_read: Optional[tuple] = None
        self.softmax_table: Optional[Tuple[WordTableVocabulary, torch.Tensor]] = None

    # -- data ---------------------------------------------------------------------
    def layout(self, state: Optional[Dict[str, Any]]) -> str:
        """How the processes share the text: the checkpoint's layout when resuming (a run
        keeps the layout it started with), else [corpus] shard ("auto": "files" under
        torchrun in sentences mode, else "none")."""
        if state is not None:
            return str(state["progress"].get("layout", "none"))
        shard, mode = self.config["corpus"]["shard"], self.config["training"]["mode"]
        if shard == "files" and mode == "stream":
            raise SettingsError('[corpus] shard = "files" needs [training] mode = "sentences" '
                                '(stream mode reads the corpus as one stream: use shard = "none")')
        if shard == "auto":
            return "files" if self.dist.enabled and mode == "sentences" else "none"
        return str(shard)

    def prepare_data(self, state: Optional[Dict[str, Any]] = None) -> None:
        """The training text (tokenized once into the cache) and the dev segments.

        Layout "none": the main process tokenizes the whole corpus, the others wait and read
        its cache. Layout "files": every process tokenizes only its shares, in parallel
        (`shards.py`), and the token and word counts are gathered from all of them."""
        corpus_cfg = self.config["corpus"]
        paths = self.config["paths"]
        if not paths["train"]:
            raise SettingsError("no training text: set [paths] train (or --paths.train FILE)")
        self._refuse_output_inside(paths["train"])
        check_text_paths(paths)  # before the training text is tokenized (hours, for a real corpus)
        cache = Path(paths["cache"]) if paths["cache"] else self.paths.corpus_cache
        kwargs = dict(lang=corpus_cfg["lang"], tokenizer=corpus_cfg["tokenizer"], max_length=corpus_cfg["max_length"],
                      progress=self.progress)
        self.position.layout = self.layout(state)
        self.sharded: Optional[ShardedCorpus] = None
        if self.position.layout == "files":
            files = expand_paths(paths["train"])
            shards = state["progress"].get("shards") if state is not None else None
            try:
                world = self.dist.world_size
                shares = shares_from_state(shards, files, world) if shards else plan_shares(len(files), world)
            except (ValueError, KeyError, TypeError) as err:
                raise CheckpointError(
                    f"{self.paths.checkpoint}: its corpus shares do not fit this run: {err}"
                ) from None

            def prepare(path: Path, share: Share) -> TokenizedCorpus:
                return TokenizedCorpus.prepare(
                    [path], cache, max_segments=corpus_cfg["max_segments"], part=share.part, parts=share.parts,
                    **kwargs,
                )

            self.sharded = ShardedCorpus(files, shares, prepare, self.dist)
            if shards:
                try:
                    self.sharded.restore(shards)
                except (ValueError, KeyError, TypeError, IndexError) as err:
                    raise CheckpointError(
                        f"{self.paths.checkpoint}: its corpus positions are not valid: {err!r}"
                    ) from None
            # word counts for a fresh vocabulary and for init_from's unigram start
            need_counts = state is None and not paths["vocab"]
            need_counts = need_counts or (state is None and bool(paths.get("init_from")))
            self.sharded.prepare_all(need_counts)
            self.train_corpus: Union[TokenizedCorpus, ShardedCorpus] = self.sharded
        else:
            # the main process tokenizes; the others wait and then read its cache
            for turn in ("main", "others"):
                if (turn == "main") == self.dist.is_main:
                    self.train_corpus = TokenizedCorpus.prepare(
                        paths["train"], cache, max_segments=corpus_cfg["max_segments"], **kwargs
                    )
                self.dist.wait_for_main()
        self.dev_segments = None
        if paths["dev"] and self.dist.is_main:  # only the main process evaluates
            dev = TokenizedCorpus.prepare(paths["dev"], cache, **kwargs)
            self.dev_segments = list(iter_segments(dev, corpus_cfg["dev_max_tokens"]))
        self.dist.wait_for_main()  # the others' next collectives wait for the dev text's tokenizing

    def build_vocab(self) -> Vocabulary:
        vocab_path = self.config["paths"]["vocab"]
        if vocab_path:
            return Vocabulary.from_file(vocab_path)
        counts = self.train_corpus.counts()
        return Vocabulary.from_counts(counts, self.config["vocab"]["max_size"], self.config["vocab"]["min_count"])

    def batches(self, epoch: int) -> Iterator[LMBatch]:
        """The epoch's one batch sequence (layout "none"): it depends on (seed, epoch) alone."""
        training = self.config["training"]
        seed = self.seed * 1000 + epoch
        corpus = self.train_corpus
        assert isinstance(corpus, TokenizedCorpus)
        if training["mode"] == "stream":
            return stream_batches(
                lambda: shuffled(corpus.segments(), seed),
                self.vocab,
                training["batch_size"],
                training["unroll_steps"],
            )
        return sentence_batches(corpus.segments(), self.vocab, training["batch_tokens"], seed)

    def share_batches(self, corpus: TokenizedCorpus, share: int, epoch: int) -> Iterator[LMBatch]:
        """A share's batches in `epoch`: they depend on (seed, epoch, share) alone."""
        seed = (self.seed * 1000 + epoch) * 1_000_003 + share
        return sentence_batches(corpus.segments(), self.vocab, self.config["training"]["batch_tokens"], seed)

    # -- evaluation ---------------------------------------------------------------
    def evaluate(self) -> Optional[Dict[str, float]]:
        if not self.dev_segments:
            return None
        return self.lm.perplexity(self.dev_segments, batch_tokens=self.config["training"]["batch_tokens"])

    # -- the run ------------------------------------------------------------------
    def run(self, resume: bool = False) -> Dict[str, Any]:
        """Train (or resume) into the output folder. Process 0 holds the folder's `RunLock` throughout:
        a second run on it (two `--resume`s at once) is refused (OutputBusyError) before it reads or
        writes anything there, instead of interleaving the two runs' logs and checkpoints."""
        if not self.dist.is_main:
            return self._run(resume)
        with output_lock(self.paths.root, "pretrain"):
            return self._run(resume)

    def _run(self, resume: bool) -> Dict[str, Any]:
        if self.dist.is_main:  # the lock is held: what a writer killed mid-write left is nobody's now
            remove_abandoned_temporaries([self.paths.root, self.paths.model_best, self.paths.model_last])
        if self.dist.is_main and not resume and self.paths.checkpoint.exists():
            raise SettingsError(
                f"{self.paths.root} already holds a run (checkpoint.pt); pass --resume to continue it "
                "or choose another output directory"
            )
        state = load_checkpoint(self.paths.checkpoint) if resume else None
        start = self._architecture(state)  # before the corpus: what is wrong in the settings shows at once
        # made once the settings are known good: a refused start leaves no empty output folder behind
        self.paths.root.mkdir(parents=True, exist_ok=True)
        self.prepare_data(state)
        self._build(state, start)
        if self.dist.is_main:
            self.paths.config.write_text(self.config.to_str(), encoding="utf-8")
            self.vocab.to_file(self.paths.root / "vocab.txt")
            if state is None:
                # a fresh run: a log left by an earlier start that never wrote a checkpoint is not this run's
                self.paths.log.unlink(missing_ok=True)
            else:
                # the rows after the checkpoint are the killed session's: the steps it replays are logged anew
                keep_rows_through(self.paths.log, self.position.step)
                steps = [r["step"] for r in read_log(self.paths.log) if isinstance(r.get("step"), int)]
                self.logged_step = max(steps, default=-1)
        self.bar = progress_bar(
            total=self._estimated_steps(),
            initial=self.position.step,
            desc="pretraining",
            unit="step",
            disable=not (self.progress and self.dist.is_main),
            dynamic_ncols=True,
        )
        self.window.start = time.perf_counter()  # its sums come from the checkpoint when resuming
        self.started = time.perf_counter() - self.position.elapsed
        self.lm.train()
        try:
            with StopFlag() as stop:
                stopped_by = self._train(stop)
                self._write_checkpoint()
                if stopped_by not in (None, "limit"):
                    if self.dist.is_main:
                        self.save_model(self.paths.model_last, self.last_eval)
                    raise Interrupted(
                        f"stopped by {stopped_by} at step {self.position.step}; checkpoint written to "
                        f"{self.paths.checkpoint}; {os.environ.get(RESUME_HINT_ENV) or 'continue with --resume'}",
                        signal=stopped_by if stopped_by.startswith("SIG") else None,
                    )
                final_metrics, replicas = self._finish()
        finally:
            self.bar.close()
            self._leave_group()
        return {
            "step": self.position.step,
            "epoch": self.position.epoch,
            "tokens": self.position.tokens,
            "elapsed_s": time.perf_counter() - self.started,
            "dev": final_metrics,
            "output": str(self.paths.root),
            "replica_checksums": replicas,
        }

    def _architecture(self, state: Optional[Dict[str, Any]]) -> Optional[NativeModel]:
        """The config's [model] made the run's, and checked with `[training] frozen`, before the corpus
        is read: the checkpoint's when resuming (which must match the config), else the [paths]
        init_from model's, which is returned (None: a run from scratch or a resume)."""
        start: Optional[NativeModel] = None
        if state is not None:
            # an init_from run's [model] is its start model's: take it again, as start_model did
            resume_architecture(self.config, state.get("config"), report=self.dist.is_main)
            check_resume_config(self.config, state.get("config"), self.paths.checkpoint, report=self.dist.is_main,
                                saved_cwd=state.get("cwd"))
        else:
            start = start_model(self.config, report=self.dist.is_main)
        table = bool(self.config["paths"].get("word_table")) or (start is not None and start.bilm.config.has_word_table)
        check_frozen_setting(self.config, new_table=state is None and table)
        # the tables and the teacher a fresh run reads (small) are read or found now, not after the corpus
        paths, distill = self.config["paths"], self.config["training"]["distill"]
        if state is None and paths.get("word_table") and not (start is not None and start.bilm.config.has_word_table):
            self.table_read = self._read_word_table(paths["word_table"])
        if state is None and paths.get("softmax_init"):
            if start is not None and start.head is not None:
                raise SettingsError("[paths] softmax_init: the init_from model brings its own softmax; unset one")
            loaded = (paths["init_from"], start) if start is not None else None
            self.softmax_table = self._softmax_table(paths["softmax_init"], loaded)
        if distill["teacher"]:
            try:
                check_distill_settings(distill, self.config["training"]["mode"])
            except DistillError as err:
                raise SettingsError(str(err)) from None
        return start

    def _build(self, state: Optional[Dict[str, Any]], start: Optional[NativeModel]) -> None:
        """The vocabulary, the language model (from scratch, from the init_from model `start`, or
        from the checkpoint `state` when resuming), the optimizer and the sampler."""
        table_vectors: Optional[torch.Tensor] = None
        if state is not None:
            self.vocab = Vocabulary(state["vocab"])
            # as recorded when the run started (the start model may have moved or changed since); a
            # checkpoint from before it was recorded: read from the start model now
            self.start_metadata = state["start"] if "start" in state else start_provenance(self.config)
            self.word_table = state.get("word_table")  # its rows are in the checkpoint's weights
        else:
            if start is not None and start.head is not None and start.vocab is not None:
                self.vocab = start.vocab  # its softmax comes with its vocabulary
            else:
                self.vocab = self.build_vocab()
            if start is not None and start.bilm.word_table_vocab is not None:
                self.word_table = {
                    "vocab": start.bilm.word_table_vocab.to_dict(),
                    "dim": start.bilm.config.word_table_dim,
                    "info": start.metadata.get("word_table"),
                }
            elif self.table_read is not None:
                self.word_table, table_vectors = self.table_read
        table_vocab = self._table_vocab()
        torch.manual_seed(self.seed)
        numpy.random.seed(self.seed % (2**32))
        self.lm: LanguageModel = build_language_model(
            self.config, self.vocab, self.seed, table_vocab, self.word_table["dim"] if self.word_table else 0
        ).to(self.device)
        if table_vectors is not None:
            self.lm.bilm.set_word_table(table_vectors)
        if start is not None:
            self.start_metadata = continue_from(self.lm, start, self.train_corpus.counts())
        self.frozen = self._freeze(state, start)
        if self.softmax_table is not None:
            self._init_softmax(self.config["paths"]["softmax_init"], *self.softmax_table)
        self.model: torch.nn.Module = self.lm
        self.teacher: Optional[Any] = None  # a Teacher, its cache, a word table or context targets
        self.distilled: Optional[DistilledLM] = None
        distill = self.config["training"]["distill"]
        if distill["teacher"]:
            try:
                self.teacher, self.distilled = build_distillation(
                    self.lm, distill, self.config["training"]["mode"], str(self.device), self._teacher_cache,
                    self._corpus_segments, self.vocab.words,
                )
            except DistillError as err:
                raise SettingsError(str(err)) from None
            self.model = self.distilled
            self.teacher_dir = resolve_teacher(distill["teacher"])
        if self.dist.enabled:
            self.model = torch.nn.parallel.DistributedDataParallel(
                self.model,
                device_ids=[self.device.index] if self.device.type == "cuda" else None,
                find_unused_parameters=self.config["softmax"]["kind"] == "adaptive"
                or self.config["training"]["softmax_warmup_steps"] > 0,
            )
        # a frozen word table (requires_grad=False) is no optimizer's business, but stays in the state
        # the module whose parameters train (the distillation map's too): the optimizer's, and grad_clip's
        self.trained: torch.nn.Module = self.distilled if self.distilled is not None else self.lm
        self.optimizer = build_optimizer(self.config, [p for p in self.trained.parameters() if p.requires_grad])
        # what grad_clip measures: at weight 0 the map's gradients are zeros, left out so that the run trains
        # bit for bit what the run without a teacher trains (two more zero tensors changed the norm's rounding)
        self.clipped: torch.nn.Module = self.trained
        if self.distilled is not None and not distill["weight"]:
            self.clipped = self.lm
        self.sampler = torch.Generator().manual_seed(self.seed + 7919 * (self.dist.rank + 1))
        precision = self.config["training"]["precision"]
        self.autocast: ContextManager[Any] = training_autocast(precision, self.device)
        self.scaler = torch.amp.GradScaler("cuda") if precision == "float16" and self.device.type == "cuda" else None
        if state is not None:
            self._restore(state)  # after the scaler: the checkpoint holds its state too

    def _refuse_output_inside(self, train: Any) -> None:
        """SettingsError where the output directory lies in a directory that [paths] train names (or
        a glob of it matches files there): a resume would read the run's own files (its corpus cache,
        vocabularies) as training text. Checked on every start, so the first run is refused too."""
        root = self.paths.root.resolve()
        for entry in [train] if isinstance(train, (str, Path)) else list(train):
            where = Path(entry)
            if where.is_dir() and root.is_relative_to(where.resolve()):
                raise SettingsError(
                    f"the output directory {self.paths.root} is inside [paths] train ({entry}): a resume would read "
                    "the run's own files (its corpus cache, vocabularies) as training text; write the output "
                    "outside it"
                )
            if is_glob_pattern(entry):
                inside = [m for m in glob.glob(str(entry), recursive=True) if Path(m).resolve().is_relative_to(root)]
                if inside:
                    raise SettingsError(f"[paths] train ({entry}) matches files of the output directory "
                                        f"{self.paths.root} ({inside[0]}, ...): write the output elsewhere")

    def _corpus_segments(self) -> Iterator[List[str]]:
        """The training corpus's segments in file order (when sharded: this process's shares of a
        fresh epoch's deal, whatever the run's progress, so that a resumed run fits the context
        targets on the text the fresh run fitted them on)."""
        if isinstance(self.train_corpus, TokenizedCorpus):
            return self.train_corpus.segments()
        sharded = self.train_corpus
        return (segment for share in sharded.first_deal() for segment in sharded.corpus(share).segments())

    def _teacher_cache(self, teacher: Teacher) -> CachedTeacher:
        """`teacher`'s vectors of the training corpus from [training.distill] cache (built first
        where missing: by the main process, the others waiting)."""
        distill = self.config["training"]["distill"]
        corpus = self.train_corpus
        if not isinstance(corpus, TokenizedCorpus):
            raise DistillError(
                '[training.distill] cache needs the whole corpus in each process: set [corpus] shard = "none" '
                '(a run started with shard = "files" keeps that layout when resumed: resume it without the cache, '
                'or start a new run)'
            )
        for turn in ("main", "others"):
            if (turn == "main") == self.dist.is_main:
                cached = build_cache(
                    teacher, corpus.segments, corpus.info, Path(distill["cache"]), distill["cache_dim"],
                    progress=self.progress,
                )
            self.dist.wait_for_main()
        return cached

    def _freeze(self, state: Optional[Dict[str, Any]], start: Optional[NativeModel]) -> List[str]:
        """`[training] frozen` applied to the language model: checked against the checkpoint's setting
        when resuming, and against what the run's objective needs; the frozen names, reported."""
        training = self.config["training"]
        names = parameter_names(self.lm)
        frozen = freeze_parameters(self.lm, training["frozen"], names)
        if state is not None and state.get("config"):
            saved = Config().from_str(state["config"], interpolate=False).get("training", {}).get("frozen")
            changed = changed_on_resume(names, training["frozen"], saved)
            if changed:
                raise SettingsError(f"{self.paths.checkpoint}: {changed}")
        check_objective_trains(self.lm, frozen, training)
        if frozen and self.dist.is_main:
            from wasabi import msg

            msg.info(f"[training] frozen: {len(frozen)} of {len(names)} parameter tensors ({grouped(frozen)})")
            if state is None and start is None:
                msg.warn("[training] frozen: the run starts from random weights (no [paths] init_from), "
                         "and the frozen ones stay random")
            elif state is None and start is not None and start.head is None and any(
                    name.startswith("head.") for name in frozen):
                msg.warn(f"[training] frozen: {self.config['paths']['init_from']} has no softmax, and the new "
                         "one stays as it starts")
        return frozen

    @staticmethod
    def _softmax_table(
        directory: str, loaded: Optional[Tuple[str, NativeModel]] = None
    ) -> Tuple[WordTableVocabulary, torch.Tensor]:
        """[paths] softmax_init's table: a word table directory, or a native model's own table, e.g.
        "embedded" (`loaded`, the init_from model, is not read again)."""
        from_model = model_word_table(directory, loaded)
        if from_model is not None:
            return from_model
        try:
            return load_word_table(directory)
        except WordTableError as err:
            raise SettingsError(f"[paths] softmax_init: {err}") from None

    def _init_softmax(self, directory: str, vocab: WordTableVocabulary, vectors: torch.Tensor) -> None:
        """[paths] softmax_init: the softmax's output embeddings start from that table's vectors."""
        found = init_softmax_from_table(self.lm.head, self.vocab, vocab, vectors, self.seed)
        if self.progress and self.dist.is_main:
            print(f"softmax_init: {found:,} of {len(self.vocab):,} output embeddings start from {directory}")

    def _table_vocab(self) -> Optional[WordTableVocabulary]:
        if not self.word_table:
            return None
        try:
            return WordTableVocabulary.from_dict(self.word_table["vocab"])
        except (TypeError, ValueError) as err:
            raise CheckpointError(f"{self.paths.checkpoint}: its word table vocabulary is not valid: {err}") from None

    @staticmethod
    def _read_word_table(directory: str) -> tuple:
        """([paths] word_table's vocabulary, width and table.json as the checkpoint keeps them, its vectors)."""
        try:
            vocab, vectors = load_word_table(directory)
            info = read_table_info(directory)
        except WordTableError as err:
            raise SettingsError(f"[paths] word_table: {err}") from None
        return {"vocab": vocab.to_dict(), "dim": int(vectors.shape[1]), "info": info}, vectors

    def _restore(self, state: Dict[str, Any]) -> None:
        """Weights, optimizer, position and every generator as the checkpoint left them."""
        rank = self.dist.rank
        try:
            self.lm.load_state_dict(state["model"])
            if self.distilled is not None:
                if "distill" not in state:
                    raise ValueError("it was written without [training.distill]; its map cannot be restored")
                load_distill_state(self.distilled, state["distill"])
            self.optimizer.load_state_dict(state["optimizer"])
            saved = state["progress"]
            self.position.update(saved)
            if "epoch_batches" not in saved:  # written before the count: one batch per process and step
                self.position.epoch_batches = self.position.batches_in_epoch * self.dist.world_size
            rngs = state.get("rngs") or []  # every process's (DDP); before they were kept, rank 0's for all
            set_rng_state(rngs[rank] if rank < len(rngs) else state["rng"], self.device)
            # float16 on a GPU: the loss scale and its growth tracker go on (a checkpoint without
            # them, written before they were saved or by a float32 run, starts a fresh scaler)
            if self.scaler is not None and state.get("scaler"):
                self.scaler.load_state_dict(state["scaler"])
            if rank < len(state["sampler"]):
                self.sampler.set_state(state["sampler"][rank])
            else:  # more processes than the checkpoint had: a fresh generator, by rank and step
                self.sampler.manual_seed(self.seed + 7919 * (rank + 1) + 104729 * self.position.step)
            carried = state.get("carried")
            if carried is not None:
                self.carried = LSTMState(*(tuple(t.to(self.device) for t in part) for part in carried))
            # the losses since the last log row and the last evaluation, so the next row is the one
            # an uninterrupted run logs (absent from checkpoints written before they were kept)
            self.distill_window = self.window.restore(self.position.window)
            self.last_eval = self.position.last_eval
        except (RuntimeError, ValueError, TypeError, KeyError, IndexError) as err:
            raise CheckpointError(f"{self.paths.checkpoint}: does not fit this run: {err}") from None

    def _estimated_steps(self) -> int:
        """The progress bar's total: max_steps, or the steps of max_epochs where fewer.

        Both modes read each segment as "<S> w1 .. wn </S>", n + 2 positions. A `stream`
        batch holds batch_size rows of unroll_steps positions; a `sentences` batch holds
        whole segments, padded to its longest, up to batch_tokens positions (at least one,
        at most sentence_batches' max_batch_segments): as many of the mean length as fit.
        A step takes accumulate_steps batches per process."""
        training = self.config["training"]
        corpus = self.train_corpus
        n_tokens = corpus.n_tokens
        if isinstance(corpus, TokenizedCorpus):
            n_segments = corpus.n_segments
        else:  # the shares: from the segments per token of this process's own shares
            opened = list(corpus.opened.values())
            opened_tokens = sum(c.n_tokens for c in opened)
            n_segments = round(n_tokens * sum(c.n_segments for c in opened) / opened_tokens) if opened_tokens else 0
        positions = n_tokens + 2 * n_segments
        if training["mode"] == "stream":
            per_batch = training["batch_size"] * training["unroll_steps"]
        else:  # whole segments of the mean length (at least one) under the budget
            per_segment = positions / max(1, n_segments)
            fitting = min(_MAX_BATCH_SEGMENTS, max(1, int(training["batch_tokens"] // per_segment)))
            per_batch = fitting * per_segment
        per_step = max(1.0, per_batch * training["accumulate_steps"] * self.dist.world_size)
        estimate = int(training["max_epochs"] * positions / per_step)
        max_steps = int(training["max_steps"])
        return min(max_steps, estimate) if max_steps and estimate else max_steps or estimate

    # -- the loop -----------------------------------------------------------------
    def _train(self, stop: StopFlag) -> Optional[str]:
        """Epochs until max_epochs or a stop; returns what stopped it ("limit", a
        signal's name) or None when the epochs ran out."""
        training = self.config["training"]
        # checked before any step, too: a resumed run that had reached max_steps (or max_minutes)
        # trains no step more (on every process alike)
        if self.dist.any(self._limit_reached()):
            return "limit"
        stopped_by: Optional[str] = None
        while self.position.epoch < training["max_epochs"] and stopped_by is None:
            epoch = self.position.epoch
            if self.sharded is not None:
                shared: Iterator[Any] = self.sharded.batches(
                    lambda corpus, share: self.share_batches(corpus, share, epoch), epoch
                )
            else:
                shared = skip(self.batches(epoch), self.position.epoch_batches)
            if training["mode"] != "stream":
                self.carried = None
            stopped_by = self._train_epoch(shared, stop)
            if stopped_by is None:
                self.position.epoch += 1
                self.position.batches_in_epoch = 0
                self.position.epoch_batches = 0
                if self.sharded is not None:
                    self.sharded.new_epoch()
        return stopped_by

    def _limit_reached(self) -> bool:
        """[training] max_steps or max_minutes reached (0: no limit)."""
        training = self.config["training"]
        max_steps, max_seconds = int(training["max_steps"]), float(training["max_minutes"]) * 60.0
        return bool(
            (max_steps and self.position.step >= max_steps)
            or (max_seconds and time.perf_counter() - self.started >= max_seconds)
        )

    def _next_micro_batches(self, batches: Iterator[Any]) -> Optional[List[LMBatch]]:
        """This process's micro-batches of the next step, or None at the end of the epoch
        (on every process alike).

        Layout "none": every process takes its own of each `world` consecutive batches of
        the one sequence. Layout "files": its own next batches; the epoch ends for all when
        any process has run out."""
        world, n = self.dist.world_size, int(self.config["training"]["accumulate_steps"])
        if self.sharded is None:
            group = [next(batches, None) for _ in range(n * world)]
            if any(b is None for b in group):
                return None
            self.position.epoch_batches += n * world
            return [b for b in group[self.dist.rank :: world] if b is not None]
        taken = [next(batches, None) for _ in range(n)]
        if self.dist.any(any(t is None for t in taken)):
            return None
        for share, _ in (t for t in taken if t is not None):
            self.sharded.took(share)
        return [t[1] for t in taken if t is not None]

    def _train_epoch(self, batches: Iterator[Any], stop: StopFlag) -> Optional[str]:
        training = self.config["training"]
        while True:
            micro = self._next_micro_batches(batches)
            if micro is None:
                if self.position.step == 0:  # a whole epoch gave less than one optimizer step
                    n, world = int(training["accumulate_steps"]), self.dist.world_size
                    raise SettingsError(
                        f"the training text ({self.train_corpus.n_tokens:,} tokens) makes fewer batches than one "
                        f"optimizer step takes ([training] accumulate_steps = {n} x {world} process(es) = "
                        f"{n * world} batches): add text, or lower [training] accumulate_steps or batch_tokens")
                return None
            self._step(micro)
            step = self.position.step
            fault_point("pretrain.step")  # tests inject kills and signals here (faults.py)
            # agreed on every process: each reads its own clock for max_minutes, and one that left the
            # loop alone would leave the others waiting in their next collective
            done = self.dist.any(self._limit_reached())
            if step % training["eval_every"] == 0 or (
                training["snapshot_every"] and step % training["snapshot_every"] == 0
            ):
                self._check_weights()  # on every process: the models are written from the main one
            if step % training["eval_every"] == 0:
                self._evaluate_and_log()
                self.window.reset()
            if training["snapshot_every"] and step % training["snapshot_every"] == 0 and self.dist.is_main:
                self.save_model(self.paths.snapshot(step), self.last_eval)
            if self.dist.any(stop.requested is not None):
                return stop.requested or "signal on another rank"
            if done:
                return "limit"
            if step % training["checkpoint_every"] == 0:
                self._write_checkpoint()

    def _step(self, micro: List[LMBatch]) -> None:
        """One optimizer step on this process's micro-batches, and the position and window updated.

        The step's loss is that of the micro-batches as one batch: each direction's summed
        NLL over its target count in all of them, so each micro-batch's losses are divided
        by the step's total counts (and its distillation loss weighted by its share of the
        teacher's tokens), and their gradients add up to the one batch's. Under DDP the
        gradients are synchronised with the last micro-batch's backward only (`no_sync`)."""
        training = self.config["training"]
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate(self.config, self.position.step)
        self.optimizer.zero_grad(set_to_none=True)
        train_bilm = self.position.step >= training["softmax_warmup_steps"]  # else the softmax alone
        counts = torch.from_numpy(numpy.stack([(b.targets >= 0).reshape(2, -1).sum(1) for b in micro]).sum(0))
        teacher_targets: List[Optional[DistillTargets]] = [None] * len(micro)
        if self.teacher is not None:
            teacher_targets = [DistillTargets(*self.teacher.token_vectors(batch_sentences(b))) for b in micro]
        teacher_tokens = sum(int(t.mask.sum()) for t in teacher_targets if t is not None)
        lm_loss: Any = 0.0
        distill_total = 0.0
        for i, (batch, targets) in enumerate(zip(micro, teacher_targets)):
            last = i == len(micro) - 1
            sync: ContextManager[Any] = contextlib.nullcontext()
            if self.dist.enabled and not last:
                sync = getattr(self.model, "no_sync")()  # DistributedDataParallel's
            with sync:
                with self.autocast:
                    distill_loss = None
                    if targets is not None:
                        losses, _, final, distill_loss = self.model(
                            batch, targets, state=self.carried, generator=self.sampler, train_bilm=train_bilm
                        )
                    else:
                        losses, _, final = self.model(
                            batch, state=self.carried, generator=self.sampler, train_bilm=train_bilm
                        )
                    counts_f = counts.to(losses.device).clamp(min=1).to(losses.dtype)
                    loss = part_loss = 0.5 * (losses / counts_f).sum()
                    if distill_loss is not None and targets is not None:
                        # its share of the step's teacher tokens (exactly 1.0 for a single micro-batch)
                        distill_loss = distill_loss * (int(targets.mask.sum()) / max(1, teacher_tokens))
                        distill_total += float(distill_loss.item())
                        loss = loss + training["distill"]["weight"] * distill_loss
                if self.scaler is not None:
                    self.scaler.scale(loss).backward()
                else:
                    loss.backward()
            lm_loss = part_loss.detach() if i == 0 else lm_loss + part_loss.detach()
            if training["mode"] == "stream":
                self.carried = final.detach()  # the next micro-batch continues these rows
        loss = lm_loss
        step = self.position.step + 1  # this step's number, as log.jsonl and the checkpoint count
        # Checked before the update: a non-finite loss or gradient would put NaN into the weights
        # (with grad_clip, an inf norm makes the clip factor 0, and inf * 0 is NaN), and the
        # checkpoint and model-best written after it would keep them.
        step_loss = loss.item() + distill_total
        n_tokens, losses_bad = int(counts[0]), (0.0 if math.isfinite(step_loss) else 1.0)
        if self.dist.enabled:
            # the step's tokens: every process's batches differ (either layout), so their sum; and
            # whether any process's loss is not finite, so that all of them stop together
            total = torch.tensor([float(counts[0]), losses_bad], device=self.device)
            torch.distributed.all_reduce(total)
            n_tokens, losses_bad = int(total[0].item()), float(total[1].item())
        if losses_bad:
            value = step_loss if not math.isfinite(step_loss) else "inf or NaN on another process"
            raise NonFiniteError(
                f"the loss became {value} at step {step}; stopped before its update (the last checkpoint is "
                "untouched); lower [training] learning_rate or set grad_clip"
            )
        if self.teacher is not None:
            self.distill_window.append(distill_total)
        if self.scaler is not None:
            self.scaler.unscale_(self.optimizer)
        # every trained parameter, the distillation map's too (without distillation: the LM's, as always)
        norm: Optional[torch.Tensor] = None
        if training["grad_clip"]:
            norm = torch.nn.utils.clip_grad_norm_(self.clipped.parameters(), training["grad_clip"])
        elif self.scaler is None:
            norm = gradient_norm(self.clipped.parameters())
        # float16 on a GPU: the gradient scaler skips a step whose gradients overflowed and lowers
        # its scale (its policy, kept); otherwise a non-finite gradient stops the run. Under DDP
        # the gradients are the same on every process, so all stop together.
        if self.scaler is None and norm is not None and not math.isfinite(float(norm)):
            raise NonFiniteError(
                f"the gradient norm became {float(norm)} at step {step}; stopped before its update "
                f"(the last checkpoint is untouched); lower [training] learning_rate"
            )
        if self.scaler is not None:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        self.position.step += 1
        self.position.batches_in_epoch += 1
        self.position.tokens += n_tokens
        self.window.add(lm_loss.item(), n_tokens)  # the LM's loss alone: train_ppl stays a perplexity
        self.bar.update(1)
        if self.bar.n % 10 == 0:
            self.bar.set_postfix(
                loss=f"{self.window.mean_loss():.3f}",
                tok_s=f"{self.window.tokens_per_second():,.0f}",
                dev_ppl=f"{self.last_eval['mean']:.1f}" if self.last_eval else "-",
                refresh=False,
            )

    # -- evaluation, checkpoints and the final models --------------------------------
    def _evaluate_and_log(self) -> None:
        """Dev perplexity (saving model-best on a new best) and a line of log.jsonl (main process)."""
        if not self.dist.is_main:
            return
        metrics = self.evaluate()
        train_loss = self.window.mean_loss()
        row: Dict[str, Any] = {
            "step": self.position.step,
            "epoch": self.position.epoch,
            "tokens": self.position.tokens,
            "elapsed_s": round(time.perf_counter() - self.started, 2),
            "tokens_per_s": round(self.window.tokens_per_second(), 1),
            "lr": self.optimizer.param_groups[0]["lr"],
            "train_loss": train_loss,
            "train_ppl": math.exp(min(50.0, train_loss)) if train_loss is not None else None,
        }
        if self.distill_window:
            row["train_distill_loss"] = sum(self.distill_window) / len(self.distill_window)
            self.distill_window.clear()
        if metrics:
            row.update({f"dev_{k}": v for k, v in metrics.items() if k != "tokens"})
            row["dev_tokens"] = metrics["tokens"]
            if is_better(metrics["mean"], self.position.best):
                self.position.best = metrics["mean"]
                self.save_model(self.paths.model_best, metrics)
                row["best"] = True
            self.last_eval = metrics
            self.bar.set_postfix(dev_ppl=f"{metrics['mean']:.1f}", refresh=False)
        # a step logged already (a resume replaying the steps after its checkpoint, a finished run
        # resumed) gets no second row: with the loss window checkpointed it would be the same one
        if self.position.step > self.logged_step:
            with self.paths.log.open("a", encoding="utf-8") as log:
                log.write(json.dumps(row) + "\n")
            self.logged_step = self.position.step
        self.lm.train()

    def _snapshot(self) -> Dict[str, Any]:
        """Everything a resume needs; collective under DDP (every rank's sampler is gathered)."""
        self.position.elapsed = time.perf_counter() - self.started
        if self.sharded is not None:
            self.position.shards = self.sharded.state()
        samplers: List[Any] = [self.sampler.get_state()]
        rngs: List[Any] = [rng_state(self.device)]
        if self.dist.enabled:  # each process's own: their dropout masks differ from the first step on
            samplers = [None] * self.dist.world_size
            torch.distributed.all_gather_object(samplers, self.sampler.get_state())
            rngs = [None] * self.dist.world_size
            torch.distributed.all_gather_object(rngs, rng_state(self.device))
        self.position.window = self.window.state(self.distill_window)
        self.position.last_eval = self.last_eval
        carried = self.carried
        return {
            "model": self.lm.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "progress": self.position.to_dict(),
            "rng": rngs[0],  # with the training GPU's generator, on a GPU
            **({"rngs": rngs} if len(rngs) > 1 else {}),
            "sampler": samplers,
            "vocab": self.vocab.words,
            # plain lists of tensors: the checkpoint holds no classes (checkpoint.py)
            "carried": None if carried is None else [[t.detach() for t in part] for part in carried],
            "config": self.config.to_str(),
            # where its [paths] were relative to: a resume from another folder compares them as files
            "cwd": os.getcwd(),
            # the provenance of the model it started from, as read when the run started
            "start": self.start_metadata,
            # the distillation's own parameters (its language model is "model")
            **({"distill": distill_state(self.distilled)} if self.distilled is not None else {}),
            # the word table's vocabulary (its rows are in "model"), so a resume needs no table directory
            **({"word_table": self.word_table} if self.word_table else {}),
            # float16 on a GPU: the loss scale, so a resume steps exactly as the run would have
            **({"scaler": self.scaler.state_dict()} if self.scaler is not None else {}),
        }

    def _check_weights(self) -> None:
        """NonFiniteError if any weight is inf or NaN: such weights are never written (the
        last checkpoint and model-best stay as they were)."""
        parts = [("", self.lm.state_dict())]
        if self.distilled is not None:
            parts.append(("distill.", distill_state(self.distilled)))
        for prefix, tensors in parts:
            for name, tensor in tensors.items():
                if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
                    raise NonFiniteError(
                        f"the weights became non-finite ({prefix}{name}) at step {self.position.step}; nothing "
                        f"was written at this step (the last checkpoint is untouched); lower [training] learning_rate"
                    )

    def _write_checkpoint(self) -> None:
        self._check_weights()  # on every process, before the snapshot's collectives
        state = self._snapshot()  # every rank takes part
        if self.dist.is_main:
            save_checkpoint(self.paths.checkpoint, state)

    def _finish(self) -> tuple:
        """After the last step: a last log line, the replicas compared, model-last (and
        model-best if no evaluation made one) and the plot. Returns (final metrics, checksums)."""
        if self.window.count:  # steps since the last row (none: the last step has its row)
            self._evaluate_and_log()
        replicas = check_replicas(self.dist, self.lm, self.paths.log, self.position.step)
        final_metrics = self.evaluate() if self.dist.is_main else None
        if self.dist.is_main:
            # "finished": the run reached its end (scripts tell a finished run from a stopped one by it)
            self.save_model(self.paths.model_last, final_metrics, finished=True)
            # without a dev set model-best is the final model, also when a resume extended the run
            if not self.dev_segments or not self.paths.model_best.exists():
                self.save_model(self.paths.model_best, final_metrics, finished=True)
            plot_perplexity(self.paths.log, self.paths.plot)
        # every process leaves the group together, after the main one has saved: a process
        # that tore its group down while the main one still held the connections could abort
        # in gloo's teardown (tests/pretrain/test_shards.py::test_resume_two_processes_on_one exercises this)
        self.dist.barrier()
        return final_metrics, replicas

    def _leave_group(self) -> None:
        """Drop the DistributedDataParallel wrapper, which holds the process group, then leave the
        group: it is destroyed now, not during interpreter shutdown (see distributed.join_process_group)."""
        if isinstance(self.model, torch.nn.parallel.DistributedDataParallel):
            self.model = self.model.module
        shutdown(self.dist)

    def save_model(self, path: Path, metrics: Optional[Dict[str, float]], finished: bool = False) -> None:
        """The biLM with its softmax and vocabulary, in the native format, with the run's provenance.

        `finished`: the run has reached its end (max_steps, max_epochs or max_minutes), so this
        is its final model; False for a model saved on the way or when a signal stopped the
        run (model-last is written then too, so its existence does not mean the run is done)."""
        position = self.position
        metadata = {
            "trained_with": "spacy_elmo pretrain",
            "finished": finished,
            "init_from": self.config["paths"].get("init_from"),
            "continued_from": self.start_metadata,
            "step": position.step,
            "epoch": position.epoch,
            "tokens_seen": position.tokens,
            "dev_perplexity": metrics,
            "train_tokens_per_epoch": self.train_corpus.n_tokens,
            # the clock now (a checkpoint's figure, position.elapsed, is as old as the last checkpoint)
            "training_seconds": round(time.perf_counter() - self.started, 1),
            "hardware": f"{platform.machine()} {cpu_name()}, torch {torch.__version__}, "
            f"{torch.get_num_threads()} threads, device {self.device}",
            "config": self.config.to_str(),
        }
        if self.teacher is not None:
            # the teacher and the loss weights: what a model card must state
            metadata["distill"] = {**self.config["training"]["distill"], "teacher_dir": str(self.teacher_dir)}
        if self.word_table:
            # where the table's vectors come from, their licence and pruning: what a model card must state
            metadata["word_table"] = self.word_table.get("info")
        self._check_weights()
        was_training = self.lm.training
        save_native(path, self.lm.bilm, self.vocab, self.lm.head, metadata)
        self.lm.train(was_training)


# sentences mode's most segments per batch (sentence_batches' default), for the step estimate
# set by a script that runs `pretrain` for the user (scripts/pretrain.py, adapt.py): what a stopped run says
# to do next, where that is not `--resume` (the script resumes by itself when run again)
RESUME_HINT_ENV = "SPACY_ELMO_RESUME_HINT"
_MAX_BATCH_SEGMENTS = int(inspect.signature(sentence_batches).parameters["max_batch_segments"].default)


def gradient_norm(parameters: Iterator[torch.nn.Parameter]) -> torch.Tensor:
    """The global L2 norm of the parameters' gradients (what clip_grad_norm_ returns), unchanged."""
    norms = [torch.linalg.vector_norm(p.grad.detach(), dtype=torch.float32) for p in parameters if p.grad is not None]
    return torch.linalg.vector_norm(torch.stack(norms)) if norms else torch.zeros(())


def is_better(mean: float, best: Optional[float]) -> bool:
    """Whether a mean dev perplexity beats the best so far: NaN never does, and a NaN best
    (kept by a checkpoint of older code) is beaten by any number."""
    if math.isnan(mean):
        return False
    return best is None or math.isnan(best) or mean < best


def distill_state(distilled: DistilledLM) -> Dict[str, torch.Tensor]:
    """The distillation's own parameters (map, scale, mix), without its language model's: the
    checkpoint's "model" holds those once."""
    return {k: v for k, v in distilled.state_dict().items() if not k.startswith("lm.")}


def load_distill_state(distilled: DistilledLM, saved: Dict[str, torch.Tensor]) -> None:
    """Take back `distill_state`; a checkpoint of older code also repeats the language model
    there under "lm." (the same tensors as its "model"), which is passed over.
    ValueError where a parameter is missing or unknown, RuntimeError where a shape differs."""
    own = {k: v for k, v in saved.items() if not k.startswith("lm.")}
    missing, unexpected = distilled.load_state_dict(own, strict=False)
    missing = [k for k in missing if not k.startswith("lm.")]
    if missing or unexpected:
        raise ValueError(f"its distillation parameters do not fit: missing {missing}, unknown {list(unexpected)}")


def check_stream_processes(config: Config, world_size: int) -> None:
    """Refuse [training] mode = "stream" with several processes (SettingsError).

    Stream mode carries each row's LSTM state from one batch into the next batch of the
    sequence; under torchrun the processes take turns through that sequence, so every
    process would carry its state into a batch that continues another process's rows (and
    only process 0's state would reach the checkpoint)."""
    if world_size > 1 and config["training"]["mode"] == "stream":
        raise SettingsError(
            f'[training] mode = "stream" needs a single process, not {world_size}: it carries each row\'s LSTM '
            "state into the next batch, which under torchrun another process trains on; use "
            'mode = "sentences" with torchrun, or run stream mode in one process'
        )


def check_text_paths(paths: Dict[str, Any]) -> None:
    """SettingsError, naming the setting, for a [paths] train or dev that names nothing, or CoNLL-U
    (read as plain text, its columns became the vocabulary: `= : _ Number 4 Sing`), and for a missing
    [paths] vocab: each used to be found only after the whole training text was tokenized, or never."""
    for key in ("train", "dev"):
        if not paths.get(key):
            continue
        try:
            files = expand_paths(paths[key])
        except FileNotFoundError as err:
            raise SettingsError(f"[paths] {key}: {err}") from None
        conllu = [path for path in files if path.name.lower().endswith((".conllu", ".conll", ".conllu.gz"))]
        if conllu:
            raise SettingsError(f"[paths] {key}: {conllu[0]} is CoNLL-U, which pretraining would read as plain text "
                                f"(its columns as words); convert it first: python -m spacy_elmo corpus ud "
                                f"{conllu[0]} OUT.spacy")
    if paths.get("vocab") and not Path(paths["vocab"]).is_file():
        raise SettingsError(f"[paths] vocab = {paths['vocab']!r}: no such file")


def run_finished(output_dir: PathLike) -> bool:
    """Whether the pretraining run in `output_dir` has reached its end, so it needs no resume.

    model-last exists once a run has finished, but also once a signal stopped it, so its
    existence says nothing: its elmo.json's metadata "finished" does. A model-last written
    before that field existed counts as finished when its step or epoch reached its config's
    max_steps or max_epochs (one stopped by max_minutes then resumes, and stops at once).

    A finished run resumed with other limits (a larger max_steps) and stopped before its new end
    is not finished: the run's config.cfg, written when the resume started, then holds limits
    that model-last's own config does not."""
    paths = RunPaths(Path(output_dir))
    try:
        metadata = read_meta(paths.model_last).get("metadata") or {}
    except WeightsError:
        return False  # no model-last (or an unreadable one): not finished
    if "finished" in metadata:
        return bool(metadata["finished"]) and not _limits_changed(metadata.get("config"), paths.config)
    try:
        training = Config().from_str(metadata.get("config") or "", interpolate=False).get("training", {})
        max_steps, max_epochs = int(training.get("max_steps", 0)), int(training.get("max_epochs", 0))
        step, epoch = int(metadata.get("step", 0)), int(metadata.get("epoch", 0))
    except (ValueError, TypeError, KeyError, configparser.Error):  # no readable limits: resume to be sure
        return False
    return bool((max_steps and step >= max_steps) or (max_epochs and epoch >= max_epochs))


def _limits_changed(model_config: Optional[str], run_config: Path) -> bool:
    """Whether the run's config.cfg sets other [training] limits (max_steps, max_epochs, max_minutes)
    than the config a model was saved with (False where either cannot be read)."""
    def limits(text: str) -> Tuple[Any, ...]:
        training = Config().from_str(text, interpolate=False).get("training", {})
        return tuple(training.get(key) for key in ("max_steps", "max_epochs", "max_minutes"))

    try:
        return bool(model_config) and limits(str(model_config)) != limits(run_config.read_text(encoding="utf-8"))
    except (OSError, ValueError, configparser.Error):
        return False


def pretrain(config: Config, output_dir: PathLike, resume: bool = False, device: Optional[str] = None,
             progress: bool = True) -> Dict[str, Any]:
    """Train a biLM as `config` says; see the module docstring for what is written."""
    return Trainer(config, output_dir, device=device, progress=progress).run(resume=resume)


__all__ = [
    "pretrain", "Trainer", "Interrupted", "NonFiniteError", "build_language_model", "check_stream_processes",
    "run_finished",
]
