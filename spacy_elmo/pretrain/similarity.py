"""A distillation loss on the layer's own angles: `[training.distill] loss = "similarity"`.

The regression loss (`distill.py`) fits a learned map from the layer to the
teacher's vectors; a map can read what the teacher knows from directions too
small to move the layer's cosines, and the word-sense probe reads cosines.
This loss has no map. It compares occurrences of the same word in different
sentences, the pairs a nearest-neighbour sense probe compares: for each
occurrence (the anchor), the softmax of its cosines to the word's other
occurrences, in the layer, should match the same softmax in the teacher's
targets (a KL divergence, as in similarity-preserving distillation). Only the
ranking among a word's own occurrences is taught, so the layer keeps what
tells one word from another (what the language model needs).

Within one batch few rarer words occur twice, so the other occurrences come
from a memory bank of the last `bank_tokens` tokens' vectors (detached: the
gradient reaches the anchor only), as in momentum-contrast training. The bank
is not checkpointed: a resumed run refills it from its next steps.
"""
from collections import deque
from typing import Collection, Deque, Dict, List, Optional, Sequence, Tuple

import torch
from torch import nn


class SameWordSimilarity:
    """The loss of one run, with its bank of recent occurrences.

    `bank_tokens`: occurrences kept (0: partners come from the batch itself
    only); `partners`: each anchor compares at most this many of its word's
    most recent other occurrences; `temperature`: the softmaxes' (cosines are
    divided by it, in both the layer and the targets); `skip_words`: words
    (lower-cased) that are neither anchors nor partners, e.g. the most frequent
    ones, whose occurrences would otherwise fill most of the loss.
    """

    def __init__(self, bank_tokens: int = 200_000, partners: int = 32, temperature: float = 0.1,
                 skip_words: Collection[str] = ()) -> None:
        if partners < 2:
            raise ValueError("similarity_partners must be at least 2 (a softmax over one partner teaches nothing)")
        if temperature <= 0:
            raise ValueError("similarity_temperature must be positive")
        if bank_tokens < 0:
            raise ValueError("similarity_bank must be 0 or more")
        self.capacity, self.partners, self.temperature = int(bank_tokens), int(partners), float(temperature)
        self.skip_words = frozenset(w.lower() for w in skip_words)
        self.features: Optional[torch.Tensor] = None  # (capacity, width), unit rows
        self.targets: Optional[torch.Tensor] = None  # (capacity, dim), unit rows
        # the bank's bookkeeping is keyed by the lower-cased word itself, so it holds only the
        # words now in the bank (ids given to every word ever seen grew with the corpus's vocabulary)
        self.slot_word: List[Optional[str]] = [None] * self.capacity
        self.slot_sentence = [-1] * self.capacity
        self.slots_of: Dict[str, Deque[int]] = {}  # word -> its slots, oldest first
        self.next_slot = 0
        self.sentences_seen = 0

    def __call__(self, features: torch.Tensor, targets: torch.Tensor, words: Sequence[str],
                 sentences: Sequence[int]) -> torch.Tensor:
        """The mean KL divergence over this batch's anchors; then the batch joins the bank.

        `features` (n, width) are the layer's vectors (with their gradient),
        `targets` (n, dim) the teacher's, `words` the n tokens' strings
        (compared lower-cased) and `sentences` each token's sentence within
        the batch. Anchors with fewer than two partners are left out (the
        loss is zero where none has two). Occurrences of `skip_words` take no
        part, nor a place in the bank.
        """
        keys = [int(k) + self.sentences_seen for k in sentences]
        next_sentence = max(keys, default=self.sentences_seen - 1) + 1
        if self.skip_words:
            taking = [i for i, w in enumerate(words) if w.lower() not in self.skip_words]
            if len(taking) < len(words):
                index = torch.tensor(taking, dtype=torch.long, device=features.device)
                features, targets = features[index], targets.to(features.device)[index]
                words, keys = [words[i] for i in taking], [keys[i] for i in taking]
        ids = [w.lower() for w in words]
        unit_h = nn.functional.normalize(features, dim=-1)
        unit_t = nn.functional.normalize(targets.to(features.device, features.dtype), dim=-1)
        anchors, from_bank, rows = self._partners(ids, keys)
        if anchors:
            device = features.device
            index = torch.tensor(rows, dtype=torch.long)  # (m, partners), -1: padding
            banked = torch.tensor(from_bank, dtype=torch.bool)
            valid = (index >= 0).to(device)
            # one pool: the batch's rows, then the bank slots some anchor compares
            slots = torch.unique(index[banked])
            index = torch.where(banked, len(words) + torch.searchsorted(slots, index), index.clamp(min=0)).to(device)
            pool_h, pool_t = unit_h.detach(), unit_t
            if len(slots) and self.features is not None and self.targets is not None:
                pool_h = torch.cat([pool_h, self.features[slots.to(device)]])
                pool_t = torch.cat([pool_t, self.targets[slots.to(device)]])
            partner_h, partner_t = pool_h[index], pool_t[index]
            anchor = torch.tensor(anchors, dtype=torch.long, device=device)
            layer_cos = torch.einsum("md,mpd->mp", unit_h[anchor], partner_h) / self.temperature
            target_cos = torch.einsum("md,mpd->mp", unit_t[anchor], partner_t) / self.temperature
            floor = torch.finfo(layer_cos.dtype).min
            log_layer = torch.log_softmax(layer_cos.masked_fill(~valid, floor), dim=-1)
            log_wanted = torch.log_softmax(target_cos.masked_fill(~valid, floor), dim=-1)
            kl = (log_wanted.exp() * (log_wanted - log_layer)).masked_fill(~valid, 0.0).sum(-1)
            loss = kl.mean()
        else:
            loss = features.sum() * 0.0
        self._push(unit_h.detach(), unit_t.detach(), ids, keys)
        self.sentences_seen = next_sentence
        return loss

    def _partners(self, ids: List[str], keys: List[int]) -> Tuple[List[int], List[List[bool]], List[List[int]]]:
        """The anchors (batch rows with at least two partners) and, for each, whether each partner
        is in the bank and its row there or in the batch (padded with -1): the word's other
        occurrences in the batch first, then its most recent ones in the bank; never its own
        sentence."""
        in_batch: Dict[str, List[int]] = {}
        for row, word in enumerate(ids):
            in_batch.setdefault(word, []).append(row)
        anchors: List[int] = []
        from_bank: List[List[bool]] = []
        partner_rows: List[List[int]] = []
        for word, rows in in_batch.items():
            banked = self.slots_of.get(word, ())
            if len(rows) + len(banked) < 3:  # the anchor and two partners at least
                continue
            for row in rows:
                found = [r for r in rows if keys[r] != keys[row]][: self.partners]
                n_batch = len(found)
                for slot in reversed(banked):
                    if len(found) >= self.partners:
                        break
                    if self.slot_sentence[slot] != keys[row]:
                        found.append(slot)
                if len(found) >= 2:
                    pad = self.partners - len(found)
                    anchors.append(row)
                    from_bank.append([False] * n_batch + [True] * (len(found) - n_batch) + [False] * pad)
                    partner_rows.append(found + [-1] * pad)
        return anchors, from_bank, partner_rows

    def _push(self, unit_h: torch.Tensor, unit_t: torch.Tensor, ids: List[str], keys: List[int]) -> None:
        """Write the batch's occurrences into the bank's oldest slots (its last `capacity` ones,
        where the batch is larger than the bank)."""
        if self.capacity == 0:
            return
        if self.features is None:
            self.features = unit_h.new_zeros((self.capacity, unit_h.shape[1]))
            self.targets = unit_t.new_zeros((self.capacity, unit_t.shape[1]))
        assert self.targets is not None
        first = max(0, len(ids) - self.capacity)
        slots = []
        for row in range(first, len(ids)):
            slot = self.next_slot
            old = self.slot_word[slot]
            if old is not None:
                self.slots_of[old].popleft()  # slots are written in order: it is its word's oldest
                if not self.slots_of[old]:
                    del self.slots_of[old]
            self.slot_word[slot], self.slot_sentence[slot] = ids[row], keys[row]
            self.slots_of.setdefault(ids[row], deque()).append(slot)
            slots.append(slot)
            self.next_slot = (slot + 1) % self.capacity
        where = torch.tensor(slots, dtype=torch.long, device=unit_h.device)
        self.features[where] = unit_h[first:]
        self.targets[where] = unit_t[first:]


__all__ = ["SameWordSimilarity"]
