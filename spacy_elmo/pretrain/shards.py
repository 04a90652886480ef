"""The training text split into shares, dealt to the processes of a run.

Under `[corpus] shard = "files"` (the default under torchrun in `sentences`
mode) the corpus is a list of shares, fixed when a run starts and kept in its
checkpoint:

* one share per file when there are at least as many files as processes;
* else every file is cut into `world / gcd(n_files, world)` parts by lines, so
  that every process gets as many shares: part p of P holds the file's
  non-empty lines p, p + P, p + 2P, ... (`corpus.py`).

Each epoch deals the shares round-robin: process r of W takes shares r, r + W,
r + 2W, ... Every process tokenizes (and caches) only the shares it is dealt,
and reads only its own batches. A share's batch sequence depends only on
(seed, epoch, share), never on the world size, so a position in the epoch is,
per share, the number of batches taken from it and whether it is finished:
that is what a checkpoint records (with the deal), and what a resume at
another world size continues from, dealing the unfinished shares round-robin
over the new processes. A run needs at least one share per process: a resume
with more processes than the checkpoint's shares is refused (`fit_shares`).

An epoch ends when any process runs out of batches (every step needs one
batch per process): the other processes' remaining batches of that epoch are
not read. So that this cut never falls on the same text, a process reads its
k shares one after another starting, in epoch e, at its (e mod k)-th (in
share order): a share cut off (or never reached) in one epoch is read first
in a later one. The order is a function of the epoch and the deal alone, so a
resumed run reads what an uninterrupted one would. Files of similar sizes, as
many as the processes or a multiple, waste least.
"""
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import torch.distributed as dist

from ..bilm.language_model import LMBatch
from .batching import skip
from .text_corpus import TokenizedCorpus
from .distributed import Dist


@dataclass(frozen=True)
class Share:
    """Part `part` of `parts` of the file with index `file` in the run's file list."""

    file: int
    part: int = 0
    parts: int = 1

    def to_list(self) -> List[int]:
        return [self.file, self.part, self.parts]


def plan_shares(n_files: int, world_size: int) -> List[Share]:
    """The shares of `n_files` files for `world_size` processes (module docstring)."""
    if n_files < 1:
        raise ValueError("no training files to share")
    if n_files >= world_size:
        return [Share(i) for i in range(n_files)]
    # as many parts as make the shares a multiple of the processes: each process gets as many
    parts = world_size // math.gcd(n_files, world_size)
    return [Share(i, p, parts) for i in range(n_files) for p in range(parts)]


def fit_shares(n_shares: int, world_size: int) -> None:
    """ValueError when `n_shares` are fewer than the processes: a process without a share has no
    batch, so every epoch would end before its first step (a resumed run would then burn its
    remaining epochs without training and call itself finished)."""
    if n_shares < world_size:
        raise ValueError(
            f"its text is {n_shares} share(s), fewer than the {world_size} processes of this run (each process "
            f"needs a share of its own): resume with at most {n_shares} process(es)"
        )


def deal(shares: List[int], world_size: int) -> Dict[int, int]:
    """Share id -> process: round-robin over `shares` in the order given."""
    return {share: i % world_size for i, share in enumerate(shares)}


