"""Persist a RunCollection to Parquet and query large collections with DuckDB."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from .rundir import RunCollection, Skipped

__all__ = ["load_parquet", "query", "save_parquet"]

_TABLES = ("runs", "iterations", "candidates", "epic")
_OPTIONAL = ("transfer",)  # tables a collection written before they existed lacks


def save_parquet(coll: RunCollection, out_dir: str | os.PathLike) -> Path:
    """Write runs/iterations/candidates/epic/transfer.parquet and skipped.json into `out_dir` (created)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name in (*_TABLES, *_OPTIONAL):
        getattr(coll, name).to_parquet(out / f"{name}.parquet", index=False)
    (out / "skipped.json").write_text(json.dumps([s.__dict__ for s in coll.skipped], indent=1))
    return out


def load_parquet(in_dir: str | os.PathLike) -> RunCollection:
    """Read a collection written by `save_parquet`."""
    d = Path(in_dir)
    if not (d / "runs.parquet").is_file():
        raise FileNotFoundError(f"{str(d)!r} holds no runs.parquet (write one with save_parquet)")
    tables = {n: pd.read_parquet(d / f"{n}.parquet") for n in _TABLES}
    tables |= {n: pd.read_parquet(d / f"{n}.parquet") for n in _OPTIONAL if (d / f"{n}.parquet").is_file()}
    skipped = [Skipped(**s) for s in json.loads((d / "skipped.json").read_text())]
    return RunCollection(**tables, skipped=skipped)


def query(sql: str, source: RunCollection | str | os.PathLike) -> pd.DataFrame:
    """Run DuckDB SQL over the tables `runs`, `iterations`, `candidates`, `epic`.

    Args:
        sql: e.g. "SELECT benchmark, method, avg(returned_score) FROM runs GROUP BY ALL".
        source: a RunCollection (queried in memory) or a directory written by `save_parquet` (scanned
            from Parquet without loading it into pandas first).
    Returns:
        The result as a DataFrame.
    """
    import duckdb

    con = duckdb.connect()
    try:
        for name in _TABLES:
            if isinstance(source, RunCollection):
                con.register(name, getattr(source, name))
            else:
                path = Path(source) / f"{name}.parquet"
                if not path.is_file():
                    raise FileNotFoundError(f"{str(path)!r} not found (write it with save_parquet)")
                quoted = path.as_posix().replace("'", "''")
                con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{quoted}')")
        return con.execute(sql).df()
    finally:
        con.close()
