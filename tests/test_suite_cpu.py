"""tools/suite_cpu.py: the CPU of a test's processes is charged to it, the background runner's apart, and the report
sums the logs per module."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[1] / "tools"
sys.path.insert(0, str(TOOLS))
import suite_cpu  # noqa: E402

# a host of its own (this worker has other processes under it): it spawns a spinner that stays alive (after reaping a
# spinner of its own), one that the background runner's name marks, and one it reaps itself, then prints what
# suite_cpu charged between before and after
HOST = """
import subprocess, sys
import suite_cpu
SPIN = "import time\\nwhile time.process_time() < {}: pass\\nprint(flush=True)\\ntime.sleep(60)\\n"
REAPS = "import subprocess, sys\\nsubprocess.run([sys.executable, '-c', 'import time\\\\nwhile time.process_time() < 0.2: pass'])\\n"
before = suite_cpu._now()
live = subprocess.Popen([sys.executable, "-c", REAPS + SPIN.format(0.4)], stdout=subprocess.PIPE)
runner = subprocess.Popen([sys.executable, "-c", SPIN.format(0.3), "tests/background.py"], stdout=subprocess.PIPE)
subprocess.run([sys.executable, "-c", "import time\\nwhile time.process_time() < 0.2: pass"], check=True)
assert live.stdout.readline() == runner.stdout.readline() == b"\\n"  # both past their CPU target, asleep
print(*(b - a for a, b in zip(before, suite_cpu._now(), strict=True)))
live.kill(); runner.kill()
"""


def test_a_live_child_and_a_reaped_one_are_counted_and_the_background_runner_apart():
    out = subprocess.run([sys.executable, "-c", HOST], capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(TOOLS), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    _, children, background, _ = map(float, out.stdout.split())
    assert 0.75 <= children < 1.8  # the live child's 0.4 s, the one it reaped (0.2 s) and the one the host reaped (0.2 s)
    assert 0.28 <= background < 0.9  # the process whose command line names tests/background.py


def test_the_report_sums_each_module_and_lists_the_costliest_tests(tmp_path):
    log = tmp_path / "cpu"
    rows = {"gw0": [{"test": "tests/a.py::t1", "own": 1.0, "children": 2.5, "background": 0.5, "wall": 4.0},
                    {"test": "tests/b.py::t2", "own": 0.25, "children": 0.0, "background": 0.0, "wall": 1.0},
                    {"test": "<session end>", "own_total": 3.0, "children_total": 4.0}],
            "gw1": [{"test": "tests/a.py::t3", "own": 7.0, "children": 0.0, "background": 1.0, "wall": 8.0}]}
    for worker, records in rows.items():
        Path(f"{log}.{worker}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    text = suite_cpu.report(str(log), top=2)
    assert text.splitlines()[0] == ("CPU logged per test: 11 s; the background jobs while the tests ran: 2 s; "
                                    "the workers' whole CPU (own + reaped children): 7 s")
    assert "     8.0        2.5     12.0  tests/a.py" in text and "     0.2        0.0      1.0  tests/b.py" in text
    assert text.index("tests/a.py") < text.index("tests/b.py")
    assert text.splitlines()[-2:] == ["     7.0  tests/a.py::t3", "     3.5  tests/a.py::t1"]
