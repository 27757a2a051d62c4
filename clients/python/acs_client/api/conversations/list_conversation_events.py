from http import HTTPStatus
from typing import Any
from urllib.parse import quote
from uuid import UUID

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.log_event_list_response import LogEventListResponse
from ...models.not_acceptable import NotAcceptable
from ...types import UNSET, Response, Unset


def _get_kwargs(
    id: UUID,
    *,
    after: int | Unset = UNSET,
    before: int | Unset = UNSET,
    order: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    whole_turns: bool | Unset = UNSET,
    blocks: bool | Unset = UNSET,
    prompts: bool | Unset = UNSET,
    streams: str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["after"] = after

    params["before"] = before

    params["order"] = order

    params["limit"] = limit

    params["whole_turns"] = whole_turns

    params["blocks"] = blocks

    params["prompts"] = prompts

    params["streams"] = streams

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/conversations/{id}/events".format(
            id=quote(str(id), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | LogEventListResponse | NotAcceptable | None:
    if response.status_code == 200:
        response_200 = LogEventListResponse.from_dict(response.json())

        return response_200

    if response.status_code == 401:
        response_401 = Error.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Error.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = Error.from_dict(response.json())

        return response_404

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
) -> Response[Error | LogEventListResponse | NotAcceptable]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    id: UUID,
    *,
    client: AuthenticatedClient | Client,
    after: int | Unset = UNSET,
    before: int | Unset = UNSET,
    order: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    whole_turns: bool | Unset = UNSET,
    blocks: bool | Unset = UNSET,
    prompts: bool | Unset = UNSET,
    streams: str | Unset = UNSET,
) -> Response[Error | LogEventListResponse | NotAcceptable]:
    """A page of the conversation's event log. Cursors are event ids taken
    from a page: `meta.next_cursor` is the last id of the page (the oldest
    with `order=desc`, passed as `before` for the older page).

    Args:
        id (UUID):
        after (int | Unset):
        before (int | Unset):
        order (str | Unset):
        limit (int | Unset):
        whole_turns (bool | Unset):
        blocks (bool | Unset):
        prompts (bool | Unset):
        streams (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | LogEventListResponse | NotAcceptable]
    """

    kwargs = _get_kwargs(
        id=id,
        after=after,
        before=before,
        order=order,
        limit=limit,
        whole_turns=whole_turns,
        blocks=blocks,
        prompts=prompts,
        streams=streams,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: UUID,
    *,
    client: AuthenticatedClient | Client,
    after: int | Unset = UNSET,
    before: int | Unset = UNSET,
    order: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    whole_turns: bool | Unset = UNSET,
    blocks: bool | Unset = UNSET,
    prompts: bool | Unset = UNSET,
    streams: str | Unset = UNSET,
) -> Error | LogEventListResponse | NotAcceptable | None:
    """A page of the conversation's event log. Cursors are event ids taken
    from a page: `meta.next_cursor` is the last id of the page (the oldest
    with `order=desc`, passed as `before` for the older page).

    Args:
        id (UUID):
        after (int | Unset):
        before (int | Unset):
        order (str | Unset):
        limit (int | Unset):
        whole_turns (bool | Unset):
        blocks (bool | Unset):
        prompts (bool | Unset):
        streams (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | LogEventListResponse | NotAcceptable
    """

    return sync_detailed(
        id=id,
        client=client,
        after=after,
        before=before,
        order=order,
        limit=limit,
        whole_turns=whole_turns,
        blocks=blocks,
        prompts=prompts,
        streams=streams,
    ).parsed


async def asyncio_detailed(
    id: UUID,
    *,
    client: AuthenticatedClient | Client,
    after: int | Unset = UNSET,
    before: int | Unset = UNSET,
    order: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    whole_turns: bool | Unset = UNSET,
    blocks: bool | Unset = UNSET,
    prompts: bool | Unset = UNSET,
    streams: str | Unset = UNSET,
) -> Response[Error | LogEventListResponse | NotAcceptable]:
    """A page of the conversation's event log. Cursors are event ids taken
    from a page: `meta.next_cursor` is the last id of the page (the oldest
    with `order=desc`, passed as `before` for the older page).

    Args:
        id (UUID):
        after (int | Unset):
        before (int | Unset):
        order (str | Unset):
        limit (int | Unset):
        whole_turns (bool | Unset):
        blocks (bool | Unset):
        prompts (bool | Unset):
        streams (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | LogEventListResponse | NotAcceptable]
    """

    kwargs = _get_kwargs(
        id=id,
        after=after,
        before=before,
        order=order,
        limit=limit,
        whole_turns=whole_turns,
        blocks=blocks,
        prompts=prompts,
        streams=streams,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: UUID,
    *,
    client: AuthenticatedClient | Client,
    after: int | Unset = UNSET,
    before: int | Unset = UNSET,
    order: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    whole_turns: bool | Unset = UNSET,
    blocks: bool | Unset = UNSET,
    prompts: bool | Unset = UNSET,
    streams: str | Unset = UNSET,
) -> Error | LogEventListResponse | NotAcceptable | None:
    """A page of the conversation's event log. Cursors are event ids taken
    from a page: `meta.next_cursor` is the last id of the page (the oldest
    with `order=desc`, passed as `before` for the older page).

    Args:
        id (UUID):
        after (int | Unset):
        before (int | Unset):
        order (str | Unset):
        limit (int | Unset):
        whole_turns (bool | Unset):
        blocks (bool | Unset):
        prompts (bool | Unset):
        streams (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | LogEventListResponse | NotAcceptable
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
            after=after,
            before=before,
            order=order,
            limit=limit,
            whole_turns=whole_turns,
            blocks=blocks,
            prompts=prompts,
            streams=streams,
        )
    ).parsed
