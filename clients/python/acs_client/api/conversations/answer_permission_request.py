from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote
from uuid import UUID

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.not_acceptable import NotAcceptable
from ...models.permission_answer_request import PermissionAnswerRequest
from ...types import Response


def _get_kwargs(
    id: UUID,
    request_id: str,
    *,
    body: PermissionAnswerRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/conversations/{id}/permissions/{request_id}".format(
            id=quote(str(id), safe=""),
            request_id=quote(str(request_id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Any | Error | NotAcceptable | None:
    if response.status_code == 204:
        response_204 = cast(Any, None)
        return response_204

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

    if response.status_code == 410:
        response_410 = Error.from_dict(response.json())

        return response_410

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
) -> Response[Any | Error | NotAcceptable]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    id: UUID,
    request_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: PermissionAnswerRequest,
) -> Response[Any | Error | NotAcceptable]:
    """Answers a permission request of the running turn (`request_id` from the
    `permission_request` block); the agent goes on with the chosen option.

    Args:
        id (UUID):
        request_id (str):
        body (PermissionAnswerRequest): `PermissionAnswerRequest`: one of the `optionId` values
            offered on the `permission_request` block.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Error | NotAcceptable]
    """

    kwargs = _get_kwargs(
        id=id,
        request_id=request_id,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: UUID,
    request_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: PermissionAnswerRequest,
) -> Any | Error | NotAcceptable | None:
    """Answers a permission request of the running turn (`request_id` from the
    `permission_request` block); the agent goes on with the chosen option.

    Args:
        id (UUID):
        request_id (str):
        body (PermissionAnswerRequest): `PermissionAnswerRequest`: one of the `optionId` values
            offered on the `permission_request` block.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Error | NotAcceptable
    """

    return sync_detailed(
        id=id,
        request_id=request_id,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    id: UUID,
    request_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: PermissionAnswerRequest,
) -> Response[Any | Error | NotAcceptable]:
    """Answers a permission request of the running turn (`request_id` from the
    `permission_request` block); the agent goes on with the chosen option.

    Args:
        id (UUID):
        request_id (str):
        body (PermissionAnswerRequest): `PermissionAnswerRequest`: one of the `optionId` values
            offered on the `permission_request` block.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Error | NotAcceptable]
    """

    kwargs = _get_kwargs(
        id=id,
        request_id=request_id,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: UUID,
    request_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: PermissionAnswerRequest,
) -> Any | Error | NotAcceptable | None:
    """Answers a permission request of the running turn (`request_id` from the
    `permission_request` block); the agent goes on with the chosen option.

    Args:
        id (UUID):
        request_id (str):
        body (PermissionAnswerRequest): `PermissionAnswerRequest`: one of the `optionId` values
            offered on the `permission_request` block.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Error | NotAcceptable
    """

    return (
        await asyncio_detailed(
            id=id,
            request_id=request_id,
            client=client,
            body=body,
        )
    ).parsed
