"""Runs one variant of inspect_task.py through inspect_ai's Python API; prints one JSON line.

Usage: inspect_run.py LOG_DIR [--variant agent|direct] [--samples N] [--max-samples N]
                      [--max-subprocesses N]

`--variant agent` (default) runs `episodes_agent` (the work through inspect's agent loop:
scripted mockllm turns, tools executed by generate()); `--variant direct` runs
`episodes_direct` (the same sandbox calls made by a solver itself). See inspect_task.py.

The JSON line holds: `variant`; `status`, `samples` (completed) and `accuracy` of the log;
`work` (model turns, shell commands and file writes done, counted in the tools) and
`expected_work` (what `samples` samples of the variant must do); `import_s`, the time to import
inspect_ai (paid once per command); and `eval_s`, the time of the eval() call alone (samples
run, log written). The whole command's wall time is measured by the caller (measure.py).
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
from inspect_task import EXPECTED_PER_SAMPLE, SAMPLES, TASKS, WORK  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("log_dir")
    parser.add_argument("--variant", choices=sorted(TASKS), default="agent")
    parser.add_argument("--samples", type=int, default=SAMPLES)
    parser.add_argument("--max-samples", type=int, default=8)
    parser.add_argument("--max-subprocesses", type=int, default=None)
    args = parser.parse_args()

    t2 = time.perf_counter()
    # The task carries its own model (mockllm/model; scripted for the agent variant).
    [log] = inspect_eval(
        TASKS[args.variant](samples=args.samples),
        max_samples=args.max_samples,
        max_subprocesses=args.max_subprocesses,
        display="none",
        log_dir=args.log_dir,
    )
    t3 = time.perf_counter()
    accuracy = log.results.scores[0].metrics["accuracy"].value if log.results else None
    print(json.dumps({
        "variant": args.variant,
        "status": log.status,
        "error": str(log.error)[-2000:] if log.error else None,
        "samples": log.results.completed_samples if log.results else 0,
        "accuracy": accuracy,
        "work": dict(WORK),
        "expected_work": {k: v * args.samples for k, v in EXPECTED_PER_SAMPLE[args.variant].items()},
        "import_s": round(t1 - t0, 3),
        "eval_s": round(t3 - t2, 3),
    }))


if __name__ == "__main__":
    main()
