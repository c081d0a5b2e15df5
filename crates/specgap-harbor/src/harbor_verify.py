"""specgap's evaluator for an imported Harbor task (docs/harbor.md, "The evaluator").

Runs the task's own tests/test.sh, unchanged, through $SPECGAP_CANDIDATE: in a fresh sandbox
holding a copy of the submission at the task's work directory, the tests read-only at /tests
and an empty /logs/verifier; for an image task that sandbox is on the task's image (or the
verifier's), while this program runs on the host's python3 ([evaluator.environment].commands),
so the image needs neither python3 nor bash, only sh. Only the files left in /logs/verifier once every process of that
sandbox has ended come back here; this program, which the submission never reaches, turns
them into $SPECGAP_OUT/result.json.

Harbor's verifiers run the submitted code in their own processes, so a submission can write
the reward files itself. What this program refuses (reward 0, the reason on stderr):
  * a changed or added submission file that names the reward channel (reward.txt,
    reward.json, /logs/verifier, ctrf);
  * an output file the task's tests never name (a reward.json beside a test.sh that writes
    reward.txt);
  * a CTRF report with failed tests, or whose summary disagrees with its tests, beside a
    full reward; a CTRF report the tests write that is missing beside a reward above 0;
  * a test.sh killed by a signal (its reward file may be anyone's).

An image task whose image was not built at import has `starter_incomplete` (the reason) in
harbor.json: its workspace lacks the files the image has in its work directory, so this
program scores nothing and exits 1 (an evaluation error naming the reason).

With $SPECGAP_STAGE set (1-based: the engine scores stage k's submission of a multi-step
task), only that step's tests run and its reward is the result; unset (specgap check, a
one-step task), every step runs and the rewards are combined by the task's strategy.
When one step ran and its reward stands, result.json also has `rewards`: the step's reward
keys (reward.json's, or {"reward": ...} from reward.txt), which a stage's per-key min_reward
table is compared with.
"""

import hashlib
import json
import math
import os
import re
import shlex
import subprocess
import sys

CHANNEL_WORDS = (b"reward.txt", b"reward.json", b"/logs/verifier", b"ctrf")
SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def note(message):
    print(f"specgap-harbor: {message}", file=sys.stderr)


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 16), b""):
            digest.update(block)
    return digest.hexdigest()


def known_files(config, last_index):
    """Path -> the SHA-256s the task itself put there: the starter's, and the files of every
    stage up to the step at `last_index` (added to the workspace when that stage began)."""
    known = {rel: {digest} for rel, digest in config.get("starter_sha256", {}).items()}
    for files in config.get("stage_sha256", [])[: last_index + 1]:
        for rel, digest in files.items():
            known.setdefault(rel, set()).add(digest)
    return known


def changed_files(workspace, starter):
    """Workspace-relative paths of regular files that are new or differ from every version
    the task itself put there (`starter`: path -> set of SHA-256s)."""
    changed = []
    for root, dirs, files in os.walk(workspace):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in sorted(files):
            path = os.path.join(root, name)
            rel = os.path.relpath(path, workspace)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            if sha256(path) not in starter.get(rel, ()):
                changed.append(rel)
    return changed


def channel_references(workspace, starter):
    """Changed files that name the verifier's reward channel, with the word found."""
    found = []
    for rel in changed_files(workspace, starter):
        with open(os.path.join(workspace, rel), "rb") as f:
            data = f.read(4 << 20).lower()
        for word in CHANNEL_WORDS:
            if word in data:
                found.append(f"{rel} names {word.decode()}")
                break
    return found


def reward_from_text(text):
    value = float(text.strip())
    if not math.isfinite(value):
        raise ValueError(f"reward.txt holds {value}")
    return value, {"reward": value}


def reward_from_json(text):
    rewards = json.loads(text)
    values = rewards if isinstance(rewards, dict) else {"reward": rewards}
    for key, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"reward.json's {key!r} is {value!r}, not a finite number")
    if not values:
        raise ValueError("reward.json has no key")
    if "reward" in values:
        return float(values["reward"]), values
    return sum(values.values()) / len(values), values


def ctrf_problem(document, reward):
    """Why a CTRF report contradicts a full reward, or None."""
    results = document.get("results") if isinstance(document, dict) else None
    if not isinstance(results, dict):
        return "the CTRF file has no results"
    tests = results.get("tests") or []
    failing = [t.get("name", "?") for t in tests if isinstance(t, dict) and t.get("status") in ("failed", "other")]
    summary = results.get("summary") or {}
    if isinstance(summary, dict) and isinstance(summary.get("failed"), int) and summary["failed"] != sum(
        1 for t in tests if isinstance(t, dict) and t.get("status") == "failed"
    ):
        return "the CTRF summary's failed count disagrees with its tests"
    if isinstance(summary, dict) and isinstance(summary.get("tests"), int) and summary["tests"] != len(tests):
        return "the CTRF summary's test count disagrees with its tests"
    if failing and reward >= 1.0:
        return f"the CTRF report fails {', '.join(failing[:5])} but the reward is {reward}"
    return None


