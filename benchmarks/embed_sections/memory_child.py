"""`embed` of a text file in a fresh process set up as the command sets it up; prints the peak
resident memory as the input is consumed (the `memory` and `compare` sections run it).

    python benchmarks/embed_sections/memory_child.py IN.txt OUT.hdf5 [--backend NAME] [--threads N] [--model M]

It imports `spacy_elmo` from PYTHONPATH, so it measures whichever checkout that names.
"""
import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from common import peak_mib, random_model  # noqa: E402

from spacy_elmo.cli._util import prefer_huge_pages  # noqa: E402
try:
    from spacy_elmo.embedding.dump import embed_file
except ImportError:  # a checkout from before spacy_elmo.embedding (the `compare` section's baselines)
    from spacy_elmo.io.dump import embed_file  # type: ignore[no-redef]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("text")
    parser.add_argument("out")
    parser.add_argument("--backend", default=None, help="a backend setting (code without backends: omit)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--model", default="small", help="small: random weights of the published small shapes; "
                        "embedded: the package's own English biLM; or a model directory")
    args = parser.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    prefer_huge_pages()  # as `spacy-elmo embed` does
    if args.model == "embedded" or Path(args.model).is_dir():
        from spacy_elmo.io import load_bilm

        model = load_bilm(None if args.model == "embedded" else args.model)
    else:
        model = random_model(args.model)
    if args.backend:
        model.backend = args.backend
    model.enable_cache(50_000)
    samples = []
    seen = [0]

    def progress(tokens: int, sentences: int) -> None:
        seen[0] += tokens
        samples.append((seen[0], peak_mib()))

    start = time.perf_counter()
    embed_file(model, args.text, args.out, overwrite=True, on_progress=progress)
    seconds = time.perf_counter() - start
    print(json.dumps({"samples": samples, "seconds": seconds, "tokens_per_s": seen[0] / seconds,
                      "peak_mib": peak_mib()}))


if __name__ == "__main__":
    main()
