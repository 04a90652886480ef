"""Tiny random models, archives of them, and a local HTTP server (127.0.0.1 only) that serves them."""
import http.server
import io
import socket
import tarfile
import threading
import zipfile
from functools import partial
from pathlib import Path
from typing import Iterator, Optional

from spacy_elmo.bilm import BiLM, BiLMConfig
from spacy_elmo.io import export_published, save_native

SENTENCE = [["hello", "small", "world"]]


def tiny_bilm(seed: int = 0) -> BiLM:
    config = BiLMConfig(lstm_dim=8, projection_dim=4, n_layers=2, filters=((1, 4), (2, 4)), n_highway=1,
                        char_embedding_dim=4)
    model = BiLM(config)
    model.reset_parameters(seed)
    return model


def published_dir(path: Path, model: BiLM, weights_name: str = "weights.hdf5") -> Path:
    """options.json + WEIGHTS_NAME (the NLPL repository names it model.hdf5)."""
    export_published(model, path)
    if weights_name != "weights.hdf5":
        (path / "weights.hdf5").rename(path / weights_name)
    return path


def native_dir(path: Path, model: BiLM) -> Path:
    save_native(path, model)
    return path


def make_zip(source: Path, archive: Path, prefix: str = "") -> Path:
    """Zip every file of `source`, under `prefix/` (one folder down) if given."""
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted(source.rglob("*")):
            if path.is_file():
                zf.write(path, f"{prefix}{path.relative_to(source)}")
    return archive


def make_tar(source: Path, archive: Path, prefix: str = "") -> Path:
    with tarfile.open(archive, "w:gz") as tf:
        for path in sorted(source.rglob("*")):
            if path.is_file():
                tf.add(path, f"{prefix}{path.relative_to(source)}")
    return archive


def tar_with_member(archive: Path, name: str, data: bytes = b"x") -> Path:
    with tarfile.open(archive, "w:gz") as tf:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    return archive


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002  (the base class's name)
        pass


class ModelServer:
    """An HTTP server on 127.0.0.1 serving the files of `root`; `stop()` makes every URL unreachable."""

    def __init__(self, root: Path) -> None:
        self.root = root
        handler = partial(_QuietHandler, directory=str(root))
        self._server: Optional[http.server.ThreadingHTTPServer] = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join()
            self._server = None


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def use_cache(tmp_path: Path, monkeypatch) -> Path:
    """SPACY_ELMO_CACHE in a fresh folder, and no proxy between the client and the local server."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("SPACY_ELMO_CACHE", str(cache))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    return cache


def serve(tmp_path: Path) -> Iterator[ModelServer]:
    """A fixture body: a server over tmp_path/www, stopped at teardown."""
    root = tmp_path / "www"
    root.mkdir()
    server = ModelServer(root)
    try:
        yield server
    finally:
        server.stop()


def cache_entries(cache: Path) -> list:
    """Every folder under the cache's models/ (complete or not)."""
    models = cache / "models"
    return sorted(p.name for p in models.iterdir()) if models.is_dir() else []
