"""The TPC-C schema (clause 1.3) as data, rendered per dialect; indexes are built after the load."""

from __future__ import annotations

from dataclasses import dataclass

from maximus.engines.base import Dialect


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[tuple[str, str], ...]
    primary_key: tuple[str, ...] = ()

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.columns)


def _address(prefix: str) -> tuple[tuple[str, str], ...]:
    return ((f"{prefix}_street_1", "VARCHAR(20)"), (f"{prefix}_street_2", "VARCHAR(20)"),
            (f"{prefix}_city", "VARCHAR(20)"), (f"{prefix}_state", "CHAR(2)"), (f"{prefix}_zip", "CHAR(9)"))


WAREHOUSE = Table("warehouse", (
    ("w_id", "INTEGER NOT NULL"), ("w_name", "VARCHAR(10)"), *_address("w"),
    ("w_tax", "NUMERIC(4,4)"), ("w_ytd", "NUMERIC(12,2)"),
), ("w_id",))

DISTRICT = Table("district", (
    ("d_id", "SMALLINT NOT NULL"), ("d_w_id", "INTEGER NOT NULL"), ("d_name", "VARCHAR(10)"), *_address("d"),
    ("d_tax", "NUMERIC(4,4)"), ("d_ytd", "NUMERIC(12,2)"), ("d_next_o_id", "INTEGER"),
), ("d_w_id", "d_id"))

CUSTOMER = Table("customer", (
    ("c_id", "INTEGER NOT NULL"), ("c_d_id", "SMALLINT NOT NULL"), ("c_w_id", "INTEGER NOT NULL"),
    ("c_first", "VARCHAR(16)"), ("c_middle", "CHAR(2)"), ("c_last", "VARCHAR(16)"), *_address("c"),
    ("c_phone", "CHAR(16)"), ("c_since", "TIMESTAMP"), ("c_credit", "CHAR(2)"),
    ("c_credit_lim", "NUMERIC(12,2)"), ("c_discount", "NUMERIC(4,4)"), ("c_balance", "NUMERIC(12,2)"),
    ("c_ytd_payment", "NUMERIC(12,2)"), ("c_payment_cnt", "INTEGER"), ("c_delivery_cnt", "INTEGER"),
    ("c_data", "VARCHAR(500)"),
), ("c_w_id", "c_d_id", "c_id"))

HISTORY = Table("history", (
    ("h_c_id", "INTEGER"), ("h_c_d_id", "SMALLINT"), ("h_c_w_id", "INTEGER"), ("h_d_id", "SMALLINT"),
    ("h_w_id", "INTEGER"), ("h_date", "TIMESTAMP"), ("h_amount", "NUMERIC(6,2)"), ("h_data", "VARCHAR(24)"),
))  # 1.3: HISTORY has no primary key

NEW_ORDER = Table("new_order", (
    ("no_o_id", "INTEGER NOT NULL"), ("no_d_id", "SMALLINT NOT NULL"), ("no_w_id", "INTEGER NOT NULL"),
), ("no_w_id", "no_d_id", "no_o_id"))

ORDERS = Table("orders", (
    ("o_id", "INTEGER NOT NULL"), ("o_d_id", "SMALLINT NOT NULL"), ("o_w_id", "INTEGER NOT NULL"),
    ("o_c_id", "INTEGER"), ("o_entry_d", "TIMESTAMP"), ("o_carrier_id", "SMALLINT"),
    ("o_ol_cnt", "SMALLINT"), ("o_all_local", "SMALLINT"),
), ("o_w_id", "o_d_id", "o_id"))

ORDER_LINE = Table("order_line", (
    ("ol_o_id", "INTEGER NOT NULL"), ("ol_d_id", "SMALLINT NOT NULL"), ("ol_w_id", "INTEGER NOT NULL"),
    ("ol_number", "SMALLINT NOT NULL"), ("ol_i_id", "INTEGER"), ("ol_supply_w_id", "INTEGER"),
    ("ol_delivery_d", "TIMESTAMP"), ("ol_quantity", "SMALLINT"), ("ol_amount", "NUMERIC(6,2)"),
    ("ol_dist_info", "CHAR(24)"),
), ("ol_w_id", "ol_d_id", "ol_o_id", "ol_number"))

ITEM = Table("item", (
    ("i_id", "INTEGER NOT NULL"), ("i_im_id", "INTEGER"), ("i_name", "VARCHAR(24)"),
    ("i_price", "NUMERIC(5,2)"), ("i_data", "VARCHAR(50)"),
), ("i_id",))

