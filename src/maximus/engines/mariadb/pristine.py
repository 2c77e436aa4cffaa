"""The pristine copy of a MariaDB database, which every run's restore starts from: two ways of keeping it.

- ``TablespaceCopy`` (managed mode, where Maximus owns the data directory): InnoDB's transportable tablespaces.
  The tables' files are copied out under ``FLUSH TABLES ... FOR EXPORT`` with their definitions; a restore
  recreates each table, discards its empty tablespace, copies the pristine file in and imports it. No row is
  inserted again and no index rebuilt: at 1 warehouse a restore takes about a second where copying the rows
  took 3 to 6 s, and the difference grows with the scale.
- ``TwinDatabase`` (a server of the user's, whose files Maximus cannot reach): a twin database in the server.
  A build moves its tables there with one RENAME TABLE; a restore copies them back with INSERT ... SELECT, a
  table per session, side by side.

Either way the restore runs on the running server, whose process stays the one the run started (and placed,
and tuned, with the operating system's knobs), and the working database keeps its stored functions.
"""

from __future__ import annotations

import json
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Sequence

from maximus.errors import EngineError

_CREATE = "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"


def tables_of(admin: Any, database: str) -> list[str]:
    admin.query(b"SELECT table_name FROM information_schema.tables WHERE table_schema = " + admin.literal(database)
                + b" AND table_type = 'BASE TABLE' ORDER BY table_name")
    return [_text(name) for (name,) in admin.store_result().fetch_row(0)]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _side_by_side(work: Callable[[str], None], tables: Sequence[str]) -> None:
    with ThreadPoolExecutor(max_workers=max(1, min(os.cpu_count() or 1, len(tables)))) as pool:
        list(pool.map(work, tables))


class TwinDatabase:
    """The pristine copy as the database ``<name>_pristine`` on the same server."""

    def __init__(self, admin: Callable[[], Any], database: str) -> None:
        self.admin, self.database, self.twin = admin, database, f"{database}_pristine"

    def exists(self) -> bool:
        with self.admin() as admin:
            return bool(tables_of(admin, self.twin))

    def destroy(self) -> None:
        with self.admin() as admin:
            admin.query(f"DROP DATABASE IF EXISTS `{self.twin}`".encode())

    def keep(self) -> None:
        """The tables moved to the twin with one RENAME TABLE: no copy."""
        with self.admin() as admin:
            self._new_twin(admin)
            tables = tables_of(admin, self.database)
            if tables:
                admin.query(("RENAME TABLE " + ", ".join(f"`{self.database}`.`{t}` TO `{self.twin}`.`{t}`"
                                                         for t in tables)).encode())

    def snapshot(self) -> None:
        with self.admin() as admin:
            self._new_twin(admin)
            tables = tables_of(admin, self.database)
        _side_by_side(lambda table: self._copy(self.database, self.twin, table), tables)

    def restore(self) -> None:
        with self.admin() as admin:
            admin.query(f"CREATE DATABASE IF NOT EXISTS `{self.database}` {_CREATE}".encode())
            tables = tables_of(admin, self.twin)
            for table in tables_of(admin, self.database):
                admin.query(f"DROP TABLE `{self.database}`.`{table}`".encode())
        _side_by_side(lambda table: self._copy(self.twin, self.database, table), tables)

    def _new_twin(self, admin: Any) -> None:
        admin.query(f"DROP DATABASE IF EXISTS `{self.twin}`".encode())
        admin.query(f"CREATE DATABASE `{self.twin}` {_CREATE}".encode())

    def _copy(self, source: str, target: str, table: str) -> None:
        with self.admin() as admin:
            # A fresh table filled by one statement: InnoDB need not check the keys' uniqueness row by row.
            admin.query(b"SET SESSION unique_checks = 0, foreign_key_checks = 0")
            admin.query(f"CREATE TABLE `{target}`.`{table}` LIKE `{source}`.`{table}`".encode())
            admin.query(f"INSERT INTO `{target}`.`{table}` SELECT * FROM `{source}`.`{table}`".encode())


