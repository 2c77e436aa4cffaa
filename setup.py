"""The one thing pyproject.toml cannot say without an experimental table: the C extensions (README, "PostgreSQL",
"MariaDB"). The drivers' loops over libpq and libmariadb and their parameters' forms (src/maximus/engines/
_libpq_pump.c, _mariadb_pump.c, sharing _pump_core.h), and a New-Order's order lines drawn from the terminal's
stream (src/maximus/workloads/tpcc/_draws.c), and TPC-C's transactions run on a SQLite, a libpq or a libmariadb connection
(src/maximus/workloads/tpcc/_profiles.c, over a backend per library).
Optional: without a C compiler Maximus installs all the same and runs the same code in Python."""

from setuptools import Extension, setup

setup(ext_modules=[
    Extension("maximus.engines._libpq_pump", sources=["src/maximus/engines/_libpq_pump.c"],
              depends=["src/maximus/engines/_pump_core.h"], extra_compile_args=["-O2"], optional=True),
    Extension("maximus.engines._mariadb_pump", sources=["src/maximus/engines/_mariadb_pump.c"],
              depends=["src/maximus/engines/_pump_core.h"], extra_compile_args=["-O2"], optional=True),
    Extension("maximus.workloads.tpcc._draws", sources=["src/maximus/workloads/tpcc/_draws.c"],
              extra_compile_args=["-O2"], optional=True),
    Extension("maximus.workloads.tpcc._profiles", sources=["src/maximus/workloads/tpcc/_profiles.c"],
              depends=[f"src/maximus/workloads/tpcc/_profiles{part}.h" for part in ("", "_sqlite", "_libpq", "_mariadb")],
              extra_compile_args=["-O2"], optional=True),
])
