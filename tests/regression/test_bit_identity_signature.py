"""Regression: the bit-identity digests were keyed by torch's instruction set alone, so an Intel
CPU with AMX (AVX512, like the AMD CPU the digests were recorded on) compared its bits with the
AMD's and failed on every backend, at code whose biLM had not changed. The signature now names
the CPU's vendor and AMX, and each recorded file says which CPU it was recorded on."""
import json

from tests.bilm.test_bit_identity import _records, machine


def test_the_signature_names_the_cpu(monkeypatch):
    from tests.bilm import test_bit_identity

    signature = machine()
    assert {"torch", "cpu_capability", "machine", "cpu"} <= set(signature)
    monkeypatch.setattr(test_bit_identity, "_cpu_signature", lambda: "AuthenticAMD")
    amd = machine()
    monkeypatch.setattr(test_bit_identity, "_cpu_signature", lambda: "GenuineIntel+amx")
    assert machine() != amd  # same instruction set, another CPU: other digests


def test_every_record_names_its_cpu():
    signatures = [json.loads(path.read_text())["machine"] for path in _records()]
    assert all(signature.get("cpu") for signature in signatures)
    assert len({json.dumps(s, sort_keys=True) for s in signatures}) == len(signatures)  # one file each
