"""The operating system and the storage stack as experiment variables: the machine's knobs (``knobs``, journaled
and put back by ``changes``), the processes' (``processes``: the server's and the client's scheduling), and the
storage layouts a run's database is put on (``storage``); every change to the machine is in ``journal`` before it
is made."""

from maximus.system.changes import OPT_IN, applied, require
from maximus.system.journal import journal_path, recover
from maximus.system.knobs import OS, OsKnob, current_values, durability_warnings, is_os_knob, machine, split
from maximus.system.processes import (ProcessKnob, apply_to_server, check_server, client_applied, io_class,
                                      scheduling)
from maximus.system.storage import Layout, Placement, StorageKnob, check_throttle, kept, placed

__all__ = ["OPT_IN", "OS", "Layout", "OsKnob", "Placement", "ProcessKnob", "StorageKnob", "applied",
           "apply_to_server", "check_server", "check_throttle", "client_applied", "current_values",
           "durability_warnings", "io_class", "is_os_knob", "journal_path", "kept", "machine", "placed", "recover",
           "require", "scheduling", "split"]
