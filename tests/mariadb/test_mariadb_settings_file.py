"""MariaDB's option file, as managed mode writes it."""

from __future__ import annotations


def test_option_file_values_are_quoted_where_the_file_would_read_them_otherwise() -> None:
    """A '#' starts a comment and a backslash an escape in an option file: such values are quoted, a backslash
    doubled, so the server reads the path or value that was written."""
    from maximus.engines.mariadb.settings import option_line

    assert option_line("datadir", "/var/tmp/a#b/data") == 'datadir = "/var/tmp/a#b/data"'
    assert option_line("init_connect", "a\\b") == 'init_connect = "a\\\\b"'
    assert option_line("port", "3306") == "port = 3306"
