"""Progress bars redraw at a terminal's pace in a terminal and at a log's pace in a file."""
import io
import itertools

import pytest
import tqdm.std

from spacy_elmo.progress_bars import LOG_INTERVAL_S, is_interactive, progress_bar


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def one_second_per_call(monkeypatch):
    """tqdm's clock advances one second each time it is read: redraws depend on the bar's
    settings, never on how fast the machine is."""
    ticks = itertools.count()
    monkeypatch.setattr(tqdm.std, "time", lambda: float(next(ticks)))


def _frames(stream: io.StringIO, updates: int) -> int:
    bar = progress_bar(range(updates), file=stream, desc="work")
    for _ in bar:
        pass
    return stream.getvalue().count("\r")


def test_a_log_file_gets_one_frame_per_interval_and_a_terminal_one_per_update(one_second_per_call,
                                                                              monkeypatch):
    monkeypatch.delenv("TQDM_MININTERVAL", raising=False)
    log, terminal = io.StringIO(), _Terminal()
    in_log, in_terminal = _frames(log, 300), _frames(terminal, 300)
    # about 300 seconds of clock: a frame per 30 s in the file (plus the first and the last) ...
    assert in_log <= 300 / LOG_INTERVAL_S + 3
    # ... and about one per update in the terminal
    assert in_terminal > 100
    # the file's last frame is the finished bar, as the terminal's is
    assert "300/300" in log.getvalue().rsplit("\r", 1)[-1]
    assert "300/300" in terminal.getvalue().rsplit("\r", 1)[-1]


def test_the_interval_follows_the_stream(monkeypatch):
    monkeypatch.delenv("TQDM_MININTERVAL", raising=False)
    assert progress_bar(file=io.StringIO()).mininterval == LOG_INTERVAL_S
    assert progress_bar(file=_Terminal()).mininterval == tqdm.std.tqdm(file=_Terminal()).mininterval < 1


def test_an_explicit_interval_or_tqdm_s_environment_setting_wins(monkeypatch):
    monkeypatch.delenv("TQDM_MININTERVAL", raising=False)
    assert progress_bar(file=io.StringIO(), mininterval=2).mininterval == 2
    # tqdm reads TQDM_MININTERVAL when it is imported, so the process's environment sets it: where it
    # is set, the bar keeps tqdm's own interval (whatever the import made of it)
    monkeypatch.setenv("TQDM_MININTERVAL", "5")
    assert progress_bar(file=io.StringIO()).mininterval == tqdm.std.tqdm(file=io.StringIO()).mininterval


def test_what_counts_as_interactive():
    notebook = type("OutStream", (io.StringIO,), {"__module__": "ipykernel.iostream"})
    closed = io.StringIO()
    closed.close()
    assert is_interactive(_Terminal()) and is_interactive(notebook())
    assert not any(is_interactive(s) for s in (io.StringIO(), closed, None, object()))
