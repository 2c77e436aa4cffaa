"""What a finished build records about itself, for the workloads that keep it as names and values in one table of
their own (tpcb, the io workloads): written last, so that a load that never ended records nothing, and read back as
``DatabaseInfo``'s common part."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Mapping

from maximus import __version__
from maximus.engines.base import Session

TABLE = "maximus_meta"
CREATE = f"CREATE TABLE {TABLE} (name VARCHAR(64) PRIMARY KEY, value VARCHAR(4000))"


def write(session: Session, workload: str, own: Mapping[str, Any], seed: int, seconds: float,
          creation_settings: Mapping[str, str]) -> None:
    """The build's record: the ``workload`` it is, its ``own`` facts, and what every build records."""
    record = {"workload": workload, **own, "seed": seed, "load_seconds": round(seconds, 3), "fresh": 1,
              "creation_settings": json.dumps(dict(creation_settings)), "maximus_version": __version__,
              "loaded_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    session.begin()
    for name, value in record.items():
        session.execute(f"INSERT INTO {TABLE} (name, value) VALUES (?, ?)", (name, str(value)))
    session.commit()


def read(session: Session, workload: str) -> dict[str, str] | None:
    """The record of a finished build of ``workload``, or None for anything else (not ours, or a load that never
    ended)."""
    try:
        record = dict(session.fetchall(f"SELECT name, value FROM {TABLE}"))
    except Exception:  # no such table
        session.rollback()
        return None
    return record if record.get("workload") == workload else None


def common(record: Mapping[str, str]) -> tuple[int, float, bool, dict[str, str]]:
    """What every build records: its seed, its load time, whether no run has used it yet, its creation settings."""
    return (int(record["seed"]), float(record["load_seconds"]), record["fresh"] == "1",
            json.loads(record["creation_settings"]))


def mark_used(session: Session) -> None:
    """A run starts: the build is no longer fresh."""
    session.execute(f"UPDATE {TABLE} SET value = '0' WHERE name = 'fresh'")
