"""Runs inspect_task.py through inspect_ai's Python API and prints timings as one JSON line.

Usage: inspect_run.py LOG_DIR [--max-samples N] [--max-subprocesses N]
`import_s` is the time to import inspect_ai (paid once per command); `eval_s` is the time of
the eval() call alone (200 samples, log written). The whole command's wall time is measured by
the caller.
"""

import argparse
import json
import os
import sys
import time

t0 = time.perf_counter()
from inspect_ai import eval as inspect_eval  # noqa: E402

t1 = time.perf_counter()

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from inspect_task import episodes  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("log_dir")
parser.add_argument("--max-samples", type=int, default=8)
parser.add_argument("--max-subprocesses", type=int, default=None)
args = parser.parse_args()

t2 = time.perf_counter()
[log] = inspect_eval(
    episodes(),
    model="mockllm/model",
    max_samples=args.max_samples,
    max_subprocesses=args.max_subprocesses,
    display="none",
    log_dir=args.log_dir,
)
t3 = time.perf_counter()
scores = log.results.scores[0].metrics["accuracy"].value if log.results else None
print(json.dumps({
    "status": log.status,
    "samples": log.results.completed_samples if log.results else 0,
    "accuracy": scores,
    "import_s": round(t1 - t0, 3),
    "eval_s": round(t3 - t2, 3),
}))
