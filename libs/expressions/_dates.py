"""Timezone-aware date values: the `$now` / `Date()` type, its methods and formatting."""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, tzinfo
from functools import total_ordering
from typing import Any

from libs.expressions._budget import active
from libs.expressions._runtime import MethodImpl, Runtime

DEFAULT_FORMAT = "YYYY-MM-DD HH:mm:ss"
_MONTHS = [calendar.month_name[i] for i in range(1, 13)]
_DAYS = list(calendar.day_name)
# Longest token first inside each family; `[...]` keeps its contents literal (moment.js style).
_FORMAT_RE = re.compile(
    r"\[([^\]]*)\]|YYYY|YY|MMMM|MMM|MM|M|dddd|ddd|DD|D|HH|H|hh|h|mm|m|ss|s|SSS|A|a|ZZ|Z"
)


@total_ordering
class DotDateTime:
    """An aware datetime as seen by expressions; serialises as an ISO-8601 string."""

    __slots__ = ("_dt",)

    def __init__(self, dt: datetime) -> None:
        if dt.tzinfo is None:
            raise ValueError("DotDateTime needs a timezone-aware datetime")
        self._dt = dt

    @property
    def value(self) -> datetime:
        return self._dt

    def iso(self) -> str:
        return self._dt.isoformat()

    def __str__(self) -> str:
        return self.iso()

    def __repr__(self) -> str:
        return f"DotDateTime({self.iso()})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DotDateTime):
            return self._dt == other._dt
        if isinstance(other, datetime) and other.tzinfo is not None:
            return self._dt == other
        return NotImplemented

    def __lt__(self, other: object) -> bool:
        if isinstance(other, DotDateTime):
            return self._dt < other._dt
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._dt)


def parse_date(value: Any, tz: tzinfo) -> DotDateTime | None:
    """``Date(value)``: ISO string or epoch seconds; naive times are read in ``tz``.

    Unparseable input gives null rather than "now", so a bad field is visible downstream.
    """
    if isinstance(value, DotDateTime):
        return value
    if isinstance(value, datetime):
        return DotDateTime(value if value.tzinfo else value.replace(tzinfo=tz))
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        try:
            return DotDateTime(datetime.fromtimestamp(value, tz))
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            return None
        return DotDateTime(parsed if parsed.tzinfo else parsed.replace(tzinfo=tz))
    return None


def _offset(dt: datetime, sep: str) -> str:
    delta = dt.utcoffset() or timedelta(0)
    sign = "-" if delta < timedelta(0) else "+"
    minutes = abs(int(delta.total_seconds())) // 60
    return f"{sign}{minutes // 60:02d}{sep}{minutes % 60:02d}"


def format_date(dt: datetime, pattern: str) -> str:
    """Render ``dt`` with moment-style tokens (YYYY, MM, DD, HH, mm, ss, ...)."""
    hour12 = dt.hour % 12 or 12
    tokens: dict[str, str] = {
        "YYYY": f"{dt.year:04d}",
        "YY": f"{dt.year % 100:02d}",
        "MMMM": _MONTHS[dt.month - 1],
        "MMM": _MONTHS[dt.month - 1][:3],
        "MM": f"{dt.month:02d}",
        "M": str(dt.month),
        "dddd": _DAYS[dt.weekday()],
        "ddd": _DAYS[dt.weekday()][:3],
        "DD": f"{dt.day:02d}",
        "D": str(dt.day),
        "HH": f"{dt.hour:02d}",
        "H": str(dt.hour),
        "hh": f"{hour12:02d}",
        "h": str(hour12),
        "mm": f"{dt.minute:02d}",
        "m": str(dt.minute),
        "ss": f"{dt.second:02d}",
        "s": str(dt.second),
        "SSS": f"{dt.microsecond // 1000:03d}",
        "A": "AM" if dt.hour < 12 else "PM",
        "a": "am" if dt.hour < 12 else "pm",
        "ZZ": _offset(dt, ""),
        "Z": _offset(dt, ":"),
    }

    def replace(match: re.Match[str]) -> str:
        literal = match.group(1)
        return literal if literal is not None else tokens[match.group(0)]

    return _FORMAT_RE.sub(replace, pattern)