class ShardedCorpus:
    """This process's view of a sharded corpus: the deal, its own shares' corpora and
    the position in the epoch of every share.

    Each process updates only the positions of the shares it owns; `gather`
    combines every owner's positions (a collective under DDP)."""

    def __init__(
        self,
        files: List[Path],
        shares: List[Share],
        prepare: Callable[[Path, Share], TokenizedCorpus],
        dist_state: Dist,
    ) -> None:
        self.files = files
        self.shares = shares
        self.prepare = prepare
        self.dist = dist_state
        self.opened: Dict[int, TokenizedCorpus] = {}
        self.owner: List[int] = []
        self.taken: List[int] = []
        self.done: List[int] = []
        self.new_epoch()
        self.totals: Dict[str, Any] = {}

    @property
    def world_size(self) -> int:
        return self.dist.world_size

    def corpus(self, share: int) -> TokenizedCorpus:
        """The share's tokenized corpus (tokenized on first use, then from the cache)."""
        if share not in self.opened:
            self.opened[share] = self.prepare(self.files[self.shares[share].file], self.shares[share])
        return self.opened[share]

    def mine(self, epoch: int = 0) -> List[int]:
        """This process's unfinished shares of `epoch`, in the order it reads them: its shares in
        share order, rotated to start at its (epoch mod k)-th of k, so that the share the epoch's
        end cuts off changes from epoch to epoch (module docstring). The rotation is over all its
        shares, finished ones too, so the order holds while they finish, and after a resume."""
        own = [s for s in range(len(self.shares)) if self.owner[s] == self.dist.rank]
        if own:
            turn = epoch % len(own)
            own = own[turn:] + own[:turn]
        return [s for s in own if not self.done[s]]

    def first_deal(self) -> List[int]:
        """This process's shares as a fresh epoch deals them, in share order: the same whatever the
        run's progress (what a resumed run must read where a fresh one read `mine()`)."""
        standard = deal(list(range(len(self.shares))), self.world_size)
        return [s for s in range(len(self.shares)) if standard[s] == self.dist.rank]

    def new_epoch(self) -> None:
        """Every share unread, dealt round-robin over this run's processes."""
        n = len(self.shares)
        owner = deal(list(range(n)), self.world_size)
        self.owner = [owner[s] for s in range(n)]
        self.taken = [0] * n
        self.done = [0] * n

    def prepare_all(self, need_counts: bool) -> None:
        """Tokenize this process's shares of a fresh epoch's deal (and of the current one),
        then learn every share's token count (and word counts) from their owners."""
        standard = deal(list(range(len(self.shares))), self.world_size)
        own = sorted(set(self.first_deal()) | set(self.mine()))
        local: Dict[int, Tuple[int, Optional[Dict[str, int]]]] = {}
        for share in own:
            corpus = self.corpus(share)
            if standard[share] == self.dist.rank:  # each share counted once, by its standard owner
                local[share] = (corpus.n_tokens, dict(corpus.counts()) if need_counts else None)
        gathered: List[Any] = [local]
        if self.dist.enabled:
            gathered = [None] * self.world_size
            # shares differ in size: a process may tokenize for hours longer than another
            dist.all_gather_object(gathered, local, group=self.dist.waiting_group)
        merged: Dict[int, Tuple[int, Optional[Dict[str, int]]]] = {}
        for part in gathered:
            merged.update(part)
        self.totals = {
            "tokens": sum(merged[s][0] for s in sorted(merged)),
            "counts": None,
        }
        if need_counts:
            counts: Counter = Counter()
            for share in sorted(merged):
                counts.update(merged[share][1] or {})
            self.totals["counts"] = counts
        if self.totals["tokens"] == 0:
            raise ValueError(f"no tokens found in {[str(f) for f in self.files]}")

    # the TokenizedCorpus-like interface the trainer reads
    @property
    def n_tokens(self) -> int:
        return int(self.totals["tokens"])

    def counts(self) -> Counter:
        if self.totals.get("counts") is None:
            raise RuntimeError("the word counts were not gathered (prepare_all(need_counts=True))")
        return self.totals["counts"]

    def batches(self, make: Callable[[TokenizedCorpus, int], Iterator[LMBatch]],
                epoch: int = 0) -> Iterator[Tuple[int, LMBatch]]:
        """(share, batch) of this process's unfinished shares in `epoch`'s order (`mine`), each
        resumed after the batches already taken from it; a share is marked finished when it runs dry."""
        for share in self.mine(epoch):
            for batch in skip(make(self.corpus(share), share), self.taken[share]):
                yield share, batch
            self.done[share] = 1

    def took(self, share: int) -> None:
        self.taken[share] += 1

    # -- checkpoints ----------------------------------------------------------------
    def state(self) -> Dict[str, Any]:
        """Every share's position, each from its owner (collective under DDP)."""
        mine = {"taken": self.taken, "done": self.done}
        gathered: List[Any] = [mine]
        if self.dist.enabled:
            gathered = [None] * self.world_size
            dist.all_gather_object(gathered, mine)
        n = len(self.shares)
        return {
            "files": [str(f) for f in self.files],
            "shares": [s.to_list() for s in self.shares],
            "owner": list(self.owner),
            "world_size": self.world_size,
            "taken": [int(gathered[self.owner[s]]["taken"][s]) for s in range(n)],
            "done": [int(gathered[self.owner[s]]["done"][s]) for s in range(n)],
        }

    def restore(self, state: Dict[str, Any]) -> None:
        """The checkpoint's positions; at another world size the unfinished shares are
        dealt round-robin (ascending) over this run's processes."""
        n = len(self.shares)
        if not all(len(state[key]) == n for key in ("taken", "done", "owner")):
            raise ValueError(f"positions of {len(state['taken'])} shares for {n} shares")
        self.taken = [int(v) for v in state["taken"]]
        self.done = [int(v) for v in state["done"]]
        if int(state["world_size"]) == self.world_size:
            self.owner = [int(v) for v in state["owner"]]
        else:
            unfinished = [s for s in range(len(self.shares)) if not self.done[s]]
            owner = deal(unfinished, self.world_size)
            self.owner = [owner.get(s, 0) for s in range(len(self.shares))]


def shares_from_state(state: Dict[str, Any], files: List[Path], world_size: int = 1) -> List[Share]:
    """The checkpoint's shares, checked against the run's files and its `world_size` processes
    (ValueError if the files differ, or if there are fewer shares than processes: `fit_shares`)."""
    saved = [str(f) for f in state["files"]]
    if saved != [str(f) for f in files]:
        raise ValueError(f"the training files differ from the checkpoint's: {saved} vs {[str(f) for f in files]}")
    shares = [Share(*map(int, s)) for s in state["shares"]]
    fit_shares(len(shares), world_size)
    return shares


__all__ = ["Share", "ShardedCorpus", "deal", "fit_shares", "plan_shares", "shares_from_state"]
