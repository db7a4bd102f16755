"""The issue-24 acceptance test: a 2-method × 2-task × 1-seed smoke sweep recorded against a local OpenAI-compatible
server, packed, verified, and replayed in a new network namespace with no key: identical results. An edited answer
fails verify (naming the file and the request); a changed request stops replay naming the first differing field."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from llm.fake_servers import FakeLLMServer, prompt_text

from bird.bundle import Bundle, pack, replay, verify
from bird.bundle.archive import BundleError

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
METHODS, TASKS = ("eureka", "revolve"), ("mujoco/inverted_pendulum", "mujoco/hopper")
KEY = "sk-test-bundle-SECRET-0c1d"
# smoke, smaller: 2 iterations × 2 candidates, 512 steps, 100-step episodes
SWEEP = ["budget=smoke", "budget.env_steps=512", "budget.final_env_steps=512", "env.horizon=100",
         "verify.call_timeout_s=60", "video.record=none", "run.progress=false"]

PROGRAM = """{{The {task} term weighted {w} against an action cost.}}

```python
import numpy as np


def compute_reward(obs, action, next_obs, info):
    main = {expr}
    ctrl = -{c} * np.sum(np.square(action), axis=-1)
    return main + ctrl, {{'main': main, 'ctrl': ctrl}}
```
"""


_SEEN: dict[str, int] = {}


def answer(body: dict) -> str:
    """A valid program for the task the prompt describes; its weights a function of the prompt and of how often the
    server has seen it (the K samples of one prompt differ)."""
    text = prompt_text(body)
    _SEEN[text] = _SEEN.get(text, 0) + 1
    h = int(hashlib.sha256(f"{text}/{_SEEN[text]}".encode()).hexdigest()[:8], 16)
    w, c = round(0.5 + (h % 7) / 4, 2), round(0.001 * (1 + h % 5), 4)
    if "rootx_vel" in text:
        return PROGRAM.format(task="forward velocity", w=w, c=c, expr=f"{w} * next_obs['rootx_vel']")
    return PROGRAM.format(task="upright pole", w=w, c=c, expr=f"-{w} * np.abs(next_obs['hinge_angle'])")


def _netns() -> list[str]:
    """A command prefix that runs a program in a new network namespace (only a downed loopback): as root, a plain
    one (the sandbox keeps every OS layer); otherwise inside a user namespace mapping the current user."""
    for prefix in (["unshare", "-n"] if os.geteuid() == 0 else [], ["unshare", "-n", "-c"]):
        if prefix and subprocess.run([*prefix, "true"], capture_output=True).returncode == 0:
            return prefix
    pytest.skip("no network namespace can be made here (unshare -n)")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The sweep, recorded against the local server with a key (a fresh response cache)."""
    pytest.importorskip("openai")
    root = tmp_path_factory.mktemp("bundle_sweep")
    with FakeLLMServer("openai", answer) as srv:
        env = {**os.environ, "OPENAI_API_KEY": KEY, "BIRD_CACHE_DIR": str(root / "cache")}
        cmd = [sys.executable, "-m", "bird", "-m", f"method={','.join(METHODS)}", f"env={','.join(TASKS)}",
               "llm=openai", f"llm.base_url={srv.base_url}", "llm.model=any", "llm.cache=record",
               "llm.price_per_mtok={input: 1.0, output: 2.0}", *SWEEP, f"hydra.sweep.dir={root / 'sweep'}"]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=900)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert len(srv.requests) >= 8  # every candidate of every cell asked the server
    return root


