"""`FirstRead`: a view whose first read of the store runs as a task, and which ``await`` waits for."""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any, Self

__all__ = ["FirstRead"]


class FirstRead:
    """``await view``: the view once its first read (``view.task``, when one runs) is done."""

    task: asyncio.Task[Any] | None

    def __await__(self) -> Generator[Any, None, Self]:
        async def ready() -> Self:
            if self.task is not None:
                await self.task
            return self

        return ready().__await__()
