"""Context-free token encoders: the character CNN of ELMo, and plain word embeddings.

The character CNN is the reference's: character embeddings, one valid
convolution per width max-pooled over all `max_chars` positions, activation,
highway layers, projection. The pooled convolutions are computed by
`engine/char_convolution.py`, which skips the windows of pure padding.
"""
import math
from typing import Optional

import torch
from torch import nn

from .char_ids import PAD_ID
from .config import BiLMConfig
from .engine import Engine, make_engine
from .engine.char_convolution import max_pooled_convolutions


class CharCNNEncoder(nn.Module):
    """Character ids (n, max_chars) [+ word-table ids (n,)] -> token vectors (n, output_dim).

    With a word table the projection reads [highway(char CNN); table row]:
    `word_table` (pretrained), then `word_specials` (learned) rows.
    """

    def __init__(self, config: BiLMConfig, engine: Optional[Engine] = None) -> None:
        """`engine` computes the dense products in eval mode (default: the best available here)."""
        super().__init__()
        self.engine = engine if engine is not None else make_engine()
        self.max_chars, self.activation = config.max_characters_per_token, config.activation
        dim, n_filters = config.char_embedding_dim, config.n_filters
        self.widths = [w for w, _ in config.filters]
        self.max_width, self.n_filters = max(self.widths), n_filters
        # row 0 = absent token (always zero); rows 1..261 = bytes, or 1..n_characters = a dictionary's entries
        n_chars = 262 if config.characters == "bytes" else config.n_characters + 1
        self.char_embed = nn.Parameter(torch.zeros(n_chars, dim))
        self.pad_id = PAD_ID  # a character dictionary has its own (BiLM sets it)
        self.conv_weights = nn.ParameterList([nn.Parameter(torch.zeros(w, dim, n)) for w, n in config.filters])
        self.conv_biases = nn.ParameterList([nn.Parameter(torch.zeros(n)) for _, n in config.filters])
        # highway: columns [:F] transform, [F:] carry (multiplies the transform)
        self.highways = nn.ParameterList([nn.Parameter(torch.zeros(n_filters, 2 * n_filters))
                                          for _ in range(config.n_highway)])
        self.highway_biases = nn.ParameterList([nn.Parameter(torch.zeros(2 * n_filters))
                                                for _ in range(config.n_highway)])
        self.table_rows, self.has_table = config.word_table_rows, config.has_word_table
        if self.has_table:
            dim_v = config.word_table_dim
            self.word_table = nn.Parameter(torch.zeros(self.table_rows, dim_v), config.word_table_trainable)
            self.word_specials = nn.Parameter(torch.zeros(config.word_table_specials, dim_v))
        self.has_projection = self.has_table or n_filters != config.projection_dim
        if self.has_projection:
            self.proj_weight = nn.Parameter(torch.zeros(n_filters + config.word_table_dim, config.projection_dim))
            self.proj_bias = nn.Parameter(torch.zeros(config.projection_dim))
        self.output_dim = config.projection_dim
        # per filter, the last start of a window (a width-w window must fit in max_chars)
        last_start = torch.tensor([self.max_chars - w for w, n in config.filters for _ in range(n)], dtype=torch.long)
        self.last_window_start: torch.Tensor
        self.register_buffer("last_window_start", last_start, persistent=False)

    def reset_parameters(self, generator: Optional[torch.Generator] = None) -> None:
        """Initialisation for training from scratch (as bilm-tf's defaults)."""
        with torch.no_grad():
            self.char_embed.uniform_(-1.0, 1.0, generator=generator)
            self.char_embed[0].zero_()
            for (w, weight), bias in zip(zip(self.widths, self.conv_weights), self.conv_biases):
                fan_in = w * weight.shape[1]
                weight.uniform_(-math.sqrt(1.0 / fan_in), math.sqrt(1.0 / fan_in), generator=generator)
                bias.zero_()
            for weight, bias in zip(self.highways, self.highway_biases):
                weight.normal_(0.0, math.sqrt(1.0 / self.n_filters), generator=generator)
                bias[: self.n_filters].zero_()
                bias[self.n_filters :].fill_(-2.0)  # start close to the identity
            if self.has_table:
                # the pretrained rows come from a vector file (`set_word_table`); the learned ones start small
                self.word_specials.normal_(0.0, 0.1, generator=generator)
            if self.has_projection:
                self.proj_weight.normal_(0.0, math.sqrt(1.0 / self.proj_weight.shape[0]), generator=generator)
                self.proj_bias.zero_()

    def table_vectors(self, word_ids: torch.Tensor) -> torch.Tensor:
        """Rows of the word table: ids below `table_rows` are pretrained, the rest learned."""
        rows = self.table_rows
        if rows == 0:
            return self.word_specials[word_ids]
        if self.word_specials.shape[0] == 0:
            return self.word_table[word_ids]
        is_special = (word_ids >= rows)[:, None]
        pretrained = self.word_table[word_ids.clamp(max=rows - 1)]
        learned = self.word_specials[(word_ids - rows).clamp(min=0)]
        return torch.where(is_special, learned, pretrained)

    def forward(self, char_ids: torch.Tensor, word_ids: Optional[torch.Tensor] = None) -> torch.Tensor:
        if self.has_table and (word_ids is None or word_ids.shape[0] != char_ids.shape[0]):
            raise ValueError("this token encoder has a word table: pass one word id per token")
        if char_ids.shape[0] == 0:
            return self.char_embed.new_zeros((0, self.output_dim))
        pooled = max_pooled_convolutions(self, char_ids)
        x = torch.relu(pooled) if self.activation == "relu" else torch.tanh(pooled)
        for weight, bias in zip(self.highways, self.highway_biases):
            h = self.product(bias, x, weight)
            transform = torch.relu(h[:, : self.n_filters])
            carry = torch.sigmoid(h[:, self.n_filters :])
            x = torch.addcmul(x, carry, transform - x)  # carry * transform + (1 - carry) * x
        if self.has_table:
            assert word_ids is not None  # checked above
            x = torch.cat([x, self.table_vectors(word_ids).to(x.dtype)], dim=1)
        if self.has_projection:
            x = self.product(self.proj_bias, x, self.proj_weight)
        return x

    def product(self, bias: torch.Tensor, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """`addmm(bias, x, weight)`: in training mode as is, in eval mode through the
        engine (whose rows do not depend on how many rows x has), unless autograd needs the
        product (the encoder called directly, in eval mode, for gradients): the engines' products
        (oneDNN, int8) have no backward, and their gradients were lost without an error."""
        if self.training or (torch.is_grad_enabled() and (weight.requires_grad or x.requires_grad
                                                          or bias.requires_grad)):
            return torch.addmm(bias, x, weight)
        return self.engine.encoder_product(bias, x, weight)


class WordEncoder(nn.Module):
    """Word ids -> vectors: bilm-tf's `use_character_inputs = false` encoder."""

    def __init__(self, config: BiLMConfig) -> None:
        super().__init__()
        self.embedding = nn.Parameter(torch.zeros(config.n_tokens_vocab, config.projection_dim))
        self.output_dim = config.projection_dim

    def reset_parameters(self, generator: Optional[torch.Generator] = None) -> None:
        with torch.no_grad():
            self.embedding.uniform_(-1.0, 1.0, generator=generator)

    def forward(self, word_ids: torch.Tensor) -> torch.Tensor:
        return self.embedding[word_ids]


__all__ = ["CharCNNEncoder", "WordEncoder"]
