from http import HTTPStatus
from typing import Any
from urllib.parse import quote
from uuid import UUID

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.egress_event_list import EgressEventList
from ...models.error import Error
from ...models.not_acceptable import NotAcceptable
from ...types import UNSET, Response, Unset


def _get_kwargs(
    id: UUID,
    *,
    before: int | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["before"] = before

    params["limit"] = limit

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/sandboxes/{id}/egress".format(
            id=quote(str(id), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> EgressEventList | Error | NotAcceptable | None:
    if response.status_code == 200:
        response_200 = EgressEventList.from_dict(response.json())

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
) -> Response[EgressEventList | Error | NotAcceptable]:
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
    before: int | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> Response[EgressEventList | Error | NotAcceptable]:
    """Outbound requests of the sandbox through the egress proxy, newest first.

    Args:
        id (UUID):
        before (int | Unset):
        limit (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[EgressEventList | Error | NotAcceptable]
    """

    kwargs = _get_kwargs(
        id=id,
        before=before,
        limit=limit,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: UUID,
    *,
    client: AuthenticatedClient | Client,
    before: int | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> EgressEventList | Error | NotAcceptable | None:
    """Outbound requests of the sandbox through the egress proxy, newest first.

    Args:
        id (UUID):
        before (int | Unset):
        limit (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        EgressEventList | Error | NotAcceptable
    """

    return sync_detailed(
        id=id,
        client=client,
        before=before,
        limit=limit,
    ).parsed


async def asyncio_detailed(
    id: UUID,
    *,
    client: AuthenticatedClient | Client,
    before: int | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> Response[EgressEventList | Error | NotAcceptable]:
    """Outbound requests of the sandbox through the egress proxy, newest first.

    Args:
        id (UUID):
        before (int | Unset):
        limit (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[EgressEventList | Error | NotAcceptable]
    """

    kwargs = _get_kwargs(
        id=id,
        before=before,
        limit=limit,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: UUID,
    *,
    client: AuthenticatedClient | Client,
    before: int | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> EgressEventList | Error | NotAcceptable | None:
    """Outbound requests of the sandbox through the egress proxy, newest first.

    Args:
        id (UUID):
        before (int | Unset):
        limit (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        EgressEventList | Error | NotAcceptable
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
            before=before,
            limit=limit,
        )
    ).parsed
