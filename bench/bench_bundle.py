"""Replay bundle size and replay time: the acceptance test's sweep (tests/bundle/test_bundle_e2e.py) recorded once
against a local OpenAI-compatible server, packed, then replayed N times in a new network namespace with no key.

    python bench/bench_bundle.py [--repeats 3] [--out DIR]

The baseline is the recording itself (the same sweep with the server answering): the ratio compares the median
replay with it. Every replay must come back identical, cell by cell.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import record

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from bundle.test_bundle_e2e import METHODS, SWEEP, TASKS, answer  # noqa: E402
from llm.fake_servers import FakeLLMServer  # noqa: E402

from bird.bundle import pack  # noqa: E402


def record_sweep(root: Path) -> float:
    """The sweep against the local server, answers recorded into root/cache; returns its wall time."""
    with FakeLLMServer("openai", answer) as srv:
        env = {**os.environ, "OPENAI_API_KEY": "sk-bench", "BIRD_CACHE_DIR": str(root / "cache")}
        cmd = [sys.executable, "-m", "bird", "-m", f"method={','.join(METHODS)}", f"env={','.join(TASKS)}",
               "llm=openai", f"llm.base_url={srv.base_url}", "llm.model=any", "llm.cache=record",
               "llm.price_per_mtok={input: 1.0, output: 2.0}", *SWEEP, f"hydra.sweep.dir={root / 'sweep'}"]
        start = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
        wall = time.monotonic() - start
    if proc.returncode:
        raise SystemExit(proc.stderr[-3000:])
    return wall


def replay(bundle: Path, out: Path) -> tuple[float, list[str]]:
    """One replay in a new network namespace, no key or cache variable in the environment."""
    env = {k: v for k, v in os.environ.items() if "KEY" not in k and not k.startswith(("OPENAI", "BIRD_CACHE"))}
    netns = ["unshare", "-n"] if os.geteuid() == 0 else ["unshare", "-n", "-c"]
    start = time.monotonic()
    proc = subprocess.run([*netns, sys.executable, "-m", "bird.bundle", "replay", str(bundle), "--out", str(out),
                           "--set", "verify.call_timeout_s=60"],  # the sweep's own limit: limits come from here
                          capture_output=True, text=True, env=env, cwd=ROOT)
    wall = time.monotonic() - start
    if not (out / "replay_report.json").is_file():
        raise SystemExit(f"replay wrote no report (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    report = json.loads((out / "replay_report.json").read_text())
    return wall, [c["status"] for c in report["cells"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, help="working folder (default: a temporary one)")
    args = parser.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="bench-bundle-"))
    started = record.begin()
    recorded = record_sweep(root)
    res = pack([root / "sweep"], root / "sweep.bird", cache_dir=root / "cache")
    answers = sum(c["transcript"]["answers"] for c in res.cells)
    print(f"bundle: {res.size:,} bytes ({res.size / 1024:.0f} KiB), {len(res.cells)} runs, {answers} LLM answers")
    print(f"recording (baseline): {recorded:.1f} s")
    walls = []
    for i in range(args.repeats):
        wall, statuses = replay(root / "sweep.bird", root / f"replay{i}")
        walls.append(wall)
        print(f"replay {i}: {wall:.1f} s, {statuses}, load {os.getloadavg()[0]:.1f}")
        assert statuses == ["identical"] * len(res.cells), statuses
    median = statistics.median(walls)
    print(f"replay median {median:.1f} s; ratio replay / recording {median / recorded:.2f}")
    row = {"runs": len(res.cells), "llm_answers": answers, "bundle_bytes": res.size, "recording_s": recorded,
           "replay_s": median, "replays_s": " ".join(f"{w:.1f}" for w in walls), "ratio": median / recorded}
    print(f"row appended to {record.append('bundle', row, started)}")


if __name__ == "__main__":
    main()
