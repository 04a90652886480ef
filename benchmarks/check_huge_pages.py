"""Do the commands' huge-page requests take effect on this machine? (kernel figures: not a test)

    python benchmarks/check_huge_pages.py

PyTorch reads THP_MEM_ALLOC_ENABLE once; the commands set it (after torch is
imported, before a model is loaded: `cli._util.prefer_huge_pages`). A fresh
32 MiB tensor is 8,192 pages of 4 KiB: with huge pages in effect its first
touch takes a few dozen page faults, without them about 8,192. Page-fault
counts depend on the kernel and its settings, so this is a check to run by
hand (or in benchmarks/run_all.sh), not part of the test suite.
"""
import argparse
import os
import subprocess
import sys

CHILD = """
import resource, sys
import spacy_elmo.cli  # imports torch, as the commands do, before the setting is made
from spacy_elmo.cli._util import prefer_huge_pages
if sys.argv[1] == "cli":
    prefer_huge_pages()
import torch
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
torch.ones(8 << 20)  # 32 MiB, first touch
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""
PAGES = 8192


def faults(how: str, env: dict) -> int:
    out = subprocess.run([sys.executable, "-c", CHILD, how], capture_output=True, text=True, env=env, check=True)
    return int(out.stdout.split()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.parse_args()
    from spacy_elmo.cli._util import HUGE_PAGES_VARIABLE, huge_pages

    print(f"Command: python {' '.join(sys.argv)}")
    mode = huge_pages()["system_mode"]
    print(f"transparent huge pages: {mode!r}")
    if mode not in ("always", "madvise"):
        print("unavailable here: nothing to check")
        return 0
    env = {k: v for k, v in os.environ.items() if k != HUGE_PAGES_VARIABLE}
    with_cli, plain = faults("cli", env), faults("plain", env)
    print("| 32 MiB tensor, first touch | page faults |\n|---|---|")
    print(f"| as the commands set it | {with_cli:,} |\n| without the request | {plain:,} |")
    ok = with_cli < PAGES // 4
    print("huge pages in effect" if ok else "huge pages NOT in effect for the commands")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
