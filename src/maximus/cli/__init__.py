"""The command line: a thin skin over ``maximus.api``."""


def main() -> None:
    """The ``maximus`` command.

    The command line (``cli.app``: typer, rich, the analysis and with it scipy) is imported here, not with
    this package. The worker processes a run or a build spawns each import again the script that started
    Maximus, and the ``maximus`` script imports this package: importing ``cli.app`` there cost each of
    them 0.85 s of CPU at its start, on the CPUs a build or a run's start shares with the server.
    """
    from maximus.cli.app import main as run

    run()
