"""inspect_ai side of the episode-throughput benchmark (BENCHMARKS.md, "Episode throughput").

Each of the 200 samples does the work of one specgap episode of bench/episodes/task/echo driven
by bench/episodes/replay.jsonl: the sample's file `input.txt` is copied into a fresh local
sandbox directory (specgap: materialization), the solver runs two shell commands and writes one
file (specgap: two `run_experiment` calls and one `write_text`), and the scorer runs one shell
command (specgap: the evaluator's one shell command).

`mockllm/model` never calls tools, so the solver calls the sandbox directly instead of going
through generate(); specgap's replay agent likewise makes no model call. `sandbox="local"` runs
the commands on the host without any isolation.
"""

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.util import sandbox

SAMPLES = 200


@solver
def two_commands_one_write():
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        listing = await sandbox().exec(["sh", "-c", "ls"], timeout=10)
        word = await sandbox().exec(["sh", "-c", "cat input.txt"], timeout=10)
        assert listing.success and word.success, (listing.stderr, word.stderr)
        await sandbox().write_file("answer.txt", word.stdout.strip() + "\n")
        return state

    return solve


@scorer(metrics=[accuracy()])
def answer_file_holds_word():
    async def score(state: TaskState, target: Target) -> Score:
        check = await sandbox().exec(
            ["sh", "-c", f"grep -qx {target.text} answer.txt"], timeout=30
        )
        return Score(value=CORRECT if check.success else INCORRECT)

    return score


@task
def episodes():
    return Task(
        dataset=[
            Sample(id=i + 1, input="Read input.txt and write its word to answer.txt.",
                   target="hello", files={"input.txt": "hello\n"})
            for i in range(SAMPLES)
        ],
        solver=two_commands_one_write(),
        scorer=answer_file_holds_word(),
        sandbox="local",
    )
