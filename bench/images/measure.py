"""Image-environment benchmark (bench/images/run.sh): makes the packages, then runs the
variants interleaved (A B C, A B C, ...) and prints medians.

Packages (under bench/out/images/): `host` is bench/episodes/task/echo as it is (the host's
commands); `image` is the same package in format 2 with `rootfs = "environment/rootfs.tar"`, a
busybox-static tree laid out with Debian's 18 top-level entries (the number of read-only binds
is what an image adds to a sandbox, not its size); `engine` names the busybox image
`localhost/specgap-bench/busybox:1` (imported into podman from the same tree) with
`image = ...`, for the cold build through the engine.
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "bench/out/images"
BUSYBOX = Path("/bin/busybox")
APPLETS = ["sh", "ls", "cat", "grep", "printf", "echo", "test", "true", "mkdir", "env"]
DEBIAN_TOP = ["bin", "boot", "etc", "home", "lib", "lib64", "media", "mnt", "opt", "root", "run", "sbin", "srv", "tmp", "usr", "var", "proc", "sys"]
IMAGE_REF = "localhost/specgap-bench/busybox:1"
CLI_AGENT = "cli:command=sh -c 'ls >/dev/null; cat input.txt >/dev/null; echo hello > answer.txt'"


def make_tree(dest: Path) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    for name in DEBIAN_TOP:
        (dest / name).mkdir(parents=True)
    shutil.copy(BUSYBOX, dest / "bin/busybox")
    for applet in APPLETS:
        os.symlink("busybox", dest / "bin" / applet)
    (dest / "usr/bin").mkdir(exist_ok=True)
    (dest / "etc/os-release").write_text("NAME=specgap-bench busybox\n")


def make_packages() -> dict:
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    tree = OUT / "tree"
    make_tree(tree)
    tarball = OUT / "rootfs.tar"
    with tarfile.open(tarball, "w") as tar:
        for path in sorted(tree.rglob("*")):
            tar.add(path, arcname=str(path.relative_to(tree)), recursive=False)
    source = ROOT / "bench/episodes/task/echo"
    host = OUT / "host/echo"
    shutil.copytree(source, host)
    packages = {"host": host.parent}
    for name, env_line in [("image", 'rootfs = "environment/rootfs.tar"'), ("engine", f'image = "{IMAGE_REF}"')]:
        pkg = OUT / name / "echo"
        shutil.copytree(source, pkg)
        text = (pkg / "task.toml").read_text()
        text = text.replace("format = 1", "format = 2").replace("commands = []\nbinds = []", env_line)
        (pkg / "task.toml").write_text(text)
        if name == "image":
            (pkg / "environment").mkdir()
            shutil.copy(tarball, pkg / "environment/rootfs.tar")
        packages[name] = pkg.parent
    return packages


def timed(cmd, env=None) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"failed: {' '.join(map(str, cmd))}\n{done.stderr}")
    return elapsed


def check_run(out: Path, repeats: int) -> None:
    rows = subprocess.run(["sqlite3", str(out / "results.sqlite"), "select count(*), sum(final_score) from episodes"], capture_output=True, text=True)
    if rows.returncode == 0 and rows.stdout.strip() != f"{repeats}|{float(repeats)}":
        raise SystemExit(f"run {out}: expected {repeats} episodes scoring 1.0, got {rows.stdout.strip()}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--specgap", required=True)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    specgap = args.specgap
    packages = make_packages()
    cache = OUT / "cache"
    env = dict(os.environ, XDG_CACHE_HOME=str(cache))
    replay = ROOT / "bench/episodes/replay.jsonl"
    have_podman = shutil.which("podman") is not None
    if have_podman:
        subprocess.run(["podman", "rmi", "-f", IMAGE_REF], capture_output=True)
        tar = subprocess.run(["tar", "-C", str(OUT / "tree"), "-c", "."], capture_output=True, check=True).stdout
        subprocess.run(["podman", "import", "-", IMAGE_REF], input=tar, capture_output=True, check=True)
    # Warm the cache (and check every variant once).
    timed([specgap, "env", "build", "--engine", "none", str(packages["image"])], env)
    keys = ["host episode", "image episode", "host cli episode", "image cli episode", "env build again", "cold unpack", "cold engine build", "podman run", "podman create+export"]
    results = {k: [] for k in keys}
    for r in range(args.rounds):
        for variant, agent in [("host", "replay"), ("image", "replay"), ("host", "cli"), ("image", "cli")]:
            out = OUT / f"run-{variant}-{agent}-{r}"
            if agent == "replay":
                agent_args = ["--agent", f"replay:{replay}"]
            else:
                # A cli: agent doing the same work itself (no model request): the agent's own
                # sandbox, gateway, tripwire and harness tools (wrapped for the host's loader
                # on the image) start and stop around it.
                agent_args = ["--agent", CLI_AGENT, "--model", "bench", "--base-url", "http://127.0.0.1:9/v1"]
            cmd = [specgap, "run", str(packages[variant]), *agent_args, "--condition", "hidden", "--jobs", "1", "--repeats", str(args.repeats), "--no-report", "--out", str(out)]
            key = f"{variant} episode" if agent == "replay" else f"{variant} cli episode"
            results[key].append(timed(cmd, env) / args.repeats)
            check_run(out, args.repeats)
            shutil.rmtree(out)
        results["env build again"].append(timed([specgap, "env", "build", "--engine", "none", str(packages["image"])], env))
        cold = OUT / f"cold-{r}"
        cold_env = dict(os.environ, XDG_CACHE_HOME=str(cold))
        results["cold unpack"].append(timed([specgap, "env", "build", "--engine", "none", str(packages["image"])], cold_env))
        if have_podman:
            results["cold engine build"].append(timed([specgap, "env", "build", "--engine", "podman", str(packages["engine"])], cold_env))
            # As specgap's own engine calls: the machine lacks CAP_SYS_RESOURCE, so the limits
            # are passed at their current soft values (nproc at most 32768, as runc accepts).
            nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
            nproc = min(resource.getrlimit(resource.RLIMIT_NPROC)[0], 32768)
            limits = ["--ulimit", f"nofile={nofile}", "--ulimit", f"nproc={nproc}"]
            results["podman run"].append(timed(["podman", "run", "--rm", "--runtime", "runc", *limits, "--network", "none", IMAGE_REF, "true"]))
            start = time.perf_counter()
            cid = subprocess.run(["podman", "create", IMAGE_REF, "true"], capture_output=True, text=True, check=True).stdout.strip()
            subprocess.run(["podman", "export", "-o", str(OUT / "export.tar"), cid], check=True, capture_output=True)
            subprocess.run(["podman", "rm", cid], check=True, capture_output=True)
            results["podman create+export"].append(time.perf_counter() - start)
        shutil.rmtree(cold)
    print(json.dumps({k: {"median_ms": round(statistics.median(v) * 1000, 2), "runs": len(v), "all_ms": [round(x * 1000, 1) for x in v]} for k, v in results.items() if v}, indent=1))
    host, image = statistics.median(results["host episode"]), statistics.median(results["image episode"])
    print(f"image / host per episode: {image / host:.2f}")
    host_cli, image_cli = statistics.median(results["host cli episode"]), statistics.median(results["image cli episode"])
    print(f"image / host per cli: episode: {image_cli / host_cli:.2f}")


if __name__ == "__main__":
    main()
