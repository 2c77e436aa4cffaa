"""TPC-C v5.11 constants, each with the clause it comes from."""

from __future__ import annotations

from maximus.records import DEFERRED_PREFIX

# 1.3 / 4.2.2 / 4.3.3.1: cardinalities
ITEMS = 100_000
DISTRICTS_PER_WAREHOUSE = 10
CUSTOMERS_PER_DISTRICT = 3_000
ORDERS_PER_DISTRICT = 3_000
STOCK_PER_WAREHOUSE = 100_000
FIRST_UNDELIVERED_ORDER = 2_101  # 4.3.3.1: orders 2101..3000 of each district are in NEW-ORDER
TERMINALS_PER_WAREHOUSE = 10  # 4.2.2
MIN_ORDER_LINES, MAX_ORDER_LINES = 5, 15  # 2.4.1.3 and 4.3.3.1

# 4.3.3.1: initial values
INITIAL_W_YTD = 300_000.00
INITIAL_D_YTD = 30_000.00
INITIAL_D_NEXT_O_ID = 3_001
INITIAL_C_BALANCE = -10.00
INITIAL_C_YTD_PAYMENT = 10.00
INITIAL_H_AMOUNT = 10.00
INITIAL_C_CREDIT_LIM = 50_000.00

# 4.3.2.3: customer last names from three syllables
SYLLABLES = ("BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING")

# 2.1.6: NURand's A per field, with the field's range
A_C_LAST, C_LAST_RANGE = 255, (0, 999)
A_C_ID, C_ID_RANGE = 1023, (1, CUSTOMERS_PER_DISTRICT)
A_OL_I_ID, OL_I_ID_RANGE = 8191, (1, ITEMS)

# 2.1.6.1: the run-time C for C_LAST must differ from the load-time C by 65..119, but not 96 or 112
C_DELTA_RANGE = (65, 119)
C_DELTA_FORBIDDEN = frozenset({96, 112})

# 2.4.1.4 / 2.4.1.5: New-Order
ROLLBACK_PERCENT = 1
REMOTE_SUPPLY_PERCENT = 1
UNUSED_ITEM_ID = ITEMS + 1  # 2.4.1.5: an unused value triggers the "not-found" rollback
# 2.5.1.2: Payment
PAYMENT_REMOTE_PERCENT = 15
AMOUNT_RANGE_CENTS = (100, 500_000)  # 2.5.1.3: H_AMOUNT 1.00..5,000.00
BY_NAME_PERCENT = 60  # 2.5.1.2 and 2.6.1.2
C_DATA_MAX = 500  # 2.5.2.2
BAD_CREDIT_SHOWN = 200  # 2.5.3.3: the first 200 characters of C_DATA are displayed

CARRIER_RANGE = (1, 10)  # 2.7.1.2: O_CARRIER_ID

# 2.8.1.2: Stock-Level threshold
STOCK_THRESHOLD_RANGE = (10, 20)
STOCK_LEVEL_ORDERS = 20

# 5.2.3: minimum share of each transaction type in the mix (percent)
MIX_MINIMA = {"payment": 43.0, "order_status": 4.0, "delivery": 4.0, "stock_level": 4.0}
# 5.2.4.2: the 23-card deck
DECK = {"new_order": 10, "payment": 10, "order_status": 1, "delivery": 1, "stock_level": 1}
DEFAULT_WEIGHTS = {"new_order": 45, "payment": 43, "order_status": 4, "delivery": 4, "stock_level": 4}

# 5.2.5.2: minimum keying times; 5.2.5.4: minimum mean think times (seconds)
KEYING_TIME = {"new_order": 18.0, "payment": 3.0, "order_status": 2.0, "delivery": 2.0, "stock_level": 2.0}
THINK_TIME_MEAN = {"new_order": 12.0, "payment": 12.0, "order_status": 10.0, "delivery": 5.0, "stock_level": 5.0}
THINK_TIME_TRUNCATION = 10  # 5.2.5.4: think time may be truncated at 10 times its mean

# 5.2.5.3: 90th-percentile response-time limits (seconds)
RESPONSE_TIME_LIMIT = {"new_order": 5.0, "payment": 5.0, "order_status": 5.0, "delivery": 5.0,
                       "stock_level": 20.0, f"{DEFERRED_PREFIX}delivery": 80.0}

# 5.5.1.5: bands the input data of a valid run must fall in (percent, or lines per order); and 2.7.4.2: a run
# whose Deliveries skipped more than 1 % of their districts for want of an undelivered order must report it
VALIDITY_BANDS = {
    "rollback_percent": (0.9, 1.1),
    "average_order_lines": (9.5, 10.5),
    "remote_order_line_percent": (0.95, 1.05),
    "remote_payment_percent": (14.0, 16.0),
    "payment_by_name_percent": (57.0, 63.0),
    "order_status_by_name_percent": (57.0, 63.0),
    "skipped_delivery_percent": (0.0, 1.0),
}
BAND_CLAUSES = {"skipped_delivery_percent": "2.7.4.2"}  # the others' is 5.5.1.5

TRANSACTIONS = ("new_order", "payment", "order_status", "delivery", "stock_level")
DEFERRED_DELIVERY = f"{DEFERRED_PREFIX}delivery"
TRANSACTION_LABELS = {"new_order": "New-Order", "payment": "Payment", "order_status": "Order-Status",
                      "delivery": "Delivery", DEFERRED_DELIVERY: "Deferred-Delivery", "stock_level": "Stock-Level"}
