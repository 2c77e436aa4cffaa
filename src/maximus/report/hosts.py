"""The client hosts of a run driven from several (issue #45, ``maximus.client_hosts``): a row per host, with its
share of the terminals, its clock against the coordinator's and what its client cost. The rows are text shared by
the terminal (``render_client_hosts``) and the HTML report, which escapes them."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from maximus.analysis.monitoring import CpuFigures
from maximus.client_hosts import ClientHostRecord, client_hosts, host_group

LISTED_WHOLE = 4  # terminals or homes of a host listed one by one; more are shown by their first, last and count


Machines = Mapping[str, CpuFigures]  # each host's machine CPU over the window, by its group (``host_group``)


def host_columns(hosts: Sequence[ClientHostRecord], machines: Machines | None = None) -> tuple[str, ...]:
    """The table's headings: the homes' under their own name (TPC-C: Warehouses), each host's load of them when the
    run built its database on the hosts, its machine's idle share where it was sampled, a fixed-rate run's schedule
    lag, and the hosts' status when one did not complete."""
    unit = next((host.home_unit for host in hosts if host.home_unit), "")
    return ("Host", "Address", "CPUs", "Terminals", *([unit.capitalize()] if unit else []),
            *(["Load s"] if _loaded(hosts) else []), "Clock offset ms",
            "Drift ms", "Client CPU", *(["Machine idle"] if machines else []), "Transactions",
            *(["Lag p99 ms"] if _scheduled(hosts) else []), *(["Status"] if _unfinished(hosts) else []))


def host_rows(hosts: Sequence[ClientHostRecord], machines: Machines | None = None) -> list[tuple[str, ...]]:
    """A row per host, in the order of ``host_columns``."""
    homes, scheduled, unfinished = any(host.home_unit for host in hosts), _scheduled(hosts), _unfinished(hosts)
    return [_row(host, homes, _loaded(hosts), scheduled, unfinished, machines) for host in hosts]


def _loaded(hosts: Sequence[ClientHostRecord]) -> bool:
    return any(host.load_s is not None for host in hosts)


def _scheduled(hosts: Sequence[ClientHostRecord]) -> bool:
    return any(host.schedule_lag_p99_s is not None for host in hosts)


def _unfinished(hosts: Sequence[ClientHostRecord]) -> bool:
    return any(host.status != "complete" for host in hosts)


def _row(host: ClientHostRecord, homes: bool, loaded: bool, scheduled: bool, unfinished: bool,
         machines: Machines | None) -> tuple[str, ...]:
    clock, drift, lag = host.clock_before, host.drift_s, host.schedule_lag_p99_s
    machine = machines.get(host_group(host.host)) if machines else None
    return (str(host.host), host.address, f"{host.cpus:g}", _listed(host.terminals),
            *([_listed(host.homes)] if homes else []),
            *(["-" if host.load_s is None else f"{host.load_s:.1f}"] if loaded else []),
            f"{clock.offset_s * 1000:+.3f} ± {clock.bound_s * 1000:.3f}",
            "-" if drift is None else f"{drift * 1000:+.3f}", f"{host.cpu_share:.0%}",
            *(["-" if machine is None else f"{machine.idle:.0f} %"] if machines else []), f"{host.transactions:,}",
            *(["-" if lag is None else f"{lag * 1000:.2f}"] if scheduled else []),
            *([host.status] if unfinished else []))


def _listed(values: Sequence[int]) -> str:
    """``0, 2, 4`` or, for many, ``0, 2, …, 98 (50)``."""
    if len(values) <= LISTED_WHOLE:
        return ", ".join(map(str, values))
    return f"{values[0]}, {values[1]}, …, {values[-1]} ({len(values)})"


def render_client_hosts(console: Console, environment: Mapping[str, Any]) -> None:
    """The table "Client hosts" of a run driven from several; nothing for a run on one machine. Each host's machine
    idle share is the monitoring part's (``report.console``): a column more would not fit 120 characters."""
    hosts = client_hosts(environment)
    if not hosts:
        return
    table = Table(title="Client hosts (clock offset to the coordinator's before the run ± its bound, and its drift "
                        "over the run; client CPU: a share of the host's CPUs over its run)", title_justify="left")
    for column in host_columns(hosts):
        table.add_column(column, justify="left" if column in ("Address", "Status") else "right", no_wrap=True)
    for row in host_rows(hosts):
        table.add_row(*map(escape, row))
    console.print(table)
