"""The client hosts of a run driven from several machines (issue #45, ``maximus run --ray ADDRESS --hosts N``): what
the coordinator measured of each, stored in the run's environment under ``CLIENT_HOSTS`` as JSON, and read back by
``show`` and the report. A core record: the run side writes it, the read side reads it, and neither imports Ray."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping

CLIENT_HOSTS = "client_hosts"  # the key of the run's environment that holds them, a list in host order
# A host's machine CPU (``/proc/stat``'s modes, as the OS sampler's ``cpu_seconds_total``), read on the host beside
# its client processes and stored in the run's samples labelled with the host's group (``host_group``)
HOST_CPU_SECONDS = "host_cpu_seconds_total"


def host_group(number: int) -> str:
    """The process group, in the run's samples, of host ``number``'s client processes and of its machine's CPU."""
    return f"client host {number}"


@dataclass(frozen=True)
class ClockReading:
    """A host's clock against the coordinator's, from the ping with the smallest round trip of several: the host's
    ``time.time()`` minus the coordinator's at the ping's middle. The true offset lies within ± ``bound_s`` of it
    (half that round trip: the host read its clock somewhere within the round trip)."""

    offset_s: float
    bound_s: float
    round_trip_s: float


@dataclass(frozen=True)
class ClientHostRecord:
    """One client host: where it ran, its share of the terminals, its clock, and what its client cost."""

    host: int  # 1, 2, ... in the order of the placement group's bundles
    node: str  # Ray's node id
    address: str  # the node's IP address
    cpus: float  # the CPUs Ray gave the node (``ray start --num-cpus``): what its client can use
    terminals: tuple[int, ...]  # of 0..terminals-1
    homes: tuple[int, ...]  # its terminals' homes, 1-based (TPC-C: warehouses); () when terminals have none
    home_unit: str  # what a home is, in the plural ("warehouses"); "" when terminals have none
    clock_before: ClockReading
    clock_after: ClockReading | None  # None: the host was gone after the run
    late_start_s: float  # how long after the agreed start its terminals were released (0: in time: the release reached
    # it before the start); its warm-up was that much shorter
    niceness: int  # its terminals' (Ray starts its workers at 15; the driver puts back its node's, where it may)
    client_cpu_s: float  # its terminal and deferred processes' CPU (as they reported it) and its driver's own
    elapsed_s: float  # the host's run, from its workers' start to their end
    transactions: int  # its transactions in the measured window
    schedule_lag_p99_s: float | None  # a fixed-rate run's: its actual starts after the intended ones, p99
    status: str  # its own run's (``RunStatus``)
    load_s: float | None = None  # its load of its homes' rows when the run built its database on the hosts; None:
    # the run started from a built database (or one built before builds were split)

    @property
    def cpu_share(self) -> float:
        """Its client's CPU over the run, as a share of the CPUs Ray gave its node."""
        return self.client_cpu_s / (self.elapsed_s * self.cpus) if self.elapsed_s > 0 and self.cpus > 0 else 0.0

    @property
    def drift_s(self) -> float | None:
        """How far its clock moved against the coordinator's during the run."""
        return None if self.clock_after is None else self.clock_after.offset_s - self.clock_before.offset_s

    @property
    def name(self) -> str:
        """As messages name it: "host 2 (10.0.0.12)"."""
        return f"host {self.host} ({self.address})"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ClientHostRecord:
        after = data.get("clock_after")
        return cls(**{**data, "terminals": tuple(data["terminals"]), "homes": tuple(data["homes"]),
                      "clock_before": ClockReading(**data["clock_before"]),
                      "clock_after": ClockReading(**after) if after else None})


def client_hosts(environment: Mapping[str, Any]) -> tuple[ClientHostRecord, ...]:
    """The client hosts a run's environment holds; () for a run on this machine alone."""
    return tuple(ClientHostRecord.from_json(host) for host in environment.get(CLIENT_HOSTS, ()))
