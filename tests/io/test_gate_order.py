"""`io/gate_order.py`: published (i, j, f, o) gate blocks to the biLM's (i, f, o, j) and back."""
import torch

from spacy_elmo.io.gate_order import INTERNAL_TO_TF, TF_TO_INTERNAL, permute_gates


def test_published_blocks_land_in_the_internal_order_and_return():
    blocks = {"i": 1.0, "j": 2.0, "f": 3.0, "o": 4.0}
    published = torch.cat([torch.full((2, 3), blocks[g]) for g in "ijfo"], dim=-1)
    internal = permute_gates(published, TF_TO_INTERNAL)
    assert [float(b[0, 0]) for b in internal.chunk(4, dim=-1)] == [blocks[g] for g in "ifoj"]
    torch.testing.assert_close(permute_gates(internal, INTERNAL_TO_TF), published, rtol=0, atol=0)
