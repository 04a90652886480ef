"""The row counts products are padded to: few heights, never below a backend's minimum, non-decreasing."""
import pytest

from spacy_elmo.bilm.engine.product_rows import MKL_MIN_ROWS, ONEDNN_MIN_ROWS, TABLE_GRANULE, product_rows


@pytest.mark.parametrize("library,product", [("onednn", "step"), ("onednn", "table"), ("mkl", "step"),
                                             ("mkl", "encoder")])
def test_product_heights_are_few_never_below_the_minimum_and_non_decreasing(library, product):
    heights = [product_rows(n, library, product) for n in range(0, 20000)]
    assert all(h >= max(n, 1) for n, h in enumerate(heights))
    assert heights == sorted(heights)
    least = ONEDNN_MIN_ROWS if library == "onednn" else MKL_MIN_ROWS[product]
    assert min(heights) == least
    if library == "onednn":
        # rounded: at most 1/32 more rows (a granule of the table's size above it), few distinct heights
        slack = [h - n for n, h in enumerate(heights) if n > 64]
        assert max(slack) <= (TABLE_GRANULE if product == "table" else 20000 // 32)
        assert len(set(heights)) < 300
