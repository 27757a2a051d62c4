from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.not_acceptable import NotAcceptable
from ...models.o_auth_error import OAuthError
from ...models.o_auth_token_request import OAuthTokenRequest
from ...models.o_auth_token_response import OAuthTokenResponse
from ...types import UNSET, Response


def _get_kwargs(
    *,
    body: OAuthTokenRequest | OAuthTokenRequest | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/oauth/token",
    }

    if isinstance(body, OAuthTokenRequest):
        _kwargs["json"] = body.to_dict()

        headers["Content-Type"] = "application/json"
    if isinstance(body, OAuthTokenRequest):
        _kwargs["data"] = body.to_dict()
        headers["Content-Type"] = "application/x-www-form-urlencoded"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | NotAcceptable | OAuthError | OAuthTokenResponse | None:
    if response.status_code == 200:
        response_200 = OAuthTokenResponse.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = OAuthError.from_dict(response.json())

        return response_400

    if response.status_code == 406:
        response_406 = NotAcceptable.from_dict(response.json())

        return response_406

    if response.status_code == 413:
        response_413 = Error.from_dict(response.json())

        return response_413

    if response.status_code == 415:
        response_415 = OAuthError.from_dict(response.json())

        return response_415

    if response.status_code == 422:
        response_422 = Error.from_dict(response.json())

        return response_422

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Error | NotAcceptable | OAuthError | OAuthTokenResponse]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: OAuthTokenRequest | OAuthTokenRequest | Unset = UNSET,
) -> Response[Error | NotAcceptable | OAuthError | OAuthTokenResponse]:
    """Exchanges an authorization code and its PKCE verifier for an API key.

    Args:
        body (OAuthTokenRequest): The token request (RFC 6749 section 4.1.3 with RFC 7636's
            `code_verifier`).
        body (OAuthTokenRequest): The token request (RFC 6749 section 4.1.3 with RFC 7636's
            `code_verifier`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | NotAcceptable | OAuthError | OAuthTokenResponse]
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
    body: OAuthTokenRequest | OAuthTokenRequest | Unset = UNSET,
) -> Error | NotAcceptable | OAuthError | OAuthTokenResponse | None:
    """Exchanges an authorization code and its PKCE verifier for an API key.

    Args:
        body (OAuthTokenRequest): The token request (RFC 6749 section 4.1.3 with RFC 7636's
            `code_verifier`).
        body (OAuthTokenRequest): The token request (RFC 6749 section 4.1.3 with RFC 7636's
            `code_verifier`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | NotAcceptable | OAuthError | OAuthTokenResponse
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: OAuthTokenRequest | OAuthTokenRequest | Unset = UNSET,
) -> Response[Error | NotAcceptable | OAuthError | OAuthTokenResponse]:
    """Exchanges an authorization code and its PKCE verifier for an API key.

    Args:
        body (OAuthTokenRequest): The token request (RFC 6749 section 4.1.3 with RFC 7636's
            `code_verifier`).
        body (OAuthTokenRequest): The token request (RFC 6749 section 4.1.3 with RFC 7636's
            `code_verifier`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | NotAcceptable | OAuthError | OAuthTokenResponse]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    body: OAuthTokenRequest | OAuthTokenRequest | Unset = UNSET,
) -> Error | NotAcceptable | OAuthError | OAuthTokenResponse | None:
    """Exchanges an authorization code and its PKCE verifier for an API key.

    Args:
        body (OAuthTokenRequest): The token request (RFC 6749 section 4.1.3 with RFC 7636's
            `code_verifier`).
        body (OAuthTokenRequest): The token request (RFC 6749 section 4.1.3 with RFC 7636's
            `code_verifier`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | NotAcceptable | OAuthError | OAuthTokenResponse
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
