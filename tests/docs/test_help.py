"""`python -m bird --help` lists bird's config groups, one line each, their options, and where the reference is
(conf/hydra/help/bird.yaml, Hydra's help template)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "conf" / "hydra" / "help" / "bird.yaml"


def _described(template: str) -> set[str]:
    block = template.split("== Config groups (GROUP=OPTION) ==")[1].split("== Options ==")[0]
    return {line.split()[0] for line in block.splitlines() if line.strip()}


def test_help_lists_the_groups_their_options_and_the_reference():
    out = subprocess.run([sys.executable, "-m", "bird", "--help"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300, check=True).stdout
    assert re.search(r"^method\s+one published method", out, re.M)
    assert re.search(r"^method: .*\beureka\b.*\bzeroshot\b", out, re.M)
    assert re.search(r"^budget: demo, matched, paper, smoke$", out, re.M)
    assert re.search(r"^env/gym: .*\bpendulum\b", out, re.M)
    assert "docs/reference/config.md" in out and "docs/reference/cli.md" in out
    assert "== Config ==" not in out  # the resolved config is --cfg job's, not --help's


def test_every_config_group_has_its_line_in_the_help():
    template = yaml.safe_load(TEMPLATE.read_text())["template"]
    groups = {p.name for p in (ROOT / "conf").iterdir() if p.is_dir() and p.name != "hydra"} | {"hydra/launcher"}
    assert groups <= _described(template), groups - _described(template)
    assert "nosuchgroup" not in _described(template)  # the check reads the block, not the whole file
