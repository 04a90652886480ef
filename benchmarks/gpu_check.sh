#!/usr/bin/env bash
# GPU checks, a few minutes in all; run where a CUDA GPU is lent, from the repository root:
#
#     bash benchmarks/gpu_check.sh [WORK_DIR]        # default: a temporary directory
#
# 1. the `elmo` component on CUDA: the same layers as on CPU (1e-4), and with
#    mixed_precision = true (bfloat16 autocast: within 0.1, float32 output)
# 2. `embed --gpu-id 0`, float32 and bfloat16
# 3. pretraining on one GPU for a few steps (float32 and bfloat16), a checkpoint
#    written, the run killed at a fixed step (SPACY_ELMO_FAULT) and resumed on the GPU
# 4. where two GPUs exist: a 2-process DDP run (torchrun, "cpu:gloo,cuda:nccl"), replicas identical
# (Fine-tuning a pipeline on a GPU and resuming it needs spaCy and cupy too: where both are
# installed, `python -m pytest tests/test_resumable_training.py -k gpu` runs it.)
#
# It needs the package importable (pip install -e ., or PYTHONPATH=$PWD with
# scripts/gpu_pretrain.py's wheels installed where spaCy is missing: the
# component check is then skipped) and nothing from ../shared: the corpus is
# the repository's own documentation, split on whitespace.
# Prints one PASS/FAIL line per check; exit 0 when all pass, 1 when one
# fails, and 0 with a message where torch sees no CUDA GPU (nothing to check).
# GPU_CHECK_DRY_RUN=1 runs the same steps on the CPU (checks the script itself).
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
work="${1:-$(mktemp -d)}"
mkdir -p "$work"

if ! python -c "import spacy_elmo, torch" 2>/dev/null; then
    echo "gpu_check: cannot import spacy_elmo and torch here; install the package first (pip install -e .)"
    exit 1
fi
n_gpus=$(python -c "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)")
gpu=0
if [ "${GPU_CHECK_DRY_RUN:-0}" = "1" ]; then
    echo "gpu_check: dry run on the CPU (GPU_CHECK_DRY_RUN=1)"
    gpu=-1
    n_gpus=0
elif [ "$n_gpus" = "0" ]; then
    echo "gpu_check: no CUDA GPU visible to torch $(python -c 'import torch; print(torch.__version__)') on $(hostname): nothing to check"
    exit 0
else
    python -c "import torch; print('gpu_check:', torch.cuda.device_count(), 'GPU(s):', torch.cuda.get_device_name(0), '| torch', torch.__version__, '| CUDA', torch.version.cuda)"
fi
export GPU_ID=$gpu

failures=0
check() {  # check NAME FUNCTION: run it, print PASS/FAIL with the time, and the log's last lines on failure
    local name="$1"; shift
    local start=$SECONDS
    if "$@" >"$work/$name.log" 2>&1; then
        echo "PASS $name ($((SECONDS - start)) s) $(tail -n 1 "$work/$name.log")"
    else
        echo "FAIL $name ($((SECONDS - start)) s); last lines of $work/$name.log:"
        tail -n 15 "$work/$name.log" | sed 's/^/    /'
        failures=$((failures + 1))
    fi
}

