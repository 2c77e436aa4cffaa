"""The server layer: what engines with a server share (``docs/extending.md``, "Adding an engine").

- ``control.py``: ``ServerControl``, the one interface to a server (start, stop, version, where its data is, its
  pid, its watch and log);
- ``managed.py``: ``ManagedServer``, a server of Maximus's in the work directory (its directory, the leftover of a
  killed Maximus, its log, its watch, the catalogue cached per version from a throwaway server);
- ``external.py``: ``ExternalServer``, the user's server (changed only with leave, and put back);
- ``log.py``: ``ServerLog``, what one start of a server wrote in its log;
- ``engine.py``: ``ServerEngine``, the engine's side (the server chosen once, its lifecycle, the fault ladder with
  the engine's ``ServerErrors``).
"""

from maximus.engines.server.control import ServerControl, ServerErrors
from maximus.engines.server.engine import ServerEngine
from maximus.engines.server.external import ExternalServer, allow_changes_option, dsn_option
from maximus.engines.server.log import ServerLog
from maximus.engines.server.managed import ManagedServer, cache_dir, cached_rows, throwaway

__all__ = ["ExternalServer", "ManagedServer", "ServerControl", "ServerEngine", "ServerErrors", "ServerLog",
           "allow_changes_option", "cache_dir", "cached_rows", "dsn_option", "throwaway"]
