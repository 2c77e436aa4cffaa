"""Imported by the fork server alone (``workers.context``), before it forks its first worker: it holds the signals a
spawned worker holds until it is ready for them (``workers.spawning``, ``workers.ignore_interrupts``).

The fork server shares the process group of the process that started it, so a Ctrl-C or a SIGTERM sent to the group
reaches it too. Its own death would kill its workers (they die with their parent), and with them the samples the
run's process is collecting: held, the signals wait in the server forever, and its workers start with them held,
as spawned workers do.
"""

import signal

signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
