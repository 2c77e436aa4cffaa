"""The input-data validity bands (5.5.1.5), the skipped deliveries (2.7.4.2) and the mix minima (5.2.3)
computed from a run's counters and its Delivery result file."""

from __future__ import annotations

from functools import partial

import pytest

from maximus.records import DeferredResult, Outcome, Window
from maximus.workloads.tpcc.constants import TRANSACTIONS, VALIDITY_BANDS
from maximus.workloads.tpcc.validity import BandResult, mix_report
from maximus.workloads.tpcc.validity import validity_report as validity_with_deliveries

BAND_NAMES = ["rollback_percent", "average_order_lines", "remote_order_line_percent", "remote_payment_percent",
              "payment_by_name_percent", "order_status_by_name_percent", "skipped_delivery_percent"]
WINDOW = Window(10.0, 70.0)


def _delivery(queued: float, skipped: int = 0, outcome: Outcome = Outcome.COMMITTED,
              transaction: str = "delivery") -> DeferredResult:
    record = {"w_id": 1, "carrier_id": 3, "delivered": [None] * skipped + list(range(3001, 3011 - skipped))} \
        if outcome is Outcome.COMMITTED else None
    return DeferredResult(0, transaction, queued, queued + 0.5, outcome, record)


DELIVERIES = [_delivery(20.0 + n) for n in range(40)]  # 400 district deliveries, none skipped
validity_report = partial(validity_with_deliveries, deliveries=DELIVERIES, window=WINDOW)


def _counts(new_order: int = 10_000, rolled_back: int = 100, payment: int = 10_000,
            order_status: int = 1_000) -> dict[str, int]:
    return {"new_order": new_order, "new_order.rolled_back": rolled_back, "payment": payment,
            "order_status": order_status, "delivery": 1_000, "stock_level": 1_000}


def _facts(order_lines: int = 100_000, remote_lines: int = 1_000, remote_payments: int = 1_500,
           payment_by_name: int = 6_000, order_status_by_name: int = 600) -> dict[str, int]:
    return {"new_order.order_lines": order_lines, "new_order.remote_order_lines": remote_lines,
            "payment.remote": remote_payments, "payment.by_name": payment_by_name,
            "order_status.by_name": order_status_by_name}


def _by_name(results: list[BandResult]) -> dict[str, BandResult]:
    return {r.name: r for r in results}


def test_bands_are_the_specs() -> None:
    assert VALIDITY_BANDS == {
        "rollback_percent": (0.9, 1.1), "average_order_lines": (9.5, 10.5),
        "remote_order_line_percent": (0.95, 1.05), "remote_payment_percent": (14.0, 16.0),
        "payment_by_name_percent": (57.0, 63.0), "order_status_by_name_percent": (57.0, 63.0),
        "skipped_delivery_percent": (0.0, 1.0),
    }


def test_nominal_values_are_all_ok() -> None:
    results = validity_report(_counts(), _facts(), warehouses=10)
    assert [r.name for r in results] == BAND_NAMES
    report = _by_name(results)
    assert {name: r.status for name, r in report.items()} == dict.fromkeys(BAND_NAMES, "ok")
    assert report["rollback_percent"].value == pytest.approx(1.0)
    assert report["average_order_lines"].value == pytest.approx(10.0)
    assert report["remote_order_line_percent"].value == pytest.approx(1.0)
    assert report["remote_payment_percent"].value == pytest.approx(15.0)
    assert report["payment_by_name_percent"].value == pytest.approx(60.0)
    assert report["order_status_by_name_percent"].value == pytest.approx(60.0)
    # the sample each value rests on
    assert report["rollback_percent"].sample == 10_000
    assert report["remote_order_line_percent"].sample == 100_000
    assert report["remote_payment_percent"].sample == 10_000
    assert report["order_status_by_name_percent"].sample == 1_000
    assert report["skipped_delivery_percent"].value == 0.0 and report["skipped_delivery_percent"].sample == 400
    assert report["skipped_delivery_percent"].clause == "2.7.4.2" and report["rollback_percent"].clause == "5.5.1.5"


