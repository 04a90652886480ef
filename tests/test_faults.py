"""Fault injection's specification: parsed or refused with a clear error, and a point fires on its N-th pass only."""
import pytest


def test_fault_specification_errors_are_clear(inject):
    from spacy_elmo.faults import FaultSpecError, fault_point, parse

    expected = {"embed.chunk": (2, "kill"), "pretrain.step": (1, "term")}
    assert parse("embed.chunk:2:kill, pretrain.step:1:term") == expected
    for spec, message in [("embed.chunk:0:kill", "N >= 1"), ("nowhere:1:kill", "unknown point"),
                          ("embed.chunk:1:explode", "unknown action"), ("embed.chunk", "POINT:N:ACTION")]:
        with pytest.raises(FaultSpecError, match=message):
            parse(spec)
    inject("checkpoint.write:2:enospc")
    fault_point("checkpoint.write")  # the first pass: nothing
    with pytest.raises(OSError, match="No space left"):
        fault_point("checkpoint.write")
    fault_point("checkpoint.write")  # only the N-th pass
