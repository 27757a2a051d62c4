from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.event_stream import EventStream
from ...models.not_acceptable import NotAcceptable
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    blocks: bool | Unset = UNSET,
    last_event_id: str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(last_event_id, Unset):
        headers["Last-Event-ID"] = last_event_id

    params: dict[str, Any] = {}

    params["blocks"] = blocks

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/team/stream",
        "params": params,
    }

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | EventStream | NotAcceptable | None:
    if response.status_code == 200:
        response_200 = EventStream.from_dict(response.text)

        return response_200

    if response.status_code == 401:
        response_401 = Error.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Error.from_dict(response.json())

        return response_403

    if response.status_code == 406:
        response_406 = NotAcceptable.from_dict(response.json())

        return response_406

    if response.status_code == 422:
        response_422 = Error.from_dict(response.json())

        return response_422

    if response.status_code == 429:
        response_429 = Error.from_dict(response.json())

        return response_429

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Error | EventStream | NotAcceptable]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    blocks: bool | Unset = UNSET,
    last_event_id: str | Unset = UNSET,
) -> Response[Error | EventStream | NotAcceptable]:
    """Live events of the account's team conversations (SSE). Each frame is a
    `StreamLogEvent` with `conversation_id` and `agent_id`, the event id in
    its `id:` line; reconnect with `Last-Event-ID` to resume with nothing
    lost or repeated. Between them, frames named `team` (the roster changed)
    and `schedule` (a schedule was created, updated, deleted or fired) with
    data `{"reason": "changed"}` and no id.

    Args:
        blocks (bool | Unset):
        last_event_id (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | EventStream | NotAcceptable]
    """

    kwargs = _get_kwargs(
        blocks=blocks,
        last_event_id=last_event_id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
    blocks: bool | Unset = UNSET,
    last_event_id: str | Unset = UNSET,
) -> Error | EventStream | NotAcceptable | None:
    """Live events of the account's team conversations (SSE). Each frame is a
    `StreamLogEvent` with `conversation_id` and `agent_id`, the event id in
    its `id:` line; reconnect with `Last-Event-ID` to resume with nothing
    lost or repeated. Between them, frames named `team` (the roster changed)
    and `schedule` (a schedule was created, updated, deleted or fired) with
    data `{"reason": "changed"}` and no id.

    Args:
        blocks (bool | Unset):
        last_event_id (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | EventStream | NotAcceptable
    """

    return sync_detailed(
        client=client,
        blocks=blocks,
        last_event_id=last_event_id,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    blocks: bool | Unset = UNSET,
    last_event_id: str | Unset = UNSET,
) -> Response[Error | EventStream | NotAcceptable]:
    """Live events of the account's team conversations (SSE). Each frame is a
    `StreamLogEvent` with `conversation_id` and `agent_id`, the event id in
    its `id:` line; reconnect with `Last-Event-ID` to resume with nothing
    lost or repeated. Between them, frames named `team` (the roster changed)
    and `schedule` (a schedule was created, updated, deleted or fired) with
    data `{"reason": "changed"}` and no id.

    Args:
        blocks (bool | Unset):
        last_event_id (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | EventStream | NotAcceptable]
    """

    kwargs = _get_kwargs(
        blocks=blocks,
        last_event_id=last_event_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    blocks: bool | Unset = UNSET,
    last_event_id: str | Unset = UNSET,
) -> Error | EventStream | NotAcceptable | None:
    """Live events of the account's team conversations (SSE). Each frame is a
    `StreamLogEvent` with `conversation_id` and `agent_id`, the event id in
    its `id:` line; reconnect with `Last-Event-ID` to resume with nothing
    lost or repeated. Between them, frames named `team` (the roster changed)
    and `schedule` (a schedule was created, updated, deleted or fired) with
    data `{"reason": "changed"}` and no id.

    Args:
        blocks (bool | Unset):
        last_event_id (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | EventStream | NotAcceptable
    """

    return (
        await asyncio_detailed(
            client=client,
            blocks=blocks,
            last_event_id=last_event_id,
        )
    ).parsed