def test_pack_verify_replay_offline_without_key_gives_identical_results(recorded, tmp_path):
    netns = _netns()
    bundle = tmp_path / "sweep.bird"
    res = pack([recorded / "sweep"], bundle, cache_dir=recorded / "cache")
    assert len(res.cells) == 4 and all(c["replayable"] for c in res.cells)
    assert not any(name.endswith((".pkl", ".mp4", ".npz")) for name in Bundle(bundle).names)
    assert verify(bundle).ok
    cells = Bundle(bundle).cells
    assert sum(c["transcript"]["answers"] for c in cells) >= 8

    # replay: a new network namespace (only a downed loopback), no key and no cache variable in the environment
    env = {k: v for k, v in os.environ.items() if "KEY" not in k and not k.startswith(("OPENAI", "BIRD_CACHE"))}
    out = tmp_path / "replayed"
    start = time.monotonic()
    proc = subprocess.run([*netns, sys.executable, "-m", "bird.bundle", "replay", str(bundle), "--out", str(out),
                           "--set", "verify.call_timeout_s=60"],  # the sweep's limit, looser than the default: given
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=900)
    replay_s = time.monotonic() - start
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((out / "replay_report.json").read_text())
    assert [c["status"] for c in report["cells"]] == ["identical"] * 4, report
    # progress per cell on stderr, as each starts and ends, in the report's order
    said = [line for line in proc.stderr.splitlines() if line.startswith("replay: cell ")]
    want = [(f"replay: cell {k}/4 {c['id']} ...", f"replay: cell {k}/4 {c['id']}: identical (")
            for k, c in enumerate(report["cells"], 1)]
    assert len(said) == 8 and all(s == a and e.startswith(b) for (a, b), s, e in zip(want, said[::2], said[1::2],
                                                                                        strict=True)), said
    # and each replayed search's one-line summary (run.progress=false), between them
    assert proc.stdout.count(": completed · returned ") == 4, proc.stdout[-3000:]
    # the command-line comparison of a recorded run with its replay
    same = subprocess.run([sys.executable, "-m", "bird.bundle", "compare", str(recorded / "sweep" / _sweep_dir(cells[0])),
                           str(out / cells[0]["id"])], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert same.returncode == 0 and same.stdout.endswith(": identical\n"), same.stdout + same.stderr
    for cell in cells:  # the acceptance criteria, checked on the files themselves
        old, new = recorded / "sweep" / _sweep_dir(cell), out / cell["id"]
        r_old, r_new = (json.loads((d / "result.json").read_text()) for d in (old, new))
        assert r_new["returned_score"] == r_old["returned_score"] and r_new["returned"] == r_old["returned"]
        assert r_new["llm_cached_calls"] == r_new["llm_calls"] == r_old["llm_calls"]
        ids = sorted(p.name for p in (old / "candidates").iterdir())
        assert ids == sorted(p.name for p in (new / "candidates").iterdir()) and ids
        for cid in ids:
            for name in ("reward.py", "curve.csv", "candidate.json"):
                a, b = old / "candidates" / cid / name, new / "candidates" / cid / name
                assert a.exists() == b.exists(), (cell["id"], cid, name)
                if name != "candidate.json" and a.exists():
                    assert a.read_bytes() == b.read_bytes(), (cell["id"], cid, name)
    answers = sum(c["transcript"]["answers"] for c in cells)
    print(f"\nbundle {bundle.stat().st_size} bytes ({answers} answers), replay {replay_s:.1f} s")


def _sweep_dir(cell: dict) -> str:
    return f"{cell['method']}/{cell['env']}/seed{cell['seed']}"


def _edit_member(src: Path, dst: Path, name: str, edit) -> None:
    """Copy a bundle, rewriting one member (the manifest stays as packed)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            data = zin.read(info)
            zout.writestr(info, edit(data) if info.filename == name else data)


def test_an_edited_answer_fails_verify_naming_the_file_and_the_request(recorded, tmp_path):
    bundle = tmp_path / "sweep.bird"
    pack([recorded / "sweep"], bundle, cache_dir=recorded / "cache")
    cell = Bundle(bundle).cells[0]["id"]
    name = f"transcripts/{cell}.jsonl"

    def edit(data: bytes) -> bytes:
        lines = data.decode().splitlines()
        first = json.loads(lines[1])
        first["response"]["text"] = first["response"]["text"].replace("np.square", "np.abs")
        return "\n".join([lines[0], json.dumps(first, sort_keys=True), *lines[2:]]).encode() + b"\n"

    edited = tmp_path / "edited.bird"
    _edit_member(bundle, edited, name, edit)
    report = verify(edited)
    assert not report.ok
    text = "\n".join(report.problems)
    assert f"{name}: content differs from its manifest hash" in text
    assert f"{name} line 2 (call #1" in text and "the answer differs from the one recorded" in text
    with pytest.raises(BundleError, match="fails verification"):
        replay(edited, tmp_path / "out")
    proc = subprocess.run([sys.executable, "-m", "bird.bundle", "verify", str(edited)], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 1 and name in proc.stdout


def test_a_changed_request_stops_the_cell_naming_the_first_differing_field(recorded, tmp_path):
    bundle = tmp_path / "sweep.bird"
    pack([recorded / "sweep"], bundle, cache_dir=recorded / "cache")
    report = replay(bundle, tmp_path / "out", ["eureka/mujoco-inverted_pendulum"], ["generate.temperature=0.5"],
                    trust_config=True)
    [cell] = report.cells
    assert cell.status == "request_mismatch" and not report.ok
    assert "first differing field: temperature: recorded 1.0, replayed 0.5" in cell.detail, cell.detail
    assert "purpose=reward, iteration=1" in cell.detail
    shutil.rmtree(tmp_path / "out")
