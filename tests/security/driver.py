"""Security corpus driver: plays the host. It runs every attack program of corpus/ through SandboxedReward (once with
the static checks, once with them bypassed, at a smoke batch size and at a training batch size), then every
escaped payload (escaped_payloads.py) under the OS layers alone, and after each one looks for side effects on the
host: files in the sentinel directory, changes to a victim file the worker's uid could write, connections to
listeners on 127.0.0.1, a decoy process (same uid as the worker) killed or stopped, processes left behind.

    python driver.py --out results.json [--site SITE_PACKAGES] [--only NAME ...]

Run by tests/security/test_corpus.py as root and as an unprivileged user, with a canary secret in its environment.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import shutil
import signal
import site
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
CALL_TIMEOUT_S = 1.5
MEMORY_MB = 1024
BATCHES = (8, 2048)  # the smoke check's size, and a training rollout's
VICTIM_TEXT = b"victim file: original content\n"
_PR_SET_CHILD_SUBREAPER = 36


def corpus_meta(path: Path) -> dict[str, str]:
    """The header comments of an attack program: class, expect, contract, runtime-reason, static-reason."""
    meta = {"class": "", "expect": "", "contract": "compute_reward", "runtime-reason": "", "static-reason": ""}
    for line in path.read_text().splitlines()[:12]:
        m = re.match(r"# (class|expect|contract|runtime-reason|static-reason): (.+)", line)
        if m:
            meta[m.group(1)] = m.group(2).strip()
    return meta


class World:
    """The host's surroundings an attack may try to touch, and the checks that it did not."""

    def __init__(self, canary: str) -> None:
        self.canary = canary
        self.dir = Path(tempfile.mkdtemp(prefix="bird-sec-"))
        self.dir.chmod(0o777)  # writable by the worker's uid: only the sandbox stands in the way
        self.victim = self.dir / "victim.txt"
        self._make_victim()
        self.tcp = socket.socket()
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen(16)
        self.tcp.setblocking(False)
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.udp.setblocking(False)
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.unix_name = f"bird-security-test-{os.getpid()}"  # abstract: bound as "\0" + name
        self.unix.bind("\0" + self.unix_name)
        self.unix.listen(4)
        self.unix.setblocking(False)
        self.decoy = self._spawn_decoy()

    def _make_victim(self) -> None:
        self.victim.write_bytes(VICTIM_TEXT)
        self.victim.chmod(0o666)

    def _spawn_decoy(self) -> subprocess.Popen:
        """Someone else's job holding the canary: as root, a service running as nobody (each worker has a uid of its
        own); otherwise this user, the worker's own uid."""
        user = {"user": 65534, "group": 65534} if os.geteuid() == 0 else {}
        return subprocess.Popen(["sleep", "3600"], env={"PATH": os.defpath, "OPENAI_API_KEY": self.canary}, **user)

    def targets(self) -> dict[str, Any]:
        return {"host_pid": os.getpid(), "decoy_pid": self.decoy.pid, "port": self.tcp.getsockname()[1],
                "udp_port": self.udp.getsockname()[1], "sentinel": str(self.dir), "victim": str(self.victim),
                "unix": self.unix_name}

    def substitute(self, code: str) -> str:
        t = self.targets()
        for key, token in (("sentinel", "@SENTINEL@"), ("victim", "@VICTIM@"), ("port", "@PORT@"),
                           ("udp_port", "@UDP_PORT@"), ("decoy_pid", "@DECOY@"), ("unix", "@UNIX@"),
                           ("host_pid", "@HOST_PID@")):
            code = code.replace(token, str(t[key]))
        return code

    def observe(self, worker_pids: list[int]) -> list[str]:  # noqa: C901 - one check per kind of side effect
        """Side effects since the last call; the world is reset after each one found."""
        effects = []
        extra = sorted(p.name for p in self.dir.iterdir() if p.name != self.victim.name)
        if extra:
            effects.append(f"created in the sentinel directory: {extra}")
        if not self.victim.exists():
            effects.append("victim file deleted")
        elif self.victim.read_bytes() != VICTIM_TEXT:
            effects.append(f"victim file changed: {self.victim.read_bytes()[:40]!r}")
        elif self.victim.stat().st_mode & 0o777 != 0o666:
            effects.append("victim file mode changed")
        for sock, what in ((self.tcp, "TCP"), (self.unix, "unix")):
            while True:
                try:
                    conn, _ = sock.accept()
                except (BlockingIOError, OSError):
                    break
                effects.append(f"{what} connection to the host's listener")
                conn.close()
        while True:
            try:
                data, _ = self.udp.recvfrom(1024)
            except (BlockingIOError, OSError):
                break
            effects.append(f"UDP datagram to the host's listener: {data[:40]!r}")
        if self.decoy.poll() is not None:
            effects.append(f"decoy process died ({self.decoy.returncode})")
        elif _state(self.decoy.pid) == "T":
            effects.append("decoy process stopped")
            self.decoy.kill()
            self.decoy.wait()
        for pid in _processes():
            if pid in (self.decoy.pid, os.getpid()):
                continue
            stat = _stat(pid)
            if stat and (stat["ppid"] == os.getpid() or stat["pgrp"] in worker_pids or stat["session"] in worker_pids):
                effects.append(f"process left behind: {pid} {stat['comm']}")
                try:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                except (ProcessLookupError, ChildProcessError, PermissionError):
                    pass
        if effects:
            self.reset()
        return effects

    def reset(self) -> None:
        for p in self.dir.iterdir():
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink()
        self._make_victim()
        if self.decoy.poll() is not None:
            self.decoy = self._spawn_decoy()

    def close(self) -> None:
        self.decoy.kill()
        self.decoy.wait()
        for sock in (self.tcp, self.udp, self.unix):
            sock.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def _processes() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _stat(pid: int) -> dict[str, Any] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    comm = text[text.index("(") + 1: text.rindex(")")]
    fields = text[text.rindex(")") + 2:].split()
    return {"comm": comm, "state": fields[0], "ppid": int(fields[1]), "pgrp": int(fields[2]), "session": int(fields[3])}


