"""The commands' fixtures (a fresh download cache, a local model server), for the regression tests of commands."""
from ..cli.conftest import cache, served  # noqa: F401
