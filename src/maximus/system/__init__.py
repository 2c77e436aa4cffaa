"""The operating system as an experiment variable: its knobs (``knobs``: the machine's, journaled and put back by
``changes``; the processes', set on the server's and the client's processes by ``processes``)."""

from maximus.system.changes import OPT_IN, applied, journal_path, recover, require
from maximus.system.knobs import OS, OsKnob, current_values, is_os_knob, machine, split
from maximus.system.processes import (ProcessKnob, apply_to_server, check_server, client_applied, io_class,
                                      scheduling)

__all__ = ["OPT_IN", "OS", "OsKnob", "ProcessKnob", "applied", "apply_to_server", "check_server", "client_applied",
           "current_values", "io_class", "is_os_knob", "journal_path", "machine", "recover", "require", "scheduling",
           "split"]
