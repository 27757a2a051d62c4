from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.link_attempt_create import LinkAttemptCreate
from ...models.link_attempt_data import LinkAttemptData
from ...models.not_acceptable import NotAcceptable
from ...types import Response


def _get_kwargs(
    *,
    body: LinkAttemptCreate,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/account/openai-subscriptions/attempts",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | LinkAttemptData | NotAcceptable | None:
    if response.status_code == 201:
        response_201 = LinkAttemptData.from_dict(response.json())

        return response_201

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

    if response.status_code == 409:
        response_409 = Error.from_dict(response.json())

        return response_409

    if response.status_code == 413:
        response_413 = Error.from_dict(response.json())

        return response_413

    if response.status_code == 415:
        response_415 = Error.from_dict(response.json())

        return response_415

    if response.status_code == 422:
        response_422 = Error.from_dict(response.json())

        return response_422

    if response.status_code == 429:
        response_429 = Error.from_dict(response.json())

        return response_429

    if response.status_code == 502:
        response_502 = Error.from_dict(response.json())

        return response_502

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Error | LinkAttemptData | NotAcceptable]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: LinkAttemptCreate,
) -> Response[Error | LinkAttemptData | NotAcceptable]:
    """Starts a device-code sign-in: a new link (`name`) or a reconnect (`grant_id`).

    Args:
        body (LinkAttemptCreate): Exactly one of `name` (a new link) or `grant_id` (a reconnect).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | LinkAttemptData | NotAcceptable]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
    body: LinkAttemptCreate,
) -> Error | LinkAttemptData | NotAcceptable | None:
    """Starts a device-code sign-in: a new link (`name`) or a reconnect (`grant_id`).

    Args:
        body (LinkAttemptCreate): Exactly one of `name` (a new link) or `grant_id` (a reconnect).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | LinkAttemptData | NotAcceptable
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: LinkAttemptCreate,
) -> Response[Error | LinkAttemptData | NotAcceptable]:
    """Starts a device-code sign-in: a new link (`name`) or a reconnect (`grant_id`).

    Args:
        body (LinkAttemptCreate): Exactly one of `name` (a new link) or `grant_id` (a reconnect).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | LinkAttemptData | NotAcceptable]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    body: LinkAttemptCreate,
) -> Error | LinkAttemptData | NotAcceptable | None:
    """Starts a device-code sign-in: a new link (`name`) or a reconnect (`grant_id`).

    Args:
        body (LinkAttemptCreate): Exactly one of `name` (a new link) or `grant_id` (a reconnect).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | LinkAttemptData | NotAcceptable
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