class TablespaceCopy:
    """The pristine copy as the tables' InnoDB files and definitions in ``directory`` (``tables.json``), beside
    the data directory ``data_dir`` of a server Maximus runs; ``own`` gives a file to the server's user."""

    def __init__(self, admin: Callable[[], Any], database: str, data_dir: Path, directory: Path,
                 own: Callable[[Path], None]) -> None:
        self.admin, self.database, self.data_dir, self.directory, self.own = admin, database, data_dir, directory, own

    @property
    def _definitions(self) -> Path:
        return self.directory / "tables.json"

    def exists(self) -> bool:
        return self._definitions.exists()

    def destroy(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
        shutil.rmtree(self.directory.with_name(self.directory.name + ".partial"), ignore_errors=True)

    def keep(self) -> None:
        self.snapshot()

    def snapshot(self) -> None:
        """Every table's ``.ibd`` and ``.cfg`` copied while FLUSH TABLES ... FOR EXPORT holds them still, into a
        directory that takes the pristine copy's place only once complete."""
        partial = self.directory.with_name(self.directory.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        with self.admin() as admin:
            tables = tables_of(admin, self.database)
            definitions = [{"table": table, "create": self._definition(admin, table)} for table in tables]
            files = self._files(admin, tables)
            if tables:
                admin.query(("FLUSH TABLES " + ", ".join(f"`{self.database}`.`{t}`" for t in tables)
                             + " FOR EXPORT").encode())
            try:
                for table in tables:
                    for suffix in (".ibd", ".cfg"):
                        shutil.copyfile(files[table].with_suffix(suffix), partial / f"{table}{suffix}")
            finally:
                admin.query(b"UNLOCK TABLES")
        (partial / "tables.json").write_text(json.dumps(definitions))
        shutil.rmtree(self.directory, ignore_errors=True)
        partial.rename(self.directory)

    def restore(self) -> None:
        """Each table recreated empty, its tablespace discarded, the pristine file copied in and imported; the
        working database's other tables dropped. Tables side by side, a session each."""
        try:
            definitions = json.loads(self._definitions.read_text())
        except (OSError, ValueError) as error:
            raise EngineError(f"the pristine copy in {self.directory} is unreadable: {error}") from None
        with self.admin() as admin:
            admin.query(f"CREATE DATABASE IF NOT EXISTS `{self.database}` {_CREATE}".encode())
            for table in tables_of(admin, self.database):
                admin.query(f"DROP TABLE `{self.database}`.`{table}`".encode())
            for definition in definitions:
                admin.select_db(self.database)
                admin.query(definition["create"].encode())
                admin.query(f"ALTER TABLE `{definition['table']}` DISCARD TABLESPACE".encode())
            files = self._files(admin, [definition["table"] for definition in definitions])
        _side_by_side(lambda table: self._import(table, files[table]), [d["table"] for d in definitions])

    def _import(self, table: str, file: Path) -> None:
        for suffix in (".ibd", ".cfg"):
            target = file.with_suffix(suffix)
            shutil.copyfile(self.directory / f"{table}{suffix}", target)
            self.own(target)
        with self.admin() as admin:
            admin.select_db(self.database)
            admin.query(f"ALTER TABLE `{table}` IMPORT TABLESPACE".encode())
        file.with_suffix(".cfg").unlink(missing_ok=True)

    def _definition(self, admin: Any, table: str) -> str:
        admin.query(f"SHOW CREATE TABLE `{self.database}`.`{table}`".encode())
        ((_, create),) = admin.store_result().fetch_row(0)
        return _text(create)

    def _files(self, admin: Any, tables: Sequence[str]) -> dict[str, Path]:
        """Each table's ``.ibd`` file, by the name InnoDB gives it (``tpcc@002d1wh/stock``: the database's name as
        the file system spells it)."""
        admin.query(b"SELECT NAME FROM information_schema.INNODB_SYS_TABLES")
        names = {_text(name) for (name,) in admin.store_result().fetch_row(0)}
        folder = _on_disk(admin, self.database)
        files = {}
        for table in tables:
            key = f"{folder}/{_on_disk(admin, table)}"
            if key not in names:
                raise EngineError(f"MariaDB has no InnoDB table {key} to copy: is {table} an InnoDB table?")
            files[table] = self.data_dir / f"{key}.ibd"
        return files


def _on_disk(admin: Any, name: str) -> str:
    """A database's or table's name as MariaDB spells it in the file system (``tpcc-1wh`` is ``tpcc@002d1wh``)."""
    admin.query(b"SELECT CAST(CONVERT(" + admin.literal(name) + b" USING filename) AS BINARY)")
    ((spelled,),) = admin.store_result().fetch_row(0)
    return _text(spelled)
