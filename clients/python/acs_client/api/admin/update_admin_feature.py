from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.admin_feature_data import AdminFeatureData
from ...models.admin_feature_update import AdminFeatureUpdate
from ...models.error import Error
from ...models.not_acceptable import NotAcceptable
from ...types import Response


def _get_kwargs(
    name: str,
    *,
    body: AdminFeatureUpdate,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/api/admin/features/{name}".format(
            name=quote(str(name), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> AdminFeatureData | Error | NotAcceptable | None:
    if response.status_code == 200:
        response_200 = AdminFeatureData.from_dict(response.json())

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
) -> Response[AdminFeatureData | Error | NotAcceptable]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    name: str,
    *,
    client: AuthenticatedClient | Client,
    body: AdminFeatureUpdate,
) -> Response[AdminFeatureData | Error | NotAcceptable]:
    """Turns a runtime flag on or off on every replica (within 2 s), stored over
    the configuration and kept in the flags' change history. The flag-off
    answers follow at once; `admin` itself is changed only on the command
    line (`acs admin features set`), so no request locks the operators out.

    Args:
        name (str):
        body (AdminFeatureUpdate): `PUT /api/admin/features/{name}`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AdminFeatureData | Error | NotAcceptable]
    """

    kwargs = _get_kwargs(
        name=name,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    name: str,
    *,
    client: AuthenticatedClient | Client,
    body: AdminFeatureUpdate,
) -> AdminFeatureData | Error | NotAcceptable | None:
    """Turns a runtime flag on or off on every replica (within 2 s), stored over
    the configuration and kept in the flags' change history. The flag-off
    answers follow at once; `admin` itself is changed only on the command
    line (`acs admin features set`), so no request locks the operators out.

    Args:
        name (str):
        body (AdminFeatureUpdate): `PUT /api/admin/features/{name}`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AdminFeatureData | Error | NotAcceptable
    """

    return sync_detailed(
        name=name,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    name: str,
    *,
    client: AuthenticatedClient | Client,
    body: AdminFeatureUpdate,
) -> Response[AdminFeatureData | Error | NotAcceptable]:
    """Turns a runtime flag on or off on every replica (within 2 s), stored over
    the configuration and kept in the flags' change history. The flag-off
    answers follow at once; `admin` itself is changed only on the command
    line (`acs admin features set`), so no request locks the operators out.

    Args:
        name (str):
        body (AdminFeatureUpdate): `PUT /api/admin/features/{name}`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AdminFeatureData | Error | NotAcceptable]
    """

    kwargs = _get_kwargs(
        name=name,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    name: str,
    *,
    client: AuthenticatedClient | Client,
    body: AdminFeatureUpdate,
) -> AdminFeatureData | Error | NotAcceptable | None:
    """Turns a runtime flag on or off on every replica (within 2 s), stored over
    the configuration and kept in the flags' change history. The flag-off
    answers follow at once; `admin` itself is changed only on the command
    line (`acs admin features set`), so no request locks the operators out.

    Args:
        name (str):
        body (AdminFeatureUpdate): `PUT /api/admin/features/{name}`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AdminFeatureData | Error | NotAcceptable
    """

    return (
        await asyncio_detailed(
            name=name,
            client=client,
            body=body,
        )
    ).parsed
