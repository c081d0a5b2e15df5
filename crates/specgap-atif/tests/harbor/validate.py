"""Validates ATIF trajectory files with Harbor's pydantic models.

usage: validate.py FILE...   (prints one line per file; exits 1 if any file is invalid)
"""

import importlib.metadata
import json
import sys

from harbor.models.trajectories import Trajectory

EXPECTED_HARBOR = "0.25.0"


def main(paths):
    version = importlib.metadata.version("harbor")
    if version != EXPECTED_HARBOR:
        print(f"harbor {version} is installed; the tests pin {EXPECTED_HARBOR}")
        return 1
    failed = 0
    for path in paths:
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
        try:
            trajectory = Trajectory.model_validate(document)
        except Exception as error:  # pydantic.ValidationError, with every field named
            failed += 1
            print(f"invalid {path}: {error}")
            continue
        # What Harbor writes back must be what we wrote: no field dropped or renamed.
        again = trajectory.to_json_dict(exclude_none=True)
        if again != document:
            failed += 1
            print(f"changed {path}: Harbor's round trip differs from the file")
            continue
        print(f"valid {path} {trajectory.schema_version} steps={len(trajectory.steps)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
