from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.chat_relay_identity_data import ChatRelayIdentityData
from ...models.chat_relay_identity_provision import ChatRelayIdentityProvision
from ...models.error import Error
from ...models.not_acceptable import NotAcceptable
from ...types import Response


def _get_kwargs(
    *,
    body: ChatRelayIdentityProvision,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/chat-relay/identities",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ChatRelayIdentityData | Error | NotAcceptable | None:
    if response.status_code == 200:
        response_200 = ChatRelayIdentityData.from_dict(response.json())

        return response_200

    if response.status_code == 201:
        response_201 = ChatRelayIdentityData.from_dict(response.json())

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

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[ChatRelayIdentityData | Error | NotAcceptable]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: ChatRelayIdentityProvision,
) -> Response[ChatRelayIdentityData | Error | NotAcceptable]:
    """Provisions an identity: 201 when new, 200 when the caller already had one
    with this `pubkey` (every field is then replaced; an omitted
    `environment_id` or `sandbox_mode` clears it). The private key is sealed
    on the server and never returned. Full-scope key.

    Args:
        body (ChatRelayIdentityProvision): The provision request: creates the identity, or updates
            the caller's
            identity with the same `pubkey`. Deliberately not `Debug`: it holds the private key.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ChatRelayIdentityData | Error | NotAcceptable]
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
    body: ChatRelayIdentityProvision,
) -> ChatRelayIdentityData | Error | NotAcceptable | None:
    """Provisions an identity: 201 when new, 200 when the caller already had one
    with this `pubkey` (every field is then replaced; an omitted
    `environment_id` or `sandbox_mode` clears it). The private key is sealed
    on the server and never returned. Full-scope key.

    Args:
        body (ChatRelayIdentityProvision): The provision request: creates the identity, or updates
            the caller's
            identity with the same `pubkey`. Deliberately not `Debug`: it holds the private key.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ChatRelayIdentityData | Error | NotAcceptable
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: ChatRelayIdentityProvision,
) -> Response[ChatRelayIdentityData | Error | NotAcceptable]:
    """Provisions an identity: 201 when new, 200 when the caller already had one
    with this `pubkey` (every field is then replaced; an omitted
    `environment_id` or `sandbox_mode` clears it). The private key is sealed
    on the server and never returned. Full-scope key.

    Args:
        body (ChatRelayIdentityProvision): The provision request: creates the identity, or updates
            the caller's
            identity with the same `pubkey`. Deliberately not `Debug`: it holds the private key.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ChatRelayIdentityData | Error | NotAcceptable]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    body: ChatRelayIdentityProvision,
) -> ChatRelayIdentityData | Error | NotAcceptable | None:
    """Provisions an identity: 201 when new, 200 when the caller already had one
    with this `pubkey` (every field is then replaced; an omitted
    `environment_id` or `sandbox_mode` clears it). The private key is sealed
    on the server and never returned. Full-scope key.

    Args:
        body (ChatRelayIdentityProvision): The provision request: creates the identity, or updates
            the caller's
            identity with the same `pubkey`. Deliberately not `Debug`: it holds the private key.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ChatRelayIdentityData | Error | NotAcceptable
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
