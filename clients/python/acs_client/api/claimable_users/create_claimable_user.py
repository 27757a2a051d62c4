from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.claimable_user_created_response import ClaimableUserCreatedResponse
from ...models.error import Error
from ...models.not_acceptable import NotAcceptable
from ...types import Response


def _get_kwargs(
    *,
    idempotency_key: str,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    headers["Idempotency-Key"] = idempotency_key

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/claimable-users",
    }

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ClaimableUserCreatedResponse | Error | NotAcceptable | None:
    if response.status_code == 200:
        response_200 = ClaimableUserCreatedResponse.from_dict(response.json())

        return response_200

    if response.status_code == 201:
        response_201 = ClaimableUserCreatedResponse.from_dict(response.json())

        return response_201

    if response.status_code == 401:
        response_401 = Error.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Error.from_dict(response.json())

        return response_403

    if response.status_code == 406:
        response_406 = NotAcceptable.from_dict(response.json())

        return response_406

    if response.status_code == 409:
        response_409 = Error.from_dict(response.json())

        return response_409

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
) -> Response[ClaimableUserCreatedResponse | Error | NotAcceptable]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    idempotency_key: str,
) -> Response[ClaimableUserCreatedResponse | Error | NotAcceptable]:
    """Opens a claimable principal (an account without email or password) owned by the calling application.

     The `Idempotency-Key` header reconciles a lost response: a repeat with the
    same key returns the same principal (200) with a fresh `api_key`; earlier
    keys keep working.

    Args:
        idempotency_key (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ClaimableUserCreatedResponse | Error | NotAcceptable]
    """

    kwargs = _get_kwargs(
        idempotency_key=idempotency_key,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
    idempotency_key: str,
) -> ClaimableUserCreatedResponse | Error | NotAcceptable | None:
    """Opens a claimable principal (an account without email or password) owned by the calling application.

     The `Idempotency-Key` header reconciles a lost response: a repeat with the
    same key returns the same principal (200) with a fresh `api_key`; earlier
    keys keep working.

    Args:
        idempotency_key (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ClaimableUserCreatedResponse | Error | NotAcceptable
    """

    return sync_detailed(
        client=client,
        idempotency_key=idempotency_key,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    idempotency_key: str,
) -> Response[ClaimableUserCreatedResponse | Error | NotAcceptable]:
    """Opens a claimable principal (an account without email or password) owned by the calling application.

     The `Idempotency-Key` header reconciles a lost response: a repeat with the
    same key returns the same principal (200) with a fresh `api_key`; earlier
    keys keep working.

    Args:
        idempotency_key (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ClaimableUserCreatedResponse | Error | NotAcceptable]
    """

    kwargs = _get_kwargs(
        idempotency_key=idempotency_key,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    idempotency_key: str,
) -> ClaimableUserCreatedResponse | Error | NotAcceptable | None:
    """Opens a claimable principal (an account without email or password) owned by the calling application.

     The `Idempotency-Key` header reconciles a lost response: a repeat with the
    same key returns the same principal (200) with a fresh `api_key`; earlier
    keys keep working.

    Args:
        idempotency_key (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ClaimableUserCreatedResponse | Error | NotAcceptable
    """

    return (
        await asyncio_detailed(
            client=client,
            idempotency_key=idempotency_key,
        )
    ).parsed
