"""A2A 1.0: the wire vocabulary and tasks folded from a conversation's events."""

from libs.a2a.tasks import Change, Task, TaskBook, render, stream_result

__all__ = ["Change", "Task", "TaskBook", "render", "stream_result"]
