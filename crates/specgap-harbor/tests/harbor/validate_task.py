"""Validates Harbor task directories with Harbor's own task model (harbor.models.task).

usage: validate_task.py fields | validate_task.py DIR...

`fields` prints, for each field issue 26 names, whether this Harbor's model has it. For each
DIR: task.toml must validate as a TaskConfig, Harbor's TOML dump of it must validate again to
the same model, and the files Harbor's TaskPaths names must exist (instruction.md, or each
step's; tests/test.sh, or each step's; environment/ unless docker_image is set). Prints one
line per directory; exits 1 if any is invalid.
"""

import importlib.metadata
import sys

from harbor.models.task.config import EnvironmentConfig, StepConfig, TaskConfig, VerifierConfig
from harbor.models.task.paths import TaskPaths

EXPECTED_HARBOR = "0.25.0"
FIELDS = [
    ("TaskConfig", TaskConfig, "steps"),
    ("TaskConfig", TaskConfig, "artifacts"),
    ("TaskConfig", TaskConfig, "multi_step_reward_strategy"),
    ("VerifierConfig", VerifierConfig, "environment_mode"),
    ("EnvironmentConfig", EnvironmentConfig, "memory_mb"),
    ("EnvironmentConfig", EnvironmentConfig, "workdir"),
    ("StepConfig", StepConfig, "name"),
]


def problems(directory):
    paths = TaskPaths(directory)
    config = TaskConfig.model_validate_toml(paths.config_path.read_text())
    again = TaskConfig.model_validate_toml(config.model_dump_toml())
    found = []
    if again != config:
        found.append("Harbor's TOML dump does not read back to the same model")
    if config.steps:
        for step in config.steps:
            if not paths.step_instruction_path(step.name).is_file():
                found.append(f"steps/{step.name}/instruction.md is missing")
            if not (paths.step_tests_dir(step.name) / "test.sh").is_file():
                found.append(f"steps/{step.name}/tests/test.sh is missing")
    else:
        if not paths.instruction_path.is_file():
            found.append("instruction.md is missing")
        if not paths.test_path.is_file():
            found.append("tests/test.sh is missing")
    if not config.environment.docker_image and not paths.environment_dir.is_dir():
        found.append("environment/ is missing and no docker_image is set")
    return config, found


def main(arguments):
    version = importlib.metadata.version("harbor")
    if version != EXPECTED_HARBOR:
        print(f"harbor {version} is installed; the tests pin {EXPECTED_HARBOR}")
        return 1
    if arguments == ["fields"]:
        for owner, model, field in FIELDS:
            print(f"{owner}.{field} {'present' if field in model.model_fields else 'absent'}")
        return 0
    failed = 0
    for directory in arguments:
        try:
            config, found = problems(directory)
        except Exception as error:  # pydantic.ValidationError or a TOML error, with the field named
            failed += 1
            print(f"invalid {directory}: {error}")
            continue
        if found:
            failed += 1
            print(f"invalid {directory}: {'; '.join(found)}")
            continue
        name = config.task.name if config.task else "-"
        print(f"valid {name} steps={len(config.steps or [])}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
