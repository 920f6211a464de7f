"""Timezone-aware `$now` / `Date()` values and their methods (spec §3.2, §9.2 item 17)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from libs.expressions import ExpressionContext, build_context, evaluate_single, render_template

pytestmark = pytest.mark.unit


def _eval(text: str, tz: str = "UTC") -> Any:
    now = datetime(2024, 3, 31, 0, 30, 15, 250_000, tzinfo=UTC)
    return evaluate_single(text, build_context({}, {}, now=now, timezone=tz))


def test_now_and_date_use_the_configured_timezone(ctx: ExpressionContext) -> None:
    assert evaluate_single("$now.hour", ctx) == 14
    assert evaluate_single("$Date().hour", ctx) == 14
    assert evaluate_single("$now.format()", ctx) == "2024-01-15 14:30:05"


def test_default_format_pattern() -> None:
    assert _eval("$Date('2024-01-15T08:09:10+00:00').format()") == "2024-01-15 08:09:10"
    assert _eval("$Date('2024-01-15T08:09:10+00:00').format") == "2024-01-15 08:09:10"
    assert _eval("$now.format('')") == "2024-03-31 00:30:15"


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("YYYY-MM-DD", "2024-03-31"),
        ("YY/M/D", "24/3/31"),
        ("MMMM MMM", "March Mar"),
        ("dddd ddd", "Sunday Sun"),
        ("HH:mm:ss.SSS", "01:30:15.250"),
        ("h:m:s A a", "1:30:15 AM am"),
        ("hh H", "01 1"),
        ("Z ZZ", "+01:00 +0100"),
        ("DD MMM [at] HH:mm", "31 Mar at 01:30"),
    ],
)
def test_format_tokens(pattern: str, expected: str) -> None:
    # 00:30 UTC is 01:30 CET in Berlin, half an hour before the DST switch.
    assert _eval(f"$now.format('{pattern}')", "Europe/Berlin") == expected


def test_conversions() -> None:
    assert _eval("$now.toISO()") == "2024-03-31T00:30:15.250000+00:00"
    assert _eval("$now.toDate()") == "2024-03-31"
    assert _eval("$now.toTime()") == "00:30:15"
    assert _eval("$now.toUnix()") == 1711845015
    assert _eval("$now.toMillis()") == 1711845015250
    assert _eval("$now.toString()") == "2024-03-31T00:30:15.250000+00:00"
    assert _eval("$now.to_iso()") == "2024-03-31T00:30:15.250000+00:00"


def test_component_getters() -> None:
    assert _eval("$now.year") == 2024
    assert _eval("$now.month") == 3
    assert _eval("$now.day") == 31
    assert _eval("$now.minute") == 30
    assert _eval("$now.second") == 15
    assert _eval("$now.millisecond") == 250
    assert _eval("$now.dayOfWeek") == 6


def test_arithmetic_methods() -> None:
    assert _eval("$now.addDays(1).toDate()") == "2024-04-01"
    assert _eval("$now.addDays(-31).toDate()") == "2024-02-29"
    assert _eval("$now.addHours(2).format('HH:mm')") == "02:30"
    assert _eval("$now.addMinutes(45).format('HH:mm')") == "01:15"
    assert _eval("$now.addMonths(-1).toDate()") == "2024-02-29"
    assert _eval("$now.addMonths(11).toDate()") == "2025-02-28"
    assert _eval("$Date('2024-02-29').addYears(1).toDate()") == "2025-02-28"


def test_hours_follow_the_utc_timeline_across_dst() -> None:
    # Berlin skips 02:00-03:00 on 2024-03-31: one real hour after 01:30 is 03:30.
    text = "$Date('2024-03-31T01:30:00').addHours(1).format('HH:mm Z')"
    assert _eval(text, "Europe/Berlin") == "03:30 +02:00"


def test_start_and_end_of_periods() -> None:
    assert _eval("$now.startOfDay().toISO()") == "2024-03-31T00:00:00+00:00"
    assert _eval("$now.endOfDay().toISO()") == "2024-03-31T23:59:59.999999+00:00"
    assert _eval("$Date('2024-02-10T10:00:00Z').startOfMonth().toDate()") == "2024-02-01"
    assert _eval("$Date('2024-02-10T10:00:00Z').endOfMonth().format()") == "2024-02-29 23:59:59"


def test_date_parsing() -> None:
    assert _eval("$Date('2024-06-01')", "Asia/Tokyo") == "2024-06-01T00:00:00+09:00"
    assert _eval("$Date('2024-06-01T15:30:00Z').hour", "Asia/Tokyo") == 15
    assert _eval("$Date(0)", "Asia/Tokyo") == "1970-01-01T09:00:00+09:00"
    assert _eval("$Date('not a date')") is None
    assert _eval("$Date(null)") is None


def test_dates_compare_by_instant() -> None:
    assert _eval("$Date('2024-01-01') < $now") is True
    assert _eval("$Date('2024-03-31T00:30:15.250Z') == $now") is True
    assert _eval("$now.addDays(1) > $now") is True


def test_dates_in_templates_and_results_are_iso(ctx: ExpressionContext) -> None:
    assert render_template("Today is $now.format('DD/MM/YYYY')", ctx) == "Today is 15/01/2024"
    assert evaluate_single("${'when': now}", ctx) == {"when": "2024-01-15T14:30:05+01:00"}