# The four columns a New-Order changes come last and side by side: PostgreSQL logs an update that stays on
# its page as the bytes between the first and the last changed ones, so at most 12 bytes instead of the 250 that
# the ten S_DIST_xx columns made when S_QUANTITY stood before them (1.3 leaves the order to the schema).
STOCK = Table("stock", (
    ("s_i_id", "INTEGER NOT NULL"), ("s_w_id", "INTEGER NOT NULL"),
    *((f"s_dist_{n:02d}", "CHAR(24)") for n in range(1, 11)), ("s_data", "VARCHAR(50)"),
    ("s_quantity", "SMALLINT"), ("s_ytd", "INTEGER"), ("s_order_cnt", "SMALLINT"), ("s_remote_cnt", "SMALLINT"),
), ("s_w_id", "s_i_id"))

TABLES = (ITEM, WAREHOUSE, DISTRICT, CUSTOMER, HISTORY, ORDERS, NEW_ORDER, ORDER_LINE, STOCK)
TABLES_BY_NAME = {table.name: table for table in TABLES}

# Secondary indexes the transactions need: Payment/Order-Status by last name (2.5.2.2, 2.6.2.2),
# Order-Status's latest order of a customer (2.6.2.2).
INDEXES = (
    ("customer_by_name", "customer", ("c_w_id", "c_d_id", "c_last", "c_first")),
    ("orders_by_customer", "orders", ("o_w_id", "o_d_id", "o_c_id", "o_id")),
)

META_TABLE = "maximus_meta"


def is_money(kind: str) -> bool:
    """Money columns are NUMERIC with two decimals (1.3: W_YTD, C_BALANCE, OL_AMOUNT, I_PRICE, ...)."""
    return kind.startswith("NUMERIC(") and kind.endswith(",2)")


def money_columns(table: Table) -> tuple[str, ...]:
    return tuple(name for name, kind in table.columns if is_money(kind))


def money_in_cents(dialect: Dialect) -> bool:
    """Whether money (NUMERIC with two decimals) is kept as integer cents: where NUMERIC is binary floating point
    (SQLite's is REAL), sums of cents would drift in their last bits."""
    return not dialect.exact_decimals


def column_type(kind: str, dialect: Dialect) -> str:
    """The column's type in the dialect: money in integer cents where the dialect keeps it so; a date and time as
    the dialect holds one to the microsecond (MariaDB's TIMESTAMP counts seconds since 1970 in the session's time
    zone, and ends in 2038)."""
    if kind == "TIMESTAMP":
        return dialect.datetime_type
    return "INTEGER" if money_in_cents(dialect) and is_money(kind) else kind


def create_table_sql(table: Table, dialect: Dialect) -> str:
    columns = [f"{name} {column_type(kind, dialect)}" for name, kind in table.columns]
    if table.primary_key and not dialect.primary_keys_after_load:
        columns.append(f"PRIMARY KEY ({', '.join(table.primary_key)})")
    suffix = dialect.clustered_table_suffix if table.primary_key else ""
    return f"CREATE TABLE {table.name} ({', '.join(columns)}){suffix}"


def create_index_sql(name: str, table: str, columns: tuple[str, ...]) -> str:
    return f"CREATE INDEX {name} ON {table} ({', '.join(columns)})"


def schema_statements(dialect: Dialect) -> list[str]:
    tables = [create_table_sql(table, dialect) for table in TABLES]
    return tables + [f"CREATE TABLE {META_TABLE} (name VARCHAR(64) PRIMARY KEY, value VARCHAR(4000))"]


def index_statements(dialect: Dialect) -> list[str]:
    """Statements run after the data is in: primary keys (where added late), then secondary indexes."""
    return [statement for statements in index_statements_by_table(dialect).values() for statement in statements]


def index_statements_by_table(dialect: Dialect) -> dict[str, list[str]]:
    """The same statements grouped by table, in order: tables can be indexed side by side."""
    by_table: dict[str, list[str]] = {}
    for t in TABLES:
        if t.primary_key and dialect.primary_keys_after_load:
            by_table.setdefault(t.name, []).append(f"ALTER TABLE {t.name} ADD PRIMARY KEY ({', '.join(t.primary_key)})")
    for index in INDEXES:
        by_table.setdefault(index[1], []).append(create_index_sql(*index))
    return by_table
