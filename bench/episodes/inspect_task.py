"""inspect_ai side of the episode-throughput benchmark (bench/episodes/run.sh; BENCHMARKS.md,
"Episode throughput: interleaved runs, startup and memory").

Every sample does the work of one specgap episode of `bench/episodes/task/echo` replayed by
`bench/episodes/replay.jsonl`: the sample's `input.txt` is copied into a fresh local-sandbox
directory (specgap: materializing the workspace), two shell commands run (`ls`,
`cat input.txt`) and one file is written (`answer.txt` = "hello\\n") (specgap: two
`run_experiment` calls and one `write_text`), and the scorer runs one shell command (`grep`;
specgap: the evaluator's single shell command). `sandbox="local"` runs every command on the
host in that directory, with no isolation at all.

Two variants do this work by different routes:

- `episodes_agent` (the fair peer): the work goes through inspect's own agent loop, as
  specgap's replay agent goes through the engine's (each tool call dispatched by the harness
  and recorded in the transcript). `mockllm/model` with `custom_outputs=scripted_turn` plays a
  model that answers each turn with the next tool call of the script and then a plain final
  answer; `generate(tool_calls="loop")` executes the calls with two custom tools,
  `run_experiment` and `write_text`. Per sample: four model turns, three tool calls.
- `episodes_direct` (lower bound of inspect's cost): a solver calls `sandbox().exec` twice and
  `sandbox().write_file` once itself, with no model turn, no tool dispatch and no tool
  messages in the transcript.

`WORK` counts the model turns, shell commands and file writes actually done in this process;
`inspect_run.py` prints it so the caller can check that every sample did exactly this work.
"""

from collections import Counter

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageTool, ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer
from inspect_ai.solver import Generate, TaskState, generate, solver, use_tools
from inspect_ai.tool import tool
from inspect_ai.util import sandbox

SAMPLES = 200
MODEL_NAME = "mockllm/model"

# What each sample does, in order; the same calls as bench/episodes/replay.jsonl (whose last
# line, `submit`, corresponds to the sample ending and being scored).
SCRIPT = [
    ("run_experiment", {"command": "ls", "timeout_sec": 10}),
    ("run_experiment", {"command": "cat input.txt", "timeout_sec": 10}),
    ("write_text", {"path": "answer.txt", "content": "hello\n"}),
]

# Work done in this process: "model_turn", "exec" (shell commands, scorer's included), "write".
WORK = Counter()

# Fixed token usage for every mock output. Without it mockllm counts tokens with tiktoken,
# which downloads its encoding on first use and fails offline.
USAGE = ModelUsage(input_tokens=100, output_tokens=10, total_tokens=110)


async def shell(command: str, timeout_sec: int):
    """Runs `sh -c command` in the sample's sandbox directory; returns inspect's ExecResult."""
    WORK["exec"] += 1
    return await sandbox().exec(["sh", "-c", command], timeout=timeout_sec)


async def write(path: str, content: str) -> None:
    """Writes `content` to `path` (relative to the sample's sandbox directory)."""
    WORK["write"] += 1
    await sandbox().write_file(path, content)


@tool
def run_experiment():
    async def execute(command: str, timeout_sec: int = 10) -> str:
        """Run a shell command in the workspace.

        Args:
          command: The shell command (run with `sh -c`).
          timeout_sec: Seconds before the command is killed.
        """
        result = await shell(command, timeout_sec)
        return f"exit status {result.returncode}\n{result.stdout}{result.stderr}"

    return execute


@tool
def write_text():
    async def execute(path: str, content: str) -> str:
        """Write a text file in the workspace.

        Args:
          path: Workspace-relative path.
          content: The file's text.
        """
        await write(path, content)
        return f"wrote {len(content)} bytes to {path}"

    return execute


def scripted_turn(input, tools, tool_choice, config) -> ModelOutput:
    """mockllm's `custom_outputs` callable: the model's answer to one turn of the agent loop.

    Called with the conversation so far; the number of tool results (`ChatMessageTool`) already
    in it says how far the script has got, so the answer is the next call of SCRIPT, or a plain
    final answer (no tool call, which ends `generate(tool_calls="loop")`) once all have run.
    A tool that failed (its message carries an `error`) raises, so the sample errors and the
    caller's check fails instead of scoring a run that did not do the work.
    """
    WORK["model_turn"] += 1
    results = [m for m in input if isinstance(m, ChatMessageTool)]
    failed = [m for m in results if m.error is not None]
    if failed:
        raise RuntimeError(f"tool {failed[0].function} failed: {failed[0].error.message}")
    if len(results) < len(SCRIPT):
        name, arguments = SCRIPT[len(results)]
        output = ModelOutput.for_tool_call(MODEL_NAME, name, arguments)
    else:
        output = ModelOutput.from_content(MODEL_NAME, "wrote answer.txt")
    output.usage = USAGE
    return output


@solver
def two_commands_one_write():
    """The direct variant's solver: the script's three calls made on the sandbox directly."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        for name, arguments in SCRIPT:
            if name == "run_experiment":
                result = await shell(arguments["command"], arguments["timeout_sec"])
                if not result.success:
                    raise RuntimeError(f"{arguments['command']!r} failed: {result.stderr}")
            else:
                await write(arguments["path"], arguments["content"])
        return state

    return solve


@scorer(metrics=[accuracy()])
def answer_file_holds_word():
    """One shell command, like the specgap package's evaluator: correct when answer.txt is the word."""

    async def score(state: TaskState, target: Target) -> Score:
        check = await shell(f"grep -qx {target.text} answer.txt", 30)
        return Score(value=CORRECT if check.success else INCORRECT)

    return score


def dataset(samples: int) -> list[Sample]:
    """`samples` identical samples, each with its own copy of `input.txt` ("hello\\n")."""
    return [
        Sample(id=i + 1, input="Read input.txt and write its word to answer.txt.",
               target="hello", files={"input.txt": "hello\n"})
        for i in range(samples)
    ]


@task
def episodes_agent(samples: int = SAMPLES):
    """The work through inspect's agent loop: scripted mockllm turns, tools run by generate()."""
    return Task(
        dataset=dataset(samples),
        solver=[use_tools(run_experiment(), write_text()), generate(tool_calls="loop")],
        scorer=answer_file_holds_word(),
        model=get_model(MODEL_NAME, custom_outputs=scripted_turn),
        sandbox="local",
    )


@task
def episodes_direct(samples: int = SAMPLES):
    """The work as direct sandbox calls from a solver: no model turn, no tool dispatch."""
    return Task(
        dataset=dataset(samples),
        solver=two_commands_one_write(),
        scorer=answer_file_holds_word(),
        model=get_model(MODEL_NAME),
        sandbox="local",
    )


# Expected WORK per sample, by variant (checked by inspect_run.py's caller).
_COMMANDS = sum(name == "run_experiment" for name, _ in SCRIPT) + 1  # + the scorer's
_WRITES = sum(name == "write_text" for name, _ in SCRIPT)
EXPECTED_PER_SAMPLE = {
    "agent": {"model_turn": len(SCRIPT) + 1, "exec": _COMMANDS, "write": _WRITES},
    "direct": {"model_turn": 0, "exec": _COMMANDS, "write": _WRITES},
}
TASKS = {"agent": episodes_agent, "direct": episodes_direct}
