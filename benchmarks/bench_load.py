"""The `elmo` component on an idle machine and beside another CPU-bound process.

    python benchmarks/bench_load.py [--texts 200] [--burners 1] [--options NAME,...] [--repeats 1]

A server shares its cores. Each option runs in a fresh process (OpenMP reads
its environment once, at start), on `--texts` short EWT dev sentences, one
`nlp(text)` call each (a request at a time), after a warm-up; first with the
machine as it is ("idle"), then with `--burners` busy-loop processes beside
it ("loaded"). torch's own thread count is left at its default (the
machine's cores) unless the option says otherwise. Options:

    torch-default      threads = 0 (the default): torch's own setting, whatever the load
    one-thread         threads = 1
    passive-wait       threads = 0 with OMP_WAIT_POLICY=PASSIVE (waiting threads sleep)
    no-spin            threads = 0 with GOMP_SPINCOUNT=0
    load-aware         threads = "load-aware": the cores other processes leave free

Figures depend on the machine and what else runs on it: measure on an
otherwise idle machine.
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import COUNT, DATA, POSITIVE, check_data, command_line, machine, table  # noqa: E402

OPTIONS = {
    "torch-default": (0, {}),
    "one-thread": (1, {}),
    "passive-wait": (0, {"OMP_WAIT_POLICY": "PASSIVE"}),
    "no-spin": (0, {"GOMP_SPINCOUNT": "0"}),
    "load-aware": ("load-aware", {}),
}

CHILD = """
import json, sys, time
import spacy
from spacy_elmo.gold_data import conllu_words
threads, n_texts, path = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
texts = [" ".join(words) for words in conllu_words(path, limit=n_texts + 20)]
nlp = spacy.blank("en")
nlp.add_pipe("elmo", config={"threads": threads})
for text in texts[:20]:
    nlp(text)
start = time.perf_counter()
for text in texts[20:20 + n_texts]:
    nlp(text)
print(json.dumps({"seconds": time.perf_counter() - start}))
"""

BURNER = "while True:\n    pass\n"
DEV = DATA / "ud_en_ewt" / "en_ewt-ud-dev.conllu.gz"


def run_option(name: str, n_texts: int) -> float:
    """Seconds of `n_texts` calls with option `name`, in a fresh process; a failed child is one line."""
    threads, extra_env = OPTIONS[name]
    own = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
    env = {k: v for k, v in os.environ.items() if k not in own}
    env.update(extra_env)
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(threads), str(n_texts), str(DEV)],
                         capture_output=True, text=True, env=env)
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"option {name}: the child process failed (exit {out.returncode}): {last}")
    return json.loads(out.stdout.strip().splitlines()[-1])["seconds"]


def loaded(burners: int):
    """Context: `burners` busy-loop processes for the duration."""

    class _Load:
        def __enter__(self):
            self.procs = [subprocess.Popen([sys.executable, "-c", BURNER]) for _ in range(burners)]
            time.sleep(0.5)  # let them reach full speed (timing only: nothing is checked)
            return self

        def __exit__(self, *exc):
            for proc in self.procs:
                proc.kill()
                proc.wait()

    return _Load()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts", type=POSITIVE, default=200, help="EWT dev sentences timed per run")
    parser.add_argument("--burners", type=COUNT, default=1, help="busy-loop processes for the loaded column")
    parser.add_argument("--options", default=",".join(OPTIONS))
    parser.add_argument("--repeats", type=POSITIVE, default=1, help="runs per cell; the table shows the fastest")
    args = parser.parse_args()
    names = [n for n in args.options.split(",") if n]
    unknown = [n for n in names if n not in OPTIONS]
    if unknown or not names:
        parser.error(f"unknown option(s) {unknown}; choose from {list(OPTIONS)}")
    check_data(DEV)
    results = {}
    for name in names:
        idle = min(run_option(name, args.texts) for _ in range(args.repeats))
        with loaded(args.burners):
            busy = min(run_option(name, args.texts) for _ in range(args.repeats))
        results[name] = (idle, busy)
        print(f"{name}: idle {idle:.2f} s, loaded {busy:.2f} s", file=sys.stderr)
    best_idle = min(idle for idle, _ in results.values())
    rows = [[name, f"{idle:.2f}", f"{busy:.2f}", f"{busy / idle:.1f}x", f"{idle / best_idle:.2f}x"]
            for name, (idle, busy) in results.items()]
    print(f"# elmo component, {args.texts} short texts one call each, idle vs {args.burners} busy-loop process(es)\n")
    print(f"{machine()}\n{command_line()}\n")
    print(table(rows, ["option", "idle s", "loaded s", "loaded / idle", "idle / best idle"]))


if __name__ == "__main__":
    main()
