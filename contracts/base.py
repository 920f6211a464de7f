"""The event base class (frozen, keyword-only, tagged msgspec Structs) and the read envelope."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

import msgspec


class _EventMeta(msgspec.StructMeta):
    """Forces `kw_only=True` on every event class and requires an explicit, stable string tag.

    `kw_only` is not inherited by msgspec subclasses, and a tag derived from the class name
    would change with a rename; both would silently break old logs, so both are enforced here.
    """

    def __new__(
        mcls,
        name: str,
        bases: tuple[type, ...],
        namespace: dict[str, Any],
        **kwargs: Any,
    ) -> Any:
        if bases and bases != (msgspec.Struct,) and not namespace.get("__abstract__", False):
            tag = kwargs.get("tag")
            if not isinstance(tag, str) or "." not in tag:
                raise TypeError(
                    f"event {name} needs an explicit dotted tag, e.g. tag='run.started'"
                )
        kwargs.setdefault("kw_only", True)
        return super().__new__(mcls, name, bases, namespace, **kwargs)


class Event(msgspec.Struct, metaclass=_EventMeta, frozen=True, tag_field="type"):
    """A past-tense fact recorded in the event log. Subclasses set `tag="context.fact"`."""

    __abstract__: ClassVar[bool] = True


class UnknownEvent(msgspec.Struct, frozen=True, kw_only=True):
    """An event whose tag this build does not know (written by a newer producer); folds skip it."""

    type: str
    raw: bytes


class Envelope(msgspec.Struct, frozen=True, kw_only=True):
    """One recorded event with where and when it was recorded.

    `sequence` is the JetStream stream sequence of the message that carried the event; the
    events of one decision share one message (an event batch) and are told apart by `index`.
    `event_id` is `<message id>:<index>`, stable across replays.
    """

    event_id: str
    run_id: str
    subject: str
    sequence: int
    index: int
    recorded_at: datetime
    correlation_id: str | None
    causation_id: str | None
    traceparent: str | None
    event: Event | UnknownEvent
