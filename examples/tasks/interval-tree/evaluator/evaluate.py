#!/usr/bin/env python3
"""Per-test verifier of examples/interval-tree (a test-scored task in the style of seed 001).

Protocol (specgap DESIGN section 2): the submitted library is only ever executed through
``$SPECGAP_CANDIDATE``, which runs a command in a fresh sandbox holding nothing but a copy of
the submitted workspace. The hidden tests (``hidden_tests.py``, never shown to the agent) are
piped to ``python3 -`` there; each test prints ``<nonce> <test id> <status>``. A test with no
line (the library crashed the interpreter, hung, or printed over it) counts as ``error``.
Writes ``$SPECGAP_OUT/result.json`` as ``{"version": 1, "tests": {id: pass|fail|error}}``.
Standard library only; deterministic (fixed seeds in the tests); about a second.
"""

import json
import os
import re
import secrets
import shlex
import subprocess
import sys

CANDIDATE_TIMEOUT_SEC = 90
TEST_LINE = re.compile(r"^@test\ndef (\w+)\(", re.MULTILINE)


def main():
    out_dir = os.environ.get("SPECGAP_OUT", ".")
    launcher = shlex.split(os.environ.get("SPECGAP_CANDIDATE", ""))
    with open("hidden_tests.py", encoding="utf-8") as handle:
        source = handle.read()
    test_ids = TEST_LINE.findall(source)
    if not test_ids or not launcher:
        print("evaluate.py: no tests found or SPECGAP_CANDIDATE unset", file=sys.stderr)
        return 2
    nonce = "T" + secrets.token_hex(12)
    program = source.replace("@@NONCE@@", nonce)
    results = {test_id: "error" for test_id in test_ids}
    try:
        run = subprocess.run(
            launcher + ["python3", "-"],
            input=program.encode("utf-8"),
            capture_output=True,
            timeout=CANDIDATE_TIMEOUT_SEC,
        )
        stdout = run.stdout.decode("utf-8", "replace")
        stderr = run.stderr.decode("utf-8", "replace")
        status = run.returncode
    except subprocess.TimeoutExpired as expired:
        stdout = (expired.stdout or b"").decode("utf-8", "replace")
        stderr = (expired.stderr or b"").decode("utf-8", "replace")
        status = "timeout"
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == nonce and parts[1] in results and parts[2] in ("pass", "fail", "error"):
            results[parts[1]] = parts[2]
    with open(os.path.join(out_dir, "result.json"), "w", encoding="utf-8") as handle:
        json.dump({"version": 1, "tests": results}, handle, indent=2, sort_keys=True)
        handle.write("\n")
    failing = sorted(t for t, r in results.items() if r != "pass")
    print("candidate exit %s; failing: %s" % (status, ", ".join(failing) or "none"), file=sys.stderr)
    print(stderr[-4000:], file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
