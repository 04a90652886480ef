"""Build script for the one compiled part: the fused LSTM cell kernel.

Metadata, options and entry points live in setup.cfg; the build system in
pyproject.toml. The extension is optional: where it cannot be built (no C
compiler, or a compiler without OpenMP), the install goes on and the biLM
uses PyTorch's element-wise ops instead (`spacy_elmo.bilm.engine.cell_kernel`).
SPACY_ELMO_NO_EXTENSION=1 leaves it out on purpose: a pure-Python wheel for
another Python or platform (scripts/gpu_pretrain.py builds one for a GPU machine).
"""
import os
import sys

from setuptools import Extension, setup

if sys.platform == "win32":
    compile_args, link_args = ["/O2", "/openmp"], []
else:
    compile_args, link_args = ["-O3", "-fopenmp"], ["-fopenmp"]

extensions = [
    Extension(
        "spacy_elmo.bilm.engine._lstm_cell",
        sources=["spacy_elmo/bilm/engine/_lstm_cell.c"],
        extra_compile_args=compile_args,
        extra_link_args=link_args,
        optional=True,
    )
]
setup(ext_modules=[] if os.environ.get("SPACY_ELMO_NO_EXTENSION") == "1" else extensions)
