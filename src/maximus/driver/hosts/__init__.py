"""Several client hosts on Ray (issue #45): a run's terminals split over the nodes of a Ray cluster by their homes,
started together from one origin, and merged back into one run (``coordinator.drive_on_hosts``); a build the run
makes first is loaded by the same hosts, each its own homes (``build.load_on_hosts``). Ray is imported only
when a run asks for it (``cluster.import_ray``)."""

from maximus.driver.hosts.build import load_on_hosts
from maximus.driver.hosts.cluster import PlacedHosts, check_reachable, import_ray, placed
from maximus.driver.hosts.coordinator import ClientHosts, HostsResult, drive_on_hosts
from maximus.driver.hosts.shares import check_shares

__all__ = ["ClientHosts", "HostsResult", "PlacedHosts", "check_reachable", "check_shares", "drive_on_hosts",
           "import_ray", "load_on_hosts", "placed"]