def test_skipped_districts_over_1_percent_of_the_windows_deliveries_are_out_of_band() -> None:
    """2.7.4.2: only Deliveries that committed wholly inside the window count; a failed one has no record."""
    outside = [_delivery(5.0, skipped=10), _delivery(69.8, skipped=10)]  # queued before, completed after
    others = [_delivery(30.0, outcome=Outcome.FAILED), _delivery(31.0, skipped=10, transaction="other")]
    four = DELIVERIES[:-1] + [_delivery(60.0, skipped=4)] + outside + others  # 4 of 400: 1 %
    report = _by_name(validity_with_deliveries(_counts(), _facts(), 10, four, WINDOW))
    assert report["skipped_delivery_percent"].value == pytest.approx(1.0)
    assert report["skipped_delivery_percent"].status == "ok" and report["skipped_delivery_percent"].sample == 400
    five = DELIVERIES[:-1] + [_delivery(60.0, skipped=5)]
    assert _by_name(validity_with_deliveries(_counts(), _facts(), 10, five, WINDOW))[
        "skipped_delivery_percent"].status == "OUT OF BAND"


@pytest.mark.parametrize("name, counts, facts", [
    ("rollback_percent", _counts(rolled_back=89), _facts()),  # 0.89 %
    ("rollback_percent", _counts(rolled_back=111), _facts()),  # 1.11 %
    ("average_order_lines", _counts(), _facts(order_lines=94_999, remote_lines=950)),  # 9.4999
    ("average_order_lines", _counts(), _facts(order_lines=105_001, remote_lines=1_050)),  # 10.5001
    ("remote_order_line_percent", _counts(), _facts(remote_lines=949)),  # 0.949 %
    ("remote_order_line_percent", _counts(), _facts(remote_lines=1_051)),  # 1.051 %
    ("remote_payment_percent", _counts(), _facts(remote_payments=1_399)),  # 13.99 %
    ("remote_payment_percent", _counts(), _facts(remote_payments=1_601)),  # 16.01 %
    ("payment_by_name_percent", _counts(), _facts(payment_by_name=5_699)),  # 56.99 %
    ("payment_by_name_percent", _counts(), _facts(payment_by_name=6_301)),  # 63.01 %
    ("order_status_by_name_percent", _counts(), _facts(order_status_by_name=569)),  # 56.9 %
    ("order_status_by_name_percent", _counts(), _facts(order_status_by_name=631)),  # 63.1 %
])
def test_just_outside_a_band_is_out_of_band(name: str, counts: dict, facts: dict) -> None:
    report = _by_name(validity_report(counts, facts, warehouses=10))
    assert report[name].status == "OUT OF BAND", report[name]
    assert all(r.status == "ok" for n, r in report.items() if n != name), report


@pytest.mark.parametrize("name, counts, facts", [
    ("rollback_percent", _counts(rolled_back=90), _facts()),
    ("rollback_percent", _counts(rolled_back=110), _facts()),
    ("average_order_lines", _counts(), _facts(order_lines=95_000, remote_lines=950)),
    ("average_order_lines", _counts(), _facts(order_lines=105_000, remote_lines=1_050)),
    ("remote_payment_percent", _counts(), _facts(remote_payments=1_400)),
    ("remote_payment_percent", _counts(), _facts(remote_payments=1_600)),
    ("payment_by_name_percent", _counts(), _facts(payment_by_name=5_700)),
    ("payment_by_name_percent", _counts(), _facts(payment_by_name=6_300)),
    ("order_status_by_name_percent", _counts(), _facts(order_status_by_name=570)),
    ("order_status_by_name_percent", _counts(), _facts(order_status_by_name=630)),
])
def test_band_edges_are_inside(name: str, counts: dict, facts: dict) -> None:
    assert _by_name(validity_report(counts, facts, warehouses=10))[name].status == "ok"


def test_one_warehouse_marks_the_remote_bands_not_applicable() -> None:
    report = _by_name(validity_report(_counts(), _facts(remote_lines=0, remote_payments=0), warehouses=1))
    assert report["remote_order_line_percent"].status == "n/a"
    assert report["remote_payment_percent"].status == "n/a"
    assert "one warehouse" in report["remote_payment_percent"].note
    others = {n: r.status for n, r in report.items() if not n.startswith("remote_")}
    assert others == dict.fromkeys(others, "ok")


def test_one_warehouse_still_checks_the_other_bands() -> None:
    report = _by_name(validity_report(_counts(rolled_back=300), _facts(remote_lines=0, remote_payments=0),
                                      warehouses=1))
    assert report["rollback_percent"].status == "OUT OF BAND"
    assert report["remote_order_line_percent"].status == "n/a"


