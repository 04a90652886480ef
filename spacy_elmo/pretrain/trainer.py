"""The pretraining loop: corpus -> vocabulary -> biLM + softmax -> checkpoints and models.

    pretrain(config, output_dir)           a fresh run
    pretrain(config, output_dir, resume=True)   continue from output_dir/checkpoint.pt

With [paths] init_from = MODEL_DIR (or "embedded", the package's own biLM),
a new run starts from that native model's weights with a fresh optimizer and
schedule: training continues across runs without keeping optimizer state.

Output directory:
    model-best/, model-last/   native format (with softmax), loadable by the `elmo` component
    checkpoint.pt              everything needed to resume exactly
    log.jsonl                  one JSON object per evaluation
    perplexity.png             training and dev curves
    config.cfg                 the resolved config of the run
"""
import json
import math
import platform
import signal
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Dict, Iterator, Optional, Union

import numpy
import torch
from thinc.api import Config
from tqdm import tqdm

from ..bilm.config import BiLMConfig
from ..bilm.heads import SoftmaxHead
from ..bilm.language_model import LanguageModel, LMBatch
from ..bilm.model import BiLM
from ..bilm.vocab import Vocabulary
from ..faults import fault_point
from ..io.errors import WeightsError
from ..io.native import NativeModel, is_native, load_native, save_native
from ..resources import default_model_path
from .batching import sentence_batches, shuffled, skip, stream_batches
from .checkpoint import load_checkpoint, rng_state, save_checkpoint, set_rng_state
from .corpus import TokenizedCorpus, iter_segments
from .distributed import Dist, init_distributed, shutdown
from .plot import plot_perplexity
from .settings import RunPaths, SettingsError

PathLike = Union[str, Path]

# [paths] init_from value that names the package's embedded biLM
EMBEDDED_MODEL = "embedded"


class Interrupted(Exception):
    """Training stopped on SIGINT/SIGTERM after writing a checkpoint."""


class _StopFlag:
    """Turns SIGINT/SIGTERM into a request to checkpoint and stop; a second signal aborts."""

    def __init__(self) -> None:
        self.requested: Optional[str] = None
        self._previous: Dict[int, Any] = {}

    def __enter__(self) -> "_StopFlag":
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                self._previous[sig] = signal.signal(sig, self._handle)
            except ValueError:  # not the main thread
                pass
        return self

    def _handle(self, signum, frame) -> None:
        if self.requested is not None:
            raise KeyboardInterrupt
        self.requested = signal.Signals(signum).name

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


def build_language_model(config: Config, vocab: Vocabulary, seed: int) -> LanguageModel:
    model_cfg = dict(config["model"])
    model_cfg["filters"] = [tuple(f) for f in model_cfg["filters"]]
    if not model_cfg.get("use_character_inputs", True):
        model_cfg["n_tokens_vocab"] = len(vocab)
    try:
        bilm_config = BiLMConfig(**model_cfg)
    except TypeError as err:
        raise SettingsError(f"[model]: {err}") from None
    bilm = BiLM(
        bilm_config,
        vocab=vocab if not bilm_config.use_character_inputs else None,
        boundary_strings=config["training"]["mode"] == "stream",
    )
    bilm.reset_parameters(seed)
    softmax = config["softmax"]
    head = SoftmaxHead(len(vocab), bilm_config.projection_dim, softmax["kind"], softmax["n_samples"])
    head.reset_parameters(torch.Generator().manual_seed(seed + 1))
    return LanguageModel(bilm, vocab, head)


def _optimizer(config: Config, params) -> torch.optim.Optimizer:
    training = config["training"]
    lr = training["learning_rate"]
    if training["optimizer"] == "adagrad":
        # bilm-tf: tf.train.AdagradOptimizer(lr, initial_accumulator_value=1.0)
        return torch.optim.Adagrad(params, lr=lr, initial_accumulator_value=1.0)
    if training["optimizer"] == "adam":
        return torch.optim.Adam(params, lr=lr)
    return torch.optim.SGD(params, lr=lr)