def _add_months(dt: datetime, months: int) -> datetime:
    index = dt.year * 12 + (dt.month - 1) + int(months)
    year, month = divmod(index, 12)
    day = min(dt.day, calendar.monthrange(year, month + 1)[1])
    return dt.replace(year=year, month=month + 1, day=day)


def _absolute(dt: datetime, delta: timedelta) -> datetime:
    # Clock arithmetic (hours and smaller) runs on the UTC timeline so DST changes are
    # respected; calendar arithmetic (days and up) keeps the wall-clock time instead.
    return (dt.astimezone(UTC) + delta).astimezone(dt.tzinfo)


def _start_of_day(dt: datetime) -> datetime:
    return dt.replace(hour=0, minute=0, second=0, microsecond=0)


def _end_of_day(dt: datetime) -> datetime:
    return dt.replace(hour=23, minute=59, second=59, microsecond=999_999)


def _last_day(dt: datetime) -> int:
    return calendar.monthrange(dt.year, dt.month)[1]


def _shift(change: Callable[[datetime], datetime]) -> MethodImpl:
    def impl(_rt: Runtime, d: DotDateTime) -> DotDateTime:
        return DotDateTime(change(d.value))

    return impl


def _shift_by(change: Callable[[datetime, float], datetime]) -> MethodImpl:
    def impl(_rt: Runtime, d: DotDateTime, amount: float) -> DotDateTime:
        return DotDateTime(change(d.value, amount))

    return impl


def _format(_rt: Runtime, d: DotDateTime, pattern: Any = None) -> str:
    if not isinstance(pattern, str) or not pattern:
        pattern = DEFAULT_FORMAT
    # A token grows at most six times ("Z" is "+01:00"): build, then check.
    return active().sized(format_date(d.value, pattern))  # type: ignore[no-any-return]


def _fixed_format(pattern: str) -> MethodImpl:
    def impl(_rt: Runtime, d: DotDateTime) -> str:
        return format_date(d.value, pattern)

    return impl


DATE_PROPERTIES: dict[str, Callable[[DotDateTime], Any]] = {
    "year": lambda d: d.value.year,
    "month": lambda d: d.value.month,
    "day": lambda d: d.value.day,
    "hour": lambda d: d.value.hour,
    "minute": lambda d: d.value.minute,
    "second": lambda d: d.value.second,
    "millisecond": lambda d: d.value.microsecond // 1000,
    # Monday = 0, as in the original engine (Python's weekday()).
    "dayOfWeek": lambda d: d.value.weekday(),
}

DATE_METHODS: dict[str, MethodImpl] = {
    "format": _format,
    "toISO": lambda _rt, d: d.iso(),
    "toString": lambda _rt, d: d.iso(),
    "toDate": _fixed_format("YYYY-MM-DD"),
    "toTime": _fixed_format("HH:mm:ss"),
    "toUnix": lambda _rt, d: int(d.value.timestamp()),
    "toMillis": lambda _rt, d: int(d.value.timestamp() * 1000),
    "addYears": _shift_by(lambda dt, n: _add_months(dt, int(n) * 12)),
    "addMonths": _shift_by(lambda dt, n: _add_months(dt, int(n))),
    "addWeeks": _shift_by(lambda dt, n: dt + timedelta(weeks=n)),
    "addDays": _shift_by(lambda dt, n: dt + timedelta(days=n)),
    "addHours": _shift_by(lambda dt, n: _absolute(dt, timedelta(hours=n))),
    "addMinutes": _shift_by(lambda dt, n: _absolute(dt, timedelta(minutes=n))),
    "addSeconds": _shift_by(lambda dt, n: _absolute(dt, timedelta(seconds=n))),
    "startOfDay": _shift(_start_of_day),
    "endOfDay": _shift(_end_of_day),
    "startOfMonth": _shift(lambda dt: _start_of_day(dt.replace(day=1))),
    "endOfMonth": _shift(lambda dt: _end_of_day(dt.replace(day=_last_day(dt)))),
}
