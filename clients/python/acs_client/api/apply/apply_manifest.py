from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.apply_request import ApplyRequest
from ...models.error import Error
from ...models.not_acceptable import NotAcceptable
from ...models.row_list import RowList
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    body: ApplyRequest,
    dry_run: bool | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    params: dict[str, Any] = {}

    params["dry_run"] = dry_run

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/apply",
        "params": params,
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | NotAcceptable | RowList | None:
    if response.status_code == 200:
        response_200 = RowList.from_dict(response.json())

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
) -> Response[Error | NotAcceptable | RowList]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: ApplyRequest,
    dry_run: bool | Unset = UNSET,
) -> Response[Error | NotAcceptable | RowList]:
    """Applies a manifest: one result row per document (and one per inline
    secret), in the order applied. A document's error fails that document only.

    Args:
        dry_run (bool | Unset):
        body (ApplyRequest): `ApplyRequest`: the manifest's documents, in any order.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | NotAcceptable | RowList]
    """

    kwargs = _get_kwargs(
        body=body,
        dry_run=dry_run,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
    body: ApplyRequest,
    dry_run: bool | Unset = UNSET,
) -> Error | NotAcceptable | RowList | None:
    """Applies a manifest: one result row per document (and one per inline
    secret), in the order applied. A document's error fails that document only.

    Args:
        dry_run (bool | Unset):
        body (ApplyRequest): `ApplyRequest`: the manifest's documents, in any order.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | NotAcceptable | RowList
    """

    return sync_detailed(
        client=client,
        body=body,
        dry_run=dry_run,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: ApplyRequest,
    dry_run: bool | Unset = UNSET,
) -> Response[Error | NotAcceptable | RowList]:
    """Applies a manifest: one result row per document (and one per inline
    secret), in the order applied. A document's error fails that document only.

    Args:
        dry_run (bool | Unset):
        body (ApplyRequest): `ApplyRequest`: the manifest's documents, in any order.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | NotAcceptable | RowList]
    """

    kwargs = _get_kwargs(
        body=body,
        dry_run=dry_run,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    body: ApplyRequest,
    dry_run: bool | Unset = UNSET,
) -> Error | NotAcceptable | RowList | None:
    """Applies a manifest: one result row per document (and one per inline
    secret), in the order applied. A document's error fails that document only.

    Args:
        dry_run (bool | Unset):
        body (ApplyRequest): `ApplyRequest`: the manifest's documents, in any order.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | NotAcceptable | RowList
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
            dry_run=dry_run,
        )
    ).parsed
