"""`verify`: a bundle's hashes, completeness and schema version, and what each of its cells can reproduce."""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bird.bundle.archive import MANIFEST, BundleError, sha256
from bird.bundle.reader import Bundle
from bird.bundle.transcript import answer_ok, key_problem
from bird.environment import describe_environment, same_machine

__all__ = ["verify", "VerifyReport", "REQUIRED_RUN_FILES"]

REQUIRED_RUN_FILES = ("config.yaml", "result.json", "task.json", "status.json", "llm_calls.jsonl")


@dataclass
class VerifyReport:
    path: Path
    schema_version: int | None = None
    problems: list[str] = field(default_factory=list)
    cells: list[dict[str, Any]] = field(default_factory=list)  # {id, replay, expect, why}

    @property
    def ok(self) -> bool:
        return not self.problems

    def render(self) -> str:
        lines = [f"{self.path}: schema_version {self.schema_version}, {len(self.cells)} cell(s)"]
        lines += [f"  PROBLEM {p}" for p in self.problems]
        for c in self.cells:
            lines.append(f"  {c['id']}: {c['replay']}" + (f" ({c['why']})" if c.get("why") else ""))
        lines.append("verified: every file matches the manifest" if self.ok else
                     f"FAILED: {len(self.problems)} problem(s)")
        return "\n".join(lines)


def _check_files(bundle: Bundle, report: VerifyReport) -> dict[str, bytes]:
    """Every listed file present with its hash and size; nothing unlisted. Returns the members that are intact."""
    listed = {f["path"]: f for f in bundle.manifest.get("files", [])}
    intact: dict[str, bytes] = {}
    with zipfile.ZipFile(bundle.path) as zf:
        present = set(zf.namelist()) - {MANIFEST}
        for name in sorted(present - set(listed)):
            report.problems.append(f"{name}: in the archive but not in the manifest")
        for name, entry in sorted(listed.items()):
            if name not in present:
                report.problems.append(f"{name}: listed in the manifest but missing")
                continue
            try:
                data = zf.read(name)
            except (zipfile.BadZipFile, OSError) as exc:
                report.problems.append(f"{name}: cannot be read ({exc})")
                continue
            if sha256(data) != entry["sha256"] or len(data) != entry["size"]:
                report.problems.append(f"{name}: content differs from its manifest hash (edited or corrupt)")
                continue
            intact[name] = data
    return intact


def _check_transcript(bundle: Bundle, cell: str, data: bytes | None, report: VerifyReport) -> None:
    """Each answer against the index's hash, each text-only request against its key: names the edited request."""
    name = f"transcripts/{cell}.jsonl"
    try:
        text = data.decode() if data is not None else bundle.read(name).decode()
        lines = [json.loads(ln) for ln in text.splitlines() if ln.strip()]
    except (ValueError, UnicodeDecodeError) as exc:
        report.problems.append(f"{name}: not JSON lines ({exc})")
        return
    except BundleError:
        return  # already reported as missing
    try:
        index = bundle.table("llm_calls")
        recorded = {(r.cell, int(r.seq)): r.response_sha256 for r in index.itertuples()}
    except (BundleError, OSError, ValueError, AttributeError):
        recorded = {}
    for n, line in enumerate(lines, 1):
        if not isinstance(line, dict):
            report.problems.append(f"{name} line {n}: not a transcript line")
            continue
        where = (f"{name} line {n} (call #{line.get('seq')}, key {str(line.get('key'))[:16]}..., "
                 f"purpose {line.get('purpose')}, iteration {line.get('iteration')})")
        if not answer_ok(line) or recorded.get((cell, line.get("seq")), line.get("response_sha256")) \
                != line.get("response_sha256"):
            report.problems.append(f"{where}: the answer differs from the one recorded")
        if (problem := key_problem(line)) is not None:
            report.problems.append(f"{where}: {problem}")


def _expectation(cell: dict[str, Any], recorded_env: dict[str, Any] | None, here: dict[str, Any]) -> tuple[str, str]:
    """What replaying the cell on this machine gives: bit-for-bit, or within tolerance, and why."""
    det = cell.get("determinism") or {}
    if det.get("sources"):
        return "within tolerance", "; ".join(det["sources"])
    if recorded_env is None:
        return "within tolerance", "the run recorded no environment.json (bit-for-bit not checkable)"
    diffs = same_machine(recorded_env, here)
    if diffs:
        return "within tolerance", "this machine differs from the recording one: " + "; ".join(diffs[:4])
    return "bit-for-bit", "deterministic learners on the same CPU and packages"


def verify(path: str | Path) -> VerifyReport:
    """Check a bundle; never raises for a bad bundle (the report lists the problems) except when it is no bundle."""
    bundle = Bundle(path)
    report = VerifyReport(Path(path), bundle.manifest.get("schema_version"))
    intact = _check_files(bundle, report)
    here = describe_environment()
    for cell in bundle.cells:
        cid = cell["id"]
        missing = [f for f in REQUIRED_RUN_FILES if f"runs/{cid}/{f}" not in bundle.names]
        if missing:
            report.problems.append(f"runs/{cid}: missing {', '.join(missing)}")
        if f"transcripts/{cid}.jsonl" not in bundle.names:
            report.problems.append(f"transcripts/{cid}.jsonl: missing")
        _check_transcript(bundle, cid, intact.get(f"transcripts/{cid}.jsonl"), report)
        env_name = f"runs/{cid}/environment.json"
        recorded_env = None
        if env_name in intact:
            sessions = json.loads(intact[env_name]).get("sessions") or [None]
            recorded_env = sessions[-1]
        if not cell.get("replayable"):
            report.cells.append({"id": cid, "replay": "cannot replay", "why": cell.get("why_not")})
            continue
        expect, why = _expectation(cell, recorded_env, here)
        n = (cell.get("transcript") or {}).get("answers", 0)
        source = f"{n} recorded answer(s)" if n else "a deterministic generator (no answers needed)"
        report.cells.append({"id": cid, "replay": f"replays from {source}; results {expect}", "expect": expect,
                             "why": why})
    return report