def _learning_rate(config: Config, step: int) -> float:
    training = config["training"]
    base = training["learning_rate"]
    warmup = training["warmup_steps"]
    if warmup and step < warmup:
        return base * (step + 1) / warmup
    total = training["max_steps"]
    if training["schedule"] == "constant" or not total:
        return base
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    if training["schedule"] == "linear":
        return base * (1.0 - progress)
    return base * 0.5 * (1.0 + math.cos(math.pi * progress))


class Trainer:
    def __init__(
        self,
        config: Config,
        output_dir: PathLike,
        device: Optional[str] = None,
        progress: bool = True,
    ) -> None:
        self.config = config
        self.paths = RunPaths(Path(output_dir))
        self.progress = progress
        # the device per rank (LOCAL_RANK's GPU under torchrun), set before any collective
        self.dist: Dist = init_distributed(device)
        self.device = self.dist.device
        training = config["training"]
        if training["threads"]:
            torch.set_num_threads(int(training["threads"]))
        self.seed = int(training["seed"])
        # provenance of the model this run started from ([paths] init_from), if any
        self.start_metadata: Optional[Dict[str, Any]] = None

    # -- data ---------------------------------------------------------------------
    def prepare_data(self) -> None:
        corpus_cfg = self.config["corpus"]
        paths = self.config["paths"]
        if not paths["train"]:
            raise SettingsError("no training text: set [paths] train (or --paths.train FILE)")
        cache = Path(paths["cache"]) if paths["cache"] else self.paths.corpus_cache
        kwargs = dict(lang=corpus_cfg["lang"], max_length=corpus_cfg["max_length"], progress=self.progress)
        # the main process tokenizes; the others wait and then read its cache
        for turn in ("main", "others"):
            if (turn == "main") == self.dist.is_main:
                self.train_corpus = TokenizedCorpus.prepare(
                    paths["train"], cache, max_segments=corpus_cfg["max_segments"], **kwargs
                )
            self.dist.barrier()
        self.dev_segments = None
        if paths["dev"]:
            dev = TokenizedCorpus.prepare(paths["dev"], cache, **kwargs)
            self.dev_segments = list(iter_segments(dev, corpus_cfg["dev_max_tokens"]))

    def build_vocab(self) -> Vocabulary:
        vocab_path = self.config["paths"]["vocab"]
        if vocab_path:
            return Vocabulary.from_file(vocab_path)
        counts = self.train_corpus.counts()
        return Vocabulary.from_counts(counts, self.config["vocab"]["max_size"], self.config["vocab"]["min_count"])

    def batches(self, epoch: int) -> Iterator[LMBatch]:
        training = self.config["training"]
        seed = self.seed * 1000 + epoch
        if training["mode"] == "stream":
            return stream_batches(
                lambda: shuffled(self.train_corpus.segments(), seed),
                self.vocab,
                training["batch_size"],
                training["unroll_steps"],
            )
        return sentence_batches(self.train_corpus.segments(), self.vocab, training["batch_tokens"], seed)

    # -- evaluation ---------------------------------------------------------------
    def evaluate(self) -> Optional[Dict[str, float]]:
        if not self.dev_segments:
            return None
        return self.lm.perplexity(self.dev_segments, batch_tokens=self.config["training"]["batch_tokens"])

    # -- the loop -----------------------------------------------------------------
    def run(self, resume: bool = False) -> Dict[str, Any]:
        training = self.config["training"]
        self.paths.root.mkdir(parents=True, exist_ok=True)
        if self.dist.is_main and not resume and self.paths.checkpoint.exists():
            raise SettingsError(
                f"{self.paths.root} already holds a run (checkpoint.pt); pass --resume to continue it "
                "or choose another output directory"
            )
        self.prepare_data()
        state = load_checkpoint(self.paths.checkpoint) if resume else None
        start_model = None
        if state is not None:
            self._check_resume_config(state.get("config"))
            self.vocab = Vocabulary(state["vocab"])
        else:
            start_model = self._start_model()
            has_softmax = start_model is not None and start_model.head is not None
            self.vocab = start_model.vocab if has_softmax else self.build_vocab()
        torch.manual_seed(self.seed)
        numpy.random.seed(self.seed % (2**32))
        self.lm = build_language_model(self.config, self.vocab, self.seed).to(self.device)
        if start_model is not None:
            self._continue_from(start_model)
        model: torch.nn.Module = self.lm
        if self.dist.enabled:
            model = torch.nn.parallel.DistributedDataParallel(
                self.lm,
                device_ids=[self.device.index] if self.device.type == "cuda" else None,
                find_unused_parameters=self.config["softmax"]["kind"] == "adaptive"
                or training["softmax_warmup_steps"] > 0,
            )
        optimizer = _optimizer(self.config, self.lm.parameters())
        sampler = torch.Generator().manual_seed(self.seed + 7919 * (self.dist.rank + 1))
        progress_state = {"step": 0, "epoch": 0, "batches_in_epoch": 0, "tokens": 0, "elapsed": 0.0, "best": None}
        carried = None
        if state is not None:
            from ..bilm.lstm import LSTMState
            from .checkpoint import CheckpointError

            try:
                self.lm.load_state_dict(state["model"])
                optimizer.load_state_dict(state["optimizer"])
                progress_state.update(state["progress"])
                set_rng_state(state["rng"])
                sampler.set_state(state["sampler"][self.dist.rank] if self.dist.rank < len(state["sampler"]) else state["sampler"][0])
                carried = state.get("carried")
                if carried is not None:
                    carried = LSTMState(*(tuple(t.to(self.device) for t in part) for part in carried))
            except (RuntimeError, ValueError, TypeError, KeyError, IndexError) as err:
                raise CheckpointError(f"{self.paths.checkpoint}: does not fit this run: {err}") from None
        if self.dist.is_main:
            self.paths.config.write_text(self.config.to_str(), encoding="utf-8")
            self.vocab.to_file(self.paths.root / "vocab.txt")

        max_steps = int(training["max_steps"])
        max_seconds = float(training["max_minutes"]) * 60.0
        stream = training["mode"] == "stream"
        world = self.dist.world_size
        precision = training["precision"]
        autocast = (
            torch.autocast(device_type=self.device.type, dtype=getattr(torch, precision))
            if precision != "float32" and self.device.type == "cuda"
            else nullcontext()
        )
        scaler = torch.amp.GradScaler("cuda") if precision == "float16" and self.device.type == "cuda" else None
        est_steps = max_steps or int(
            training["max_epochs"] * self.train_corpus.n_tokens / max(1, training["batch_tokens"] * world)
        )
        bar = tqdm(
            total=est_steps,
            initial=progress_state["step"],
            desc="pretraining",
            unit="step",
            disable=not (self.progress and self.dist.is_main),
            dynamic_ncols=True,
        )
        window = {"loss": 0.0, "count": 0, "tokens": 0, "start": time.perf_counter()}
        started = time.perf_counter() - progress_state["elapsed"]
        last_eval: Optional[Dict[str, float]] = None
        stopped_by: Optional[str] = None
        self.lm.train()

        def snapshot() -> Dict[str, Any]:
            progress_state["elapsed"] = time.perf_counter() - started
            samplers = [sampler.get_state()]
            if self.dist.enabled:
                gathered = [None] * world
                torch.distributed.all_gather_object(gathered, sampler.get_state())
                samplers = gathered
            return {
                "model": self.lm.state_dict(),
                "optimizer": optimizer.state_dict(),
                "progress": dict(progress_state),
                "rng": rng_state(),
                "sampler": samplers,
                "vocab": self.vocab.words,
                # plain lists of tensors: the checkpoint holds no classes (checkpoint.py)
                "carried": None if carried is None else [[t.detach() for t in part] for part in carried],
                "config": self.config.to_str(),
            }

        def checkpoint() -> None:
            state_now = snapshot()  # collective under DDP: every rank takes part
            if self.dist.is_main:
                save_checkpoint(self.paths.checkpoint, state_now)

        def evaluate_and_log() -> None:
            nonlocal last_eval
            if not self.dist.is_main:
                return
            metrics = self.evaluate()
            elapsed = time.perf_counter() - started
            window_time = max(1e-9, time.perf_counter() - window["start"])
            row: Dict[str, Any] = {
                "step": progress_state["step"],
                "epoch": progress_state["epoch"],
                "tokens": progress_state["tokens"],
                "elapsed_s": round(elapsed, 2),
                "tokens_per_s": round(window["tokens"] / window_time, 1),
                "lr": optimizer.param_groups[0]["lr"],
                "train_loss": window["loss"] / window["count"] if window["count"] else None,
            }
            row["train_ppl"] = math.exp(min(50.0, row["train_loss"])) if row["train_loss"] is not None else None
            if metrics:
                row.update({f"dev_{k}": v for k, v in metrics.items() if k != "tokens"})
                row["dev_tokens"] = metrics["tokens"]
                best = progress_state["best"]
                if best is None or metrics["mean"] < best:
                    progress_state["best"] = metrics["mean"]
                    self.save_model(self.paths.model_best, progress_state, metrics)
                    row["best"] = True
                last_eval = metrics
                bar.set_postfix(dev_ppl=f"{metrics['mean']:.1f}", refresh=False)
            with self.paths.log.open("a", encoding="utf-8") as log:
                log.write(json.dumps(row) + "\n")
            self.lm.train()

        try:
            with _StopFlag() as stop:
                epoch = progress_state["epoch"]
                while epoch < training["max_epochs"] and stopped_by is None:
                    batches = skip(self.batches(epoch), progress_state["batches_in_epoch"] * world)
                    if not stream:
                        carried = None
                    while True:
                        group = [next(batches, None) for _ in range(world)]
                        if any(b is None for b in group):
                            break
                        batch = group[self.dist.rank]
                        for group_ in optimizer.param_groups:
                            group_["lr"] = _learning_rate(self.config, progress_state["step"])
                        optimizer.zero_grad(set_to_none=True)
                        with autocast:
                            train_bilm = progress_state["step"] >= training["softmax_warmup_steps"]
                            losses, counts, final = model(batch, state=carried, generator=sampler, train_bilm=train_bilm)
                            counts_f = counts.to(losses.device).clamp(min=1).to(losses.dtype)
                            loss = 0.5 * (losses / counts_f).sum()
                        if scaler is not None:
                            scaler.scale(loss).backward()
                            scaler.unscale_(optimizer)
                        else:
                            loss.backward()
                        if training["grad_clip"]:
                            torch.nn.utils.clip_grad_norm_(self.lm.parameters(), training["grad_clip"])
                        if scaler is not None:
                            scaler.step(optimizer)
                            scaler.update()
                        else:
                            optimizer.step()
                        if stream:
                            carried = final.detach()
                        if not math.isfinite(loss.item()):
                            raise FloatingPointError(
                                f"loss became {loss.item()} at step {progress_state['step']}; lower "
                                "[training] learning_rate or set grad_clip"
                            )
                        n_tokens = int(counts[0]) * world
                        progress_state["step"] += 1
                        progress_state["batches_in_epoch"] += 1
                        progress_state["tokens"] += n_tokens
                        window["loss"] += loss.item()
                        window["count"] += 1
                        window["tokens"] += n_tokens
                        bar.update(1)
                        if bar.n % 10 == 0:
                            rate = window["tokens"] / max(1e-9, time.perf_counter() - window["start"])
                            bar.set_postfix(
                                loss=f"{window['loss'] / window['count']:.3f}",
                                tok_s=f"{rate:,.0f}",
                                dev_ppl=f"{last_eval['mean']:.1f}" if last_eval else "-",
                                refresh=False,
                            )
                        step = progress_state["step"]
                        fault_point("pretrain.step")  # tests inject kills and signals here (faults.py)
                        done = (max_steps and step >= max_steps) or (
                            max_seconds and time.perf_counter() - started >= max_seconds
                        )
                        if step % training["eval_every"] == 0:
                            evaluate_and_log()
                            window.update(loss=0.0, count=0, tokens=0, start=time.perf_counter())
                        if self.dist.any(stop.requested is not None):
                            stopped_by = stop.requested or "signal on another rank"
                            break
                        if done:
                            stopped_by = "limit"
                            break
                        if step % training["checkpoint_every"] == 0:
                            checkpoint()
                    if stopped_by is None:
                        epoch += 1
                        progress_state["epoch"] = epoch
                        progress_state["batches_in_epoch"] = 0
                checkpoint()
                if stopped_by not in (None, "limit"):
                    if self.dist.is_main:
                        self.save_model(self.paths.model_last, progress_state, last_eval)
                    raise Interrupted(
                        f"stopped by {stopped_by} at step {progress_state['step']}; checkpoint written to "
                        f"{self.paths.checkpoint}; continue with --resume"
                    )
                if window["count"] or last_eval is None:
                    evaluate_and_log()
                replicas = self._check_replicas()
                final_metrics = self.evaluate() if self.dist.is_main else None
                if self.dist.is_main:
                    self.save_model(self.paths.model_last, progress_state, final_metrics)
                    if not self.paths.model_best.exists():
                        self.save_model(self.paths.model_best, progress_state, final_metrics)
                    plot_perplexity(self.paths.log, self.paths.plot)
        finally:
            bar.close()
            shutdown(self.dist)
        return {
            "step": progress_state["step"],
            "epoch": progress_state["epoch"],
            "tokens": progress_state["tokens"],
            "elapsed_s": time.perf_counter() - started,
            "dev": final_metrics,
            "output": str(self.paths.root),
            "replica_checksums": replicas,
        }

    def _start_model(self) -> Optional[NativeModel]:
        """The native model named by [paths] init_from (None for a run from scratch).

        Its architecture replaces the config's [model] settings (dropout, a
        training setting, stays the config's), so that the run's config.cfg
        describes what is trained and a resume checks against it.
        """
        source = self.config["paths"].get("init_from")
        if not source:
            return None
        path = default_model_path() if source == EMBEDDED_MODEL else Path(source)
        if not is_native(path):
            raise SettingsError(
                f"[paths] init_from = {source!r}: not a native spacy-elmo model directory (no elmo.json); "
                "convert a published model first with `spacy_elmo convert DIR OUT --to native`"
            )
        try:
            start = load_native(path)
        except WeightsError as err:
            raise SettingsError(f"[paths] init_from: {err}") from None
        model_cfg = self.config["model"]
        arch = start.bilm.config.to_dict()
        changed = []
        for key in model_cfg:
            if key in arch and key != "dropout":
                before, after = model_cfg[key], arch[key]
                if key == "filters":
                    before, after = [list(f) for f in before], [list(f) for f in after]
                if before != after:
                    changed.append(f"{key}: {before!r} -> {after!r}")
                model_cfg[key] = after
        if changed and self.dist.is_main:
            from wasabi import msg

            msg.info(f"[model] taken from {path}: " + "; ".join(changed))
        if start.head is not None and start.head.kind != self.config["softmax"]["kind"]:
            start.head = None  # another kind of softmax: trained afresh
        return start

    def _continue_from(self, start: NativeModel) -> None:
        """Load the start model's weights into the fresh language model.

        A start model without a softmax (the shipped one) gets a new one whose
        bias is the log unigram frequency of each word: the first steps then
        refine the biLM instead of undoing it while the softmax catches up.
        """
        meta = start.metadata
        self.start_metadata = {k: meta.get(k) for k in ("init_from", "tokens_seen", "training_seconds", "continued_from")}
        with torch.no_grad():
            self.lm.bilm.load_state_dict(start.bilm.state_dict())
            if start.head is not None:
                self.lm.head.load_state_dict(start.head.state_dict())
            elif self.lm.head.kind != "adaptive":
                counts = self.train_corpus.counts()
                total = sum(counts.values())
                freq = torch.tensor([counts.get(w, 0) + 1.0 for w in self.vocab.words], dtype=torch.float64)
                self.lm.head.bias.copy_(torch.log(freq / (total + len(self.vocab))))
        self.lm.bilm.clear_cache()

    def _check_resume_config(self, saved: Optional[str]) -> None:
        """The architecture must not change on resume; other changes are allowed but reported."""
        if not saved:
            return
        old = Config().from_str(saved, interpolate=False)
        structural, other = [], []
        for section in self.config:
            for key, value in self.config[section].items():
                before = old.get(section, {}).get(key)
                if before != value:
                    (structural if section in ("model", "softmax", "vocab") else other).append(
                        f"[{section}] {key}: {before!r} -> {value!r}"
                    )
        if structural:
            raise SettingsError(
                f"{self.paths.checkpoint} was trained with a different architecture; cannot resume with "
                + "; ".join(structural)
            )
        if other and self.dist.is_main:
            from wasabi import msg

            msg.warn("Resuming with changed settings (the run will differ from an uninterrupted one): " + "; ".join(other))

    def _check_replicas(self) -> Optional[list]:
        """Under DDP, every replica must hold the same weights: compare checksums."""
        if not self.dist.enabled:
            return None
        import hashlib

        digest = hashlib.sha1()
        for tensor in self.lm.state_dict().values():
            digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
        checksums = [None] * self.dist.world_size
        torch.distributed.all_gather_object(checksums, digest.hexdigest())
        if self.dist.is_main:
            with self.paths.log.open("a", encoding="utf-8") as log:
                log.write(json.dumps({"replica_checksums": checksums}) + "\n")
        if len(set(checksums)) != 1:
            raise RuntimeError(f"data-parallel replicas diverged: weight checksums {checksums}")
        return checksums

    def save_model(self, path: Path, progress_state: Dict[str, Any], metrics: Optional[Dict[str, float]]) -> None:
        metadata = {
            "trained_with": "spacy_elmo pretrain",
            "init_from": self.config["paths"].get("init_from"),
            "continued_from": self.start_metadata,
            "step": progress_state["step"],
            "epoch": progress_state["epoch"],
            "tokens_seen": progress_state["tokens"],
            "dev_perplexity": metrics,
            "train_tokens_per_epoch": self.train_corpus.n_tokens,
            "training_seconds": round(progress_state.get("elapsed", 0.0), 1),
            "hardware": f"{platform.machine()} {platform.processor() or ''}, torch {torch.__version__}, "
            f"{torch.get_num_threads()} threads, device {self.device}",
            "config": self.config.to_str(),
        }
        was_training = self.lm.training
        save_native(path, self.lm.bilm, self.vocab, self.lm.head, metadata)
        self.lm.train(was_training)


def pretrain(
    config: Config,
    output_dir: PathLike,
    resume: bool = False,
    device: Optional[str] = None,
    progress: bool = True,
) -> Dict[str, Any]:
    """Train a biLM as `config` says; see the module docstring for what is written."""
    return Trainer(config, output_dir, device=device, progress=progress).run(resume=resume)


__all__ = ["pretrain", "Trainer", "Interrupted", "build_language_model"]
