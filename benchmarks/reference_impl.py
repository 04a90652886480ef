"""A reference-style ELMo forward pass, for speed comparisons in the same run.

It computes what the reference implementations compute, the way they compute
it: every token occurrence through the character CNN over all 50 character
positions (one conv1d per filter width), batches padded to their longest
sentence, and an LSTM that is a Python loop over timesteps doing the input
product at every step. It reads the weights of a `spacy_elmo` BiLM, so both
give the same numbers (checked by the benchmark) and only the speed differs.
"""
from typing import List

import numpy
import torch

from spacy_elmo.bilm.char_ids import batch_to_ids
from spacy_elmo.bilm.model import BiLM
from spacy_elmo.bilm.token_encoder import CharCNNEncoder


class ReferenceStyleELMo:
    def __init__(self, model: BiLM) -> None:
        self.model = model
        enc = model.token_encoder
        if not isinstance(enc, CharCNNEncoder):
            raise ValueError("the reference-style forward pass needs a character-input biLM")
        self.char_embed = enc.char_embed.detach()
        self.convs = [(w.detach().permute(2, 1, 0).contiguous(), b.detach())
                      for w, b in zip(enc.conv_weights, enc.conv_biases)]
        self.activation = torch.relu if model.config.activation == "relu" else torch.tanh
        self.enc = enc
        self.lstm = model.lstm

    def token_vectors(self, ids: torch.Tensor) -> torch.Tensor:
        """(batch, time, 50) ids -> (batch, time, dim), every occurrence, all positions."""
        b, t, c = ids.shape
        x = self.char_embed[ids.view(-1, c)].transpose(1, 2)  # (n, dim, 50)
        pooled = []
        for weight, bias in self.convs:  # weight (n_filters, dim, width)
            conv = torch.nn.functional.conv1d(x, weight, bias)
            pooled.append(self.activation(conv.max(dim=-1).values))
        h = torch.cat(pooled, dim=-1)
        F = h.shape[1]
        for weight, bias in zip(self.enc.highways, self.enc.highway_biases):
            z = h @ weight + bias
            carry = torch.sigmoid(z[:, F:])
            h = carry * torch.relu(z[:, :F]) + (1 - carry) * h
        if self.enc.has_projection:
            h = h @ self.enc.proj_weight + self.enc.proj_bias
        return h.view(b, t, -1)

    def lstm_direction(self, x: torch.Tensor, mask: torch.Tensor, direction: int, layer: int) -> torch.Tensor:
        """Per-step input products, padded batch, states frozen past each row's end."""
        lstm = self.lstm
        w_ih = lstm.weight_ih[layer][direction]
        w_hh = lstm.weight_hh[layer][direction]
        bias = lstm.bias[layer][direction, 0].clone()
        H = lstm.hidden
        bias[H : 2 * H] += 1.0
        w_p = lstm.weight_proj[layer][direction]
        b, t, _ = x.shape
        h = x.new_zeros(b, w_p.shape[1])
        c = x.new_zeros(b, H)
        out = []
        steps = range(t) if direction == 0 else range(t - 1, -1, -1)
        for s in steps:
            gates = x[:, s] @ w_ih + h @ w_hh + bias
            i, f, o, j = gates.chunk(4, dim=1)  # internal order i, f, o, j
            c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(j)
            if lstm.cell_clip:
                c_new = c_new.clamp(-lstm.cell_clip, lstm.cell_clip)
            h_new = (torch.sigmoid(o) * torch.tanh(c_new)) @ w_p
            if lstm.proj_clip:
                h_new = h_new.clamp(-lstm.proj_clip, lstm.proj_clip)
            m = mask[:, s : s + 1]
            h = torch.where(m, h_new, h)
            c = torch.where(m, c_new, c)
            out.append(h_new * m)
        if direction == 1:
            out = out[::-1]
        return torch.stack(out, dim=1)

    @torch.no_grad()
    def embed(self, sentences: List[List[str]]) -> List[numpy.ndarray]:
        ids = torch.from_numpy(batch_to_ids(sentences))
        mask = (ids > 0).any(-1)
        x = self.token_vectors(ids) * mask[..., None]
        layers = [torch.cat([x, x], -1)]
        inputs = [x, x]
        for layer in range(self.lstm.n_layers):
            outs = [self.lstm_direction(inputs[d], mask, d, layer) for d in (0, 1)]
            if self.lstm.use_skip_connections and layer > 0:
                outs = [o + i for o, i in zip(outs, inputs)]
            layers.append(torch.cat(outs, -1))
            inputs = outs
        stacked = torch.stack(layers).numpy()
        return [stacked[:, k, 1 : len(s) + 1] for k, s in enumerate(sentences)]
