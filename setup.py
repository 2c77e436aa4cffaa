"""The one thing pyproject.toml cannot say without an experimental table: the two C extensions (README,
"PostgreSQL"). The PostgreSQL driver's loop and its parameters' text form (src/maximus/engines/_libpq_pump.c),
and a New-Order's order lines drawn from the terminal's stream (src/maximus/workloads/tpcc/_draws.c).
Optional: without a C compiler Maximus installs all the same and runs the same code in Python."""

from setuptools import Extension, setup

setup(ext_modules=[
    Extension("maximus.engines._libpq_pump", sources=["src/maximus/engines/_libpq_pump.c"],
              extra_compile_args=["-O2"], optional=True),
    Extension("maximus.workloads.tpcc._draws", sources=["src/maximus/workloads/tpcc/_draws.c"],
              extra_compile_args=["-O2"], optional=True),
])
