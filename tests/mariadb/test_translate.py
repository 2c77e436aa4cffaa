"""The shared SQL as MariaDB runs it (translate.py): each rewrite, with the parameters each part takes."""

from __future__ import annotations

import pytest

from maximus.engines.mariadb.translate import Part, translate
from maximus.workloads.tpcc.new_order import _SETS


def test_a_join_with_a_values_list_is_one_primary_key_statement_per_row() -> None:
    plan = translate(_SETS["stock"](2, 3, " FOR UPDATE"))
    assert plan.parts == (
        Part("SELECT s_i_id, s_w_id, s_quantity, s_data, s_dist_03 FROM stock WHERE s_i_id = ? AND s_w_id = ? "
             "FOR UPDATE", (0, 1), True),
        Part("SELECT s_i_id, s_w_id, s_quantity, s_data, s_dist_03 FROM stock WHERE s_i_id = ? AND s_w_id = ? "
             "FOR UPDATE", (2, 3), True))


def test_an_update_from_a_values_list_takes_each_rows_parameters_where_its_columns_are() -> None:
    (first, second) = translate(_SETS["restock"](2, 0, "")).parts
    assert first.sql == ("UPDATE stock SET s_quantity = ?, s_ytd = s_ytd + ?, s_order_cnt = s_order_cnt + ?, "
                         "s_remote_cnt = s_remote_cnt + ? WHERE s_i_id = ? AND s_w_id = ?")
    assert (first.takes, second.takes) == ((2, 3, 4, 5, 0, 1), (8, 9, 10, 11, 6, 7))
    assert not first.returns


def test_update_returning_is_the_update_then_a_select_of_the_same_rows() -> None:
    plan = translate("UPDATE customer SET c_balance = c_balance - ?, c_data = substr(? || c_data, 1, 500) "
                     "WHERE c_w_id = ? AND c_d_id = ? AND c_id = ? RETURNING substr(c_data, 1, 200)")
    assert plan.parts == (
        Part("UPDATE customer SET c_balance = c_balance - ?, c_data = substr(? || c_data, 1, 500) "
             "WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?", (0, 1, 2, 3, 4), False),
        Part("SELECT substr(c_data, 1, 200) FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?", (2, 3, 4),
             True))


@pytest.mark.parametrize(("shared", "mariadb"), [
    ("SELECT * FROM tpcc_payment(?, ?, ?::numeric, (now() AT TIME ZONE 'UTC'))",
     "SELECT tpcc_payment(?, ?, ?, UTC_TIMESTAMP(6))"),
    ("SELECT tpcc_delivery(?, ?, (now() AT TIME ZONE 'UTC'))", "SELECT tpcc_delivery(?, ?, UTC_TIMESTAMP(6))"),
    ("CREATE TABLE t (a INTEGER, b TIMESTAMP)", "CREATE TABLE t (a INTEGER, b DATETIME(6))"),
    ("WITH v AS MATERIALIZED (SELECT 1) SELECT * FROM v", "WITH v AS (SELECT 1) SELECT * FROM v"),
    ("ANALYZE stock", "ANALYZE TABLE stock"),
    ("SELECT a FROM t WHERE b = ? FOR UPDATE OF t", "SELECT a FROM t WHERE b = ? FOR UPDATE"),
    ("SELECT a FROM t WHERE b = ?", "SELECT a FROM t WHERE b = ?"),
])
def test_the_other_rewrites(shared: str, mariadb: str) -> None:
    (part,) = translate(shared).parts
    assert part.sql == mariadb and part.takes == tuple(range(mariadb.count("?")))
    assert translate(shared).json_row == shared.startswith("SELECT * FROM tpcc_")


def test_a_values_list_of_uneven_rows_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot translate a VALUES list"):
        translate("SELECT a FROM (VALUES (?, ?), (?)) AS l JOIN t ON a = l.column1")


def test_option_file_values_are_quoted_where_the_file_would_read_them_otherwise() -> None:
    """A '#' starts a comment and a backslash an escape in an option file: such values are quoted, a backslash
    doubled, so the server reads the path or value that was written."""
    from maximus.engines.mariadb.settings import option_line

    assert option_line("datadir", "/var/tmp/a#b/data") == 'datadir = "/var/tmp/a#b/data"'
    assert option_line("init_connect", "a\\b") == 'init_connect = "a\\\\b"'
    assert option_line("port", "3306") == "port = 3306"
