"""Fixtures of the commands' tests: a fresh download cache, and a local server holding a model archive."""
import pytest

from ..io.model_server import make_zip, published_dir, serve, tiny_bilm, use_cache


@pytest.fixture
def cache(tmp_path, monkeypatch):
    return use_cache(tmp_path, monkeypatch)


@pytest.fixture
def served(tmp_path):
    """A server holding elmo.zip (a tiny published model, one folder down)."""
    for server in serve(tmp_path):
        make_zip(published_dir(tmp_path / "published", tiny_bilm(1)), server.root / "elmo.zip", prefix="elmo/")
        yield server
