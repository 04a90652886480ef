"""Fixtures other test folders define, for the regression tests that need them: the commands' (a fresh
download cache, a local model server) and pretraining's (a tiny random teacher)."""
from ..cli.conftest import cache, served  # noqa: F401
from ..pretrain.conftest import teacher_dir  # noqa: F401
