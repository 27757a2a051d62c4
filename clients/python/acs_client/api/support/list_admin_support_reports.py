from http import HTTPStatus
from typing import Any
from uuid import UUID

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.admin_support_report_page import AdminSupportReportPage
from ...models.category import Category
from ...models.error import Error
from ...models.not_acceptable import NotAcceptable
from ...models.report_status import ReportStatus
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    status: ReportStatus | Unset = UNSET,
    category: Category | Unset = UNSET,
    cursor: UUID | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    json_status: str | Unset = UNSET
    if not isinstance(status, Unset):
        json_status = status.value

    params["status"] = json_status

    json_category: str | Unset = UNSET
    if not isinstance(category, Unset):
        json_category = category.value

    params["category"] = json_category

    json_cursor: str | Unset = UNSET
    if not isinstance(cursor, Unset):
        json_cursor = str(cursor)
    params["cursor"] = json_cursor

    params["limit"] = limit

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/admin/support/reports",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> AdminSupportReportPage | Error | NotAcceptable | None:
    if response.status_code == 200:
        response_200 = AdminSupportReportPage.from_dict(response.json())

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
) -> Response[AdminSupportReportPage | Error | NotAcceptable]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    status: ReportStatus | Unset = UNSET,
    category: Category | Unset = UNSET,
    cursor: UUID | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> Response[AdminSupportReportPage | Error | NotAcceptable]:
    """Reports of every account, newest first, by state and category.

    Args:
        status (ReportStatus | Unset):
        category (Category | Unset):
        cursor (UUID | Unset):
        limit (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AdminSupportReportPage | Error | NotAcceptable]
    """

    kwargs = _get_kwargs(
        status=status,
        category=category,
        cursor=cursor,
        limit=limit,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
    status: ReportStatus | Unset = UNSET,
    category: Category | Unset = UNSET,
    cursor: UUID | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> AdminSupportReportPage | Error | NotAcceptable | None:
    """Reports of every account, newest first, by state and category.

    Args:
        status (ReportStatus | Unset):
        category (Category | Unset):
        cursor (UUID | Unset):
        limit (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AdminSupportReportPage | Error | NotAcceptable
    """

    return sync_detailed(
        client=client,
        status=status,
        category=category,
        cursor=cursor,
        limit=limit,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    status: ReportStatus | Unset = UNSET,
    category: Category | Unset = UNSET,
    cursor: UUID | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> Response[AdminSupportReportPage | Error | NotAcceptable]:
    """Reports of every account, newest first, by state and category.

    Args:
        status (ReportStatus | Unset):
        category (Category | Unset):
        cursor (UUID | Unset):
        limit (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AdminSupportReportPage | Error | NotAcceptable]
    """

    kwargs = _get_kwargs(
        status=status,
        category=category,
        cursor=cursor,
        limit=limit,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    status: ReportStatus | Unset = UNSET,
    category: Category | Unset = UNSET,
    cursor: UUID | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> AdminSupportReportPage | Error | NotAcceptable | None:
    """Reports of every account, newest first, by state and category.

    Args:
        status (ReportStatus | Unset):
        category (Category | Unset):
        cursor (UUID | Unset):
        limit (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AdminSupportReportPage | Error | NotAcceptable
    """

    return (
        await asyncio_detailed(
            client=client,
            status=status,
            category=category,
            cursor=cursor,
            limit=limit,
        )
    ).parsed
