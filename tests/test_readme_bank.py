"""The README's "bank" example prints what the shipped biLM gives.

The README shows the top layer's cosines between four occurrences of "bank"
and says what they mean for the embedded model. The code block is run as
written and its printed matrix compared with the one the README shows (to
the two decimals printed, with room for another CPU's last bits), so a new
embedded model cannot leave a stale example behind.
"""
import contextlib
import io
import re
from pathlib import Path

import numpy

README = Path(__file__).resolve().parent.parent / "README.md"


def bank_example() -> tuple:
    """The example's code and the matrix the README shows after it."""
    text = README.read_text(encoding="utf-8")
    found = re.search(r"```python\n(?P<code>[^`]*index\(\"bank\"\)[^`]*)```\s*```text\n(?P<out>[^`]*)```", text)
    assert found, "README.md lost its bank example (a python block with index(\"bank\") and its printed output)"
    return found.group("code"), found.group("out")


def parse_matrix(printed: str) -> numpy.ndarray:
    rows = [re.findall(r"\d+(?:\.\d*)?", line) for line in printed.strip().splitlines()]
    return numpy.array([[float(value) for value in row] for row in rows])


def test_the_readme_bank_example_prints_what_the_readme_shows():
    code, shown = bank_example()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, str(README), "exec"), {})
    got, expected = parse_matrix(printed.getvalue()), parse_matrix(shown)
    assert got.shape == expected.shape == (4, 4)
    numpy.testing.assert_allclose(got, expected, atol=0.0051)
