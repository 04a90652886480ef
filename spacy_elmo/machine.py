"""What this machine is, for the records a run leaves behind (`info`, a pretrained model's metadata).

Plain Python: the biLM's pretraining imports it, so it imports neither spaCy nor thinc.
"""
import platform
from pathlib import Path


def cpu_name(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name (Linux: /proc/cpuinfo; elsewhere what `platform` knows)."""
    try:
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "Hardware") and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


__all__ = ["cpu_name"]