def _state(pid: int) -> str:
    stat = _stat(pid)
    return stat["state"] if stat else "gone"


def _index():
    from bird.envs.base import ObsField, ObsIndex

    return ObsIndex((ObsField("x", 0, 1, "position"), ObsField("v", 1, 2, "velocity"),
                     ObsField("rootx_vel", 3, 1, "velocity"), ObsField("pos", 4, 3, "position")), 7)


def run_program(world: World, path: Path, mode: str) -> dict[str, Any]:
    """One attack program through the product path; mode "runtime" bypasses the static checks."""
    import numpy as np

    from bird.reward import sandbox
    from bird.types import FailureKind

    meta = corpus_meta(path)
    rec: dict[str, Any] = {"name": path.stem, "mode": mode, **meta, "failures": [], "calls": [], "pids": []}
    code = world.substitute(path.read_text())
    original = sandbox.check_source
    if mode == "runtime":
        sandbox.check_source = lambda *a, **k: None  # type: ignore[assignment] - a static-check bypass
    start = time.monotonic()
    try:
        try:
            prog = sandbox.SandboxedReward(code, _index(), CALL_TIMEOUT_S, MEMORY_MB, contract=meta["contract"])
        except sandbox.RewardProgramError as exc:
            static = exc.failure.kind in (FailureKind.REJECTED, FailureKind.COMPILE_ERROR, FailureKind.BAD_SIGNATURE)
            rec["outcome"] = "rejected" if static and mode == "full" else "failed"
            rec["failures"].append(exc.failure.to_json())
        else:
            rec["pids"].append(prog._worker.proc.pid)
            rec["inactive_layers"] = prog.inactive_layers
            rec["plan_list"] = prog.plan_list
            rng = np.random.default_rng(0)
            for b in BATCHES:
                obs = rng.normal(size=(b, 7))
                try:
                    _, comps = prog(obs, rng.normal(size=(b, 3)), obs, dones=np.arange(b) % 50 == 49, n_envs=4,
                                    debug_rows=[0, 1])
                    rec["calls"].append({"batch": b, "names": list(comps), "debug": prog.last_debug})
                except sandbox.RewardProgramError as exc:
                    rec["failures"].append(exc.failure.to_json())
            prog.close()
            rec["outcome"] = "failed" if rec["failures"] else "ran"
    except Exception:  # noqa: BLE001 - the host must never crash on a program; recorded as a failure of the test
        rec["outcome"] = "host_error"
        rec["host_error"] = traceback.format_exc()
    finally:
        sandbox.check_source = original
    rec["seconds"] = round(time.monotonic() - start, 2)
    rec["effects"] = world.observe(rec["pids"])
    return rec


def run_escaped(world: World, name: str, language: str = "numpy") -> dict[str, Any]:
    """One escaped payload: full Python under the OS layers only (those of `language`: jax allows threads)."""
    from bird.reward import sandbox
    from bird.reward.languages import get_language

    rec: dict[str, Any] = {"name": name, "mode": "escaped", "pids": [], "language": language}
    start = time.monotonic()
    try:
        memory_mb = MEMORY_MB if language == "numpy" else 8192  # XLA reserves address space
        worker = sandbox.WorkerProcess(get_language(language), memory_mb, CALL_TIMEOUT_S, module="escaped_payloads",
                                       extra_paths=(str(HERE),))
        rec["pids"].append(worker.proc.pid)
        rec["inactive_layers"] = worker.inactive_layers
        try:
            reply, _ = worker.request({"attempt": name, "targets": world.targets()}, b"", 10.0, 0, "payload",
                                      "10 s limit")
            rec.update({k: reply.get(k) for k in ("outcome", "error", "errno", "text", "value")})
        except sandbox.RewardProgramError as exc:
            rec.update({"outcome": "host_rejected", "failure": exc.failure.to_json()})
        finally:
            worker.close()
    except Exception:  # noqa: BLE001
        rec["outcome"] = "host_error"
        rec["host_error"] = traceback.format_exc()
    rec["seconds"] = round(time.monotonic() - start, 2)
    rec["effects"] = world.observe(rec["pids"])
    return rec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--site", help="site-packages to add (running under an interpreter outside the venv)")
    parser.add_argument("--only", nargs="*", help="run only these corpus programs / payloads")
    args = parser.parse_args()
    if args.site:
        site.addsitedir(args.site)
    sys.path.insert(0, str(HERE))
    import escaped_payloads

    ctypes.CDLL(None).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # orphans of a daemonising attack come back here
    world = World(os.environ["BIRD_TEST_CANARY"])
    results = []
    try:
        for path in sorted(CORPUS.glob("*.py")):
            if args.only and path.stem not in args.only:
                continue
            for mode in ("full", "runtime"):
                results.append(run_program(world, path, mode))
        for name in escaped_payloads.ATTEMPTS:
            if not args.only or name in args.only:
                results.append(run_escaped(world, name, escaped_payloads.LANGUAGE.get(name, "numpy")))
    finally:
        world.close()
        Path(args.out).write_text(json.dumps({"uid": os.geteuid(), "results": results}, indent=1))


if __name__ == "__main__":
    main()
