"""The README is the front door: at most 15,000 characters, its set-up is the two commands CI runs, and neither it
nor the docs carry a commit hash as prose (a release citation `owner/repo@commit` is a citation, not prose)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
LIMIT = 15_000
# 7 to 40 hex characters with at least one digit and one letter a-f, as a word: what a commit looks like
_HEX = re.compile(r"(?<![\w/.@-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}(?![\w-])")
_CITED = re.compile(r"[\w.-]+/[\w.-]+@[0-9a-f]{7,40}")


def commit_tokens(text: str) -> list[str]:
    """Commit-looking tokens outside code blocks and release citations."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    prose = _CITED.sub("", prose)
    return _HEX.findall(prose)


def _pages() -> list[Path]:
    return [README, *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "methods").glob("*/README.md"))]


def test_readme_fits_in_fifteen_thousand_characters():
    assert len(README.read_text()) <= LIMIT, f"README.md has {len(README.read_text()):,} characters (limit {LIMIT:,})"


def test_readme_sets_up_with_the_two_commands_ci_runs():
    text = README.read_text()
    setup = re.search(r"## Set-up.*?```bash\n(.*?)```", text, re.S).group(1)
    assert [line.split()[:2] for line in setup.splitlines() if line.strip()] == [["make", "run"], ["make", "test"]]
    assert re.search(r"^make test$", (ROOT / ".ci" / "run").read_text(), re.M)
    assert "python -m bird budget=smoke env=gym/pendulum" in text  # the first search


def test_no_commit_hash_in_the_readme_or_the_docs():
    found = {str(p.relative_to(ROOT)): commit_tokens(p.read_text()) for p in _pages()}
    assert not {k: v for k, v in found.items() if v}, found


def test_commit_tokens_tells_a_hash_from_a_citation_and_from_numbers():
    text = ("measured at 3449a25, see `safety-research/bird@54a9ce3` and eureka-research/Eureka@9eee428; "
            "1000000 steps, a decade, 0xdeadbeef\n```\nc9e21c7 in code\n```\nsha abcdef0123456789abcdef0123456789abcdef01")
    assert commit_tokens(text) == ["3449a25", "abcdef0123456789abcdef0123456789abcdef01"]