def test_command(config, step):
    """How the candidate starts test.sh, as Harbor does: made executable (here, in this
    program's copy of the tests, which the candidate sees read-only at /tests), then run by its
    `#!` line from a `sh -c` command line (a script without one is run by sh itself), with the
    verifier's variables as assignments. Only `sh` is needed in the image: no `bash`, and no
    `env` unless a variable's name is not one the shell can assign."""
    script = os.path.join(step["tests"], "test.sh")
    os.chmod(script, os.stat(script).st_mode | 0o111)
    variables = sorted(config.get("verifier_env", {}).items())
    if all(SHELL_NAME.fullmatch(k) for k, _ in variables):
        assignments = [f"{k}={shlex.quote(str(v))}" for k, v in variables]
        return ["sh", "-c", " ".join(assignments + ["/tests/test.sh"])]
    # A name the shell cannot assign: set them all with env(1), which the image then needs.
    return ["env"] + [f"{k}={v}" for k, v in variables] + ["sh", "-c", "/tests/test.sh"]


def run_step(config, step, scratch):
    """Runs one step's test.sh; returns (reward or None, flags, rewards dict)."""
    out = os.path.join(scratch, "out")
    os.makedirs(out)
    layout = os.path.join(scratch, "layout")
    with open(layout, "w") as f:
        f.write(f"workdir {config['workdir']}\nro {step['tests']} /tests\nout /logs/verifier\n")
        f.write(f"timeout {max(1, int(config.get('verifier_timeout_sec', 600)))}\n")
    env = dict(os.environ, SPECGAP_CANDIDATE_LAYOUT=layout, SPECGAP_CANDIDATE_OUT=out)
    command = shlex.split(os.environ["SPECGAP_CANDIDATE"]) + test_command(config, step)
    proc = subprocess.run(command, env=env, stdin=subprocess.DEVNULL, capture_output=True)
    sys.stderr.write(proc.stderr.decode("utf-8", "replace")[-2000:])
    flags = []
    if proc.returncode == 124:
        note(f"step {step['name']}: test.sh timed out")
        return 0.0, flags, {}
    if proc.returncode >= 128 and proc.returncode != 125:
        flags.append(f"test.sh was killed by signal {proc.returncode - 128}")
    names = sorted(os.listdir(out))
    declared = set(config.get("declared_outputs", []))
    for name in names:
        if name not in declared:
            flags.append(f"{name} appeared in /logs/verifier, which the task's tests never write")
    read = lambda name: open(os.path.join(out, name), encoding="utf-8", errors="replace").read()
    # Harbor reads reward.json when it exists, else reward.txt.
    if "reward.json" in names:
        reward, rewards = reward_from_json(read("reward.json"))
    elif "reward.txt" in names:
        reward, rewards = reward_from_text(read("reward.txt"))
    else:
        note(f"step {step['name']}: test.sh (status {proc.returncode}) wrote no reward; scored 0")
        return 0.0, flags, {}
    for name in sorted(declared - set(names)):
        if "ctrf" in name.lower() and reward > 0:
            flags.append(f"the task's tests write {name}, which is missing beside a reward of {reward}")
    for name in names:
        if name.endswith(".json") and name != "reward.json":
            try:
                document = json.loads(read(name))
            except ValueError:
                continue
            if isinstance(document, dict) and "results" in document:
                problem = ctrf_problem(document, reward)
                if problem:
                    flags.append(problem)
    return reward, flags, rewards


def chosen_steps(steps):
    """(index, step) pairs to run: the one $SPECGAP_STAGE names, else every step."""
    stage = os.environ.get("SPECGAP_STAGE", "").strip()
    if not stage:
        return list(enumerate(steps))
    if not stage.isdigit() or not 1 <= int(stage) <= len(steps):
        raise SystemExit(f"specgap-harbor: SPECGAP_STAGE={stage!r} names no step of {len(steps)}")
    index = int(stage) - 1
    return [(index, steps[index])]


def main():
    with open("harbor.json", encoding="utf-8") as f:
        config = json.load(f)
    incomplete = config.get("starter_incomplete")
    if incomplete:
        note(
            f"the starter is incomplete ({incomplete}): the files the task's image has in {config['workdir']} "
            "are missing from the workspace, so no reward is given; import the task again where its image can be built"
        )
        return 1
    workspace = os.environ["SPECGAP_WORKSPACE"]
    chosen = chosen_steps(config["steps"])
    flags = channel_references(workspace, known_files(config, chosen[-1][0]))
    rewards = []
    keyed = {}
    for index, step in chosen:
        scratch = os.path.join(os.getcwd(), f".specgap-step-{index}")
        reward, step_flags, values = run_step(config, step, scratch)
        flags += [f"step {step['name']}: {flag}" for flag in step_flags]
        note(f"step {step['name']}: reward {reward} {json.dumps(values, sort_keys=True)}")
        rewards.append(reward)
        keyed = values
    if config.get("strategy") == "final":
        reward = rewards[-1]
    else:
        reward = sum(rewards) / len(rewards)
    if flags:
        for flag in flags:
            note(f"reward refused: {flag}")
        reward = 0.0
    if not 0.0 <= reward <= 1.0:
        note(f"the reward {reward} is outside [0, 1], which specgap's result needs")
        return 1
    result = {"version": 1, "reward": reward}
    # One step's reward keys, as Harbor's per-key min_reward sees them; none when several steps
    # were combined, or when the reward was refused (a stage gated on a key then stops).
    if len(chosen) == 1 and keyed and not flags:
        result["rewards"] = {key: float(value) for key, value in sorted(keyed.items())}
    with open(os.path.join(os.environ["SPECGAP_OUT"], "result.json"), "w", encoding="utf-8") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