cat docs/*.md README.md > "$work/corpus.txt"
head -n 300 "$work/corpus.txt" | grep -v '^\s*$' > "$work/lines.txt"

component() {
    python - <<'PYTHON'
import os

import numpy
import spacy

texts = ["She sat on the bank of the river .", "The bank raised its rates again .", "A third , longer sentence " * 8]
cpu = spacy.blank("en")
cpu.add_pipe("elmo")
expected = [cpu(t)._.elmo for t in texts]
on_gpu = os.environ["GPU_ID"] != "-1"
if on_gpu:
    spacy.require_gpu(int(os.environ["GPU_ID"]))
for mixed, tolerance in ((False, 1e-4), (True, 0.1)):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"model": {"@architectures": "spacy-elmo.ElmoBiLM.v1", "mixed_precision": mixed}})
    docs = list(nlp.pipe(texts))
    bilm = nlp.get_pipe("elmo").bilm
    assert bilm.device.type == ("cuda" if on_gpu else "cpu"), bilm.device
    assert all(d._.elmo.dtype == numpy.float32 for d in docs)
    worst = max(float(numpy.abs(d._.elmo - e).max()) for d, e in zip(docs, expected))
    assert worst < tolerance, (mixed, worst)
    print(f"mixed_precision={mixed}: max |device - CPU| = {worst:.2e} on {bilm.device}")
PYTHON
}
if python -c "import spacy" 2>/dev/null; then
    check component_on_gpu component
else  # the lent GPU machines have PyTorch but not spaCy (scripts/gpu_pretrain.py's note)
    echo "SKIP component_on_gpu: spaCy is not installed here"
fi

embed_gpu() {
    for precision in float32 bfloat16; do
        python -m spacy_elmo embed "$work/lines.txt" "$work/embed-$precision.h5" --gpu-id "$gpu" --quiet \
            --precision "$precision" --overwrite || return 1
    done
    python - "$work" <<'PYTHON'
import sys

import h5py
import numpy

work = sys.argv[1]
with h5py.File(f"{work}/embed-float32.h5") as a, h5py.File(f"{work}/embed-bfloat16.h5") as b:
    keys = [k for k in a if k.isdigit()]
    worst = max(float(numpy.abs(a[k][...] - b[k][...]).max()) for k in keys)
print(f"{len(keys)} lines; max |float32 - bfloat16| = {worst:.2e}")
assert worst < 0.5
PYTHON
}
check embed_on_gpu embed_gpu

pretrain() {  # pretrain OUT [OPTIONS]: the tiny config on the documentation text, 30 steps
    local out="$1"; shift
    python -m spacy_elmo pretrain configs/pretrain_tiny.cfg "$out" --quiet --gpu-id "$gpu" \
        --paths.train "$work/corpus.txt" --corpus.tokenizer whitespace \
        --training.eval_every 1000 --training.checkpoint_every 10 \
        --softmax.kind sampled --softmax.n_samples 64 --training.max_steps 30 "$@"
}
pretrain_gpu() {
    rm -rf "$work/pretrain-"*
    pretrain "$work/pretrain-f32" || return 1
    pretrain "$work/pretrain-bf16" --training.precision bfloat16 || return 1
    # killed at step 25 (after the checkpoint of step 20), then resumed
    SPACY_ELMO_FAULT=pretrain.step:25:kill pretrain "$work/pretrain-kill"
    [ $? -eq 137 ] || { echo "the injected kill did not happen"; return 1; }
    pretrain "$work/pretrain-kill" --resume || return 1
    python - "$work" <<'PYTHON'
import sys

from spacy_elmo.pretrain.checkpoint import load_checkpoint

work = sys.argv[1]
a = load_checkpoint(f"{work}/pretrain-f32/checkpoint.pt")
b = load_checkpoint(f"{work}/pretrain-kill/checkpoint.pt")
assert a["progress"]["step"] == b["progress"]["step"] == 30
worst = max(float((a["model"][k] - b["model"][k]).abs().max()) for k in a["model"])
print(f"float32, bfloat16 and kill-and-resume runs done; resumed vs uninterrupted max |diff| = {worst:.2e}")
assert worst < 1e-3  # GPU kernels need not be deterministic; on CPU the test suite checks bit equality
PYTHON
}
check pretrain_on_one_gpu pretrain_gpu

ddp() {
    rm -rf "$work/ddp"
    torchrun --nproc_per_node 2 -m spacy_elmo pretrain configs/pretrain_tiny.cfg "$work/ddp" --gpu-id "$gpu" --quiet \
        --paths.train "$work/corpus.txt" --corpus.tokenizer whitespace --training.max_steps 20 --training.checkpoint_every 10 \
        --training.eval_every 1000 || return 1
    python - "$work" <<'PYTHON'
import json
import sys

rows = [json.loads(line) for line in open(f"{sys.argv[1]}/ddp/log.jsonl")]
checksums = [r["replica_checksums"] for r in rows if "replica_checksums" in r][0]
assert len(checksums) == 2 and checksums[0] == checksums[1], checksums
print("2 ranks, replicas identical:", checksums[0][:12])
PYTHON
}
if [ "$n_gpus" -ge 2 ] || [ "$gpu" = "-1" ]; then  # the dry run: 2 CPU processes over gloo
    check ddp_two_gpus ddp
else
    echo "SKIP ddp_two_gpus: fewer than two GPUs here (NCCL needs a GPU per rank)"
fi

if [ "$failures" -gt 0 ]; then
    echo "gpu_check: $failures check(s) failed; logs in $work"
    exit 1
fi
echo "gpu_check: all checks passed; logs in $work"
