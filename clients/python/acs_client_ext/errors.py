"""Errors of the hand-written layer, and ``expect`` for the generated functions' answers."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from acs_client.types import Response

T = TypeVar("T")


class ApiError(Exception):
    """An answer other than the one asked for: ``status`` and the decoded ``body`` (an ``Error``
    body is ``{"error": code, "message": ..., "errors": ...}``)."""

    def __init__(self, status: int, body: Any) -> None:
        self.status = int(status)
        self.body = body
        code = body.get("error") if isinstance(body, dict) else None
        message = body.get("message") if isinstance(body, dict) else None
        text = f"acs answered {self.status}"
        if isinstance(code, str):
            text += f" {code}"
        if isinstance(message, str):
            text += f": {message}"
        super().__init__(text)

    @property
    def code(self) -> str | None:
        """The ``error`` code of an ``Error`` body."""
        return self.body.get("error") if isinstance(self.body, dict) else None


def expect(response: Response[Any], kind: type[T]) -> T:
    """The parsed body of a generated ``sync_detailed``/``asyncio_detailed`` answer when it is a
    ``kind`` (the operation's success model, e.g. ``ConversationData``); else ``ApiError``.

    ``agent = expect(create_agent.sync_detailed(client=c, body=...), AgentData).data``
    """
    if 200 <= response.status_code < 300 and isinstance(response.parsed, kind):
        return response.parsed
    try:
        body: Any = json.loads(response.content)
    except ValueError:
        body = response.content.decode("utf-8", "replace")
    raise ApiError(response.status_code, body)