def test_remote_bands_apply_with_two_warehouses() -> None:
    report = _by_name(validity_report(_counts(), _facts(remote_lines=0, remote_payments=0), warehouses=2))
    assert report["remote_order_line_percent"].status == "OUT OF BAND"
    assert report["remote_payment_percent"].status == "OUT OF BAND"


def test_no_transactions_is_no_data_not_a_crash() -> None:
    report = _by_name(validity_report({}, {}, warehouses=10, deliveries=[]))
    assert {n: r.status for n, r in report.items()} == dict.fromkeys(BAND_NAMES, "no data")
    assert all(r.value is None and r.sample == 0 for r in report.values())


def test_band_result_status() -> None:
    assert BandResult("x", 5.0, 1.0, 10.0, 3).status == "ok"
    assert BandResult("x", 0.99, 1.0, 10.0, 3).status == "OUT OF BAND"
    assert BandResult("x", 10.01, 1.0, 10.0, 3).status == "OUT OF BAND"
    assert BandResult("x", None, 1.0, 10.0, 0).status == "no data"
    assert BandResult("x", 0.0, 1.0, 10.0, 3, note="why").status == "n/a"


# --- mix minima (5.2.3) ---

def _mix(new_order: int, payment: int, order_status: int, delivery: int, stock_level: int) -> dict[str, int]:
    return {"new_order": new_order, "payment": payment, "order_status": order_status, "delivery": delivery,
            "stock_level": stock_level, "new_order.rolled_back": 10, "deferred_delivery": 999}


def test_mix_report_default_mix_is_ok() -> None:
    results = mix_report(_mix(450, 430, 40, 40, 40))
    assert [r.name for r in results] == [f"{name}_share_percent" for name in TRANSACTIONS]
    report = _by_name(results)
    assert {n: r.status for n, r in report.items()} == {
        "new_order_share_percent": "n/a", "payment_share_percent": "ok", "order_status_share_percent": "ok",
        "delivery_share_percent": "ok", "stock_level_share_percent": "ok"}
    assert report["payment_share_percent"].value == pytest.approx(43.0)
    assert report["payment_share_percent"].low == 43.0
    assert [report[f"{n}_share_percent"].low for n in ("order_status", "delivery", "stock_level")] == [4.0] * 3
    # New-Order has no minimum (5.2.3): reported, never flagged
    assert report["new_order_share_percent"].value == pytest.approx(45.0)
    assert report["new_order_share_percent"].note
    # the extra keys (rolled back, deferred) are not transactions of the mix
    assert all(r.sample == 1_000 for r in results)


def test_mix_report_flags_payment_below_43_percent() -> None:
    report = _by_name(mix_report(_mix(451, 429, 40, 40, 40)))  # payment 42.9 %
    assert report["payment_share_percent"].status == "OUT OF BAND"
    assert report["payment_share_percent"].value == pytest.approx(42.9)
    assert report["new_order_share_percent"].status == "n/a"
    assert [report[f"{n}_share_percent"].status for n in ("order_status", "delivery", "stock_level")] == ["ok"] * 3


@pytest.mark.parametrize("name", ["order_status", "delivery", "stock_level"])
def test_mix_report_flags_a_small_share_below_4_percent(name: str) -> None:
    shares = {"new_order": 450, "payment": 430, "order_status": 40, "delivery": 40, "stock_level": 40}
    shares[name] -= 1  # 3.9 %
    shares["new_order"] += 1
    report = _by_name(mix_report(_mix(**shares)))
    assert report[f"{name}_share_percent"].status == "OUT OF BAND"
    others = {n: r.status for n, r in report.items() if n != f"{name}_share_percent"}
    assert others == {**dict.fromkeys(others, "ok"), "new_order_share_percent": "n/a"}


def test_mix_report_of_nothing_is_no_data() -> None:
    report = _by_name(mix_report({}))
    assert all(r.value is None and r.sample == 0 for r in report.values())
    assert {n: r.status for n, r in report.items() if n != "new_order_share_percent"} == {
        f"{n}_share_percent": "no data" for n in ("payment", "order_status", "delivery", "stock_level")}


def test_mix_report_flags_new_order_only_mix_on_all_four_minima() -> None:
    report = _by_name(mix_report({"new_order": 100}))
    assert [report[f"{n}_share_percent"].status for n in ("payment", "order_status", "delivery", "stock_level")] \
        == ["OUT OF BAND"] * 4
