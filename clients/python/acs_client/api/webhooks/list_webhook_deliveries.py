from http import HTTPStatus
from typing import Any
from urllib.parse import quote
from uuid import UUID

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.list_webhook_deliveries_status import ListWebhookDeliveriesStatus
from ...models.not_acceptable import NotAcceptable
from ...models.webhook_delivery_list import WebhookDeliveryList
from ...types import UNSET, Response, Unset


def _get_kwargs(
    id: UUID,
    *,
    limit: int | Unset = UNSET,
    before: UUID | Unset = UNSET,
    status: ListWebhookDeliveriesStatus | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["limit"] = limit

    json_before: str | Unset = UNSET
    if not isinstance(before, Unset):
        json_before = str(before)
    params["before"] = json_before

    json_status: str | Unset = UNSET
    if not isinstance(status, Unset):
        json_status = status.value

    params["status"] = json_status

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/webhooks/{id}/deliveries".format(
            id=quote(str(id), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | NotAcceptable | WebhookDeliveryList | None:
    if response.status_code == 200:
        response_200 = WebhookDeliveryList.from_dict(response.json())

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
) -> Response[Error | NotAcceptable | WebhookDeliveryList]:
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
    limit: int | Unset = UNSET,
    before: UUID | Unset = UNSET,
    status: ListWebhookDeliveriesStatus | Unset = UNSET,
) -> Response[Error | NotAcceptable | WebhookDeliveryList]:
    """The endpoint's deliveries, newest first, each with its attempts.

    Args:
        id (UUID):
        limit (int | Unset):
        before (UUID | Unset):
        status (ListWebhookDeliveriesStatus | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | NotAcceptable | WebhookDeliveryList]
    """

    kwargs = _get_kwargs(
        id=id,
        limit=limit,
        before=before,
        status=status,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: UUID,
    *,
    client: AuthenticatedClient | Client,
    limit: int | Unset = UNSET,
    before: UUID | Unset = UNSET,
    status: ListWebhookDeliveriesStatus | Unset = UNSET,
) -> Error | NotAcceptable | WebhookDeliveryList | None:
    """The endpoint's deliveries, newest first, each with its attempts.

    Args:
        id (UUID):
        limit (int | Unset):
        before (UUID | Unset):
        status (ListWebhookDeliveriesStatus | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | NotAcceptable | WebhookDeliveryList
    """

    return sync_detailed(
        id=id,
        client=client,
        limit=limit,
        before=before,
        status=status,
    ).parsed


async def asyncio_detailed(
    id: UUID,
    *,
    client: AuthenticatedClient | Client,
    limit: int | Unset = UNSET,
    before: UUID | Unset = UNSET,
    status: ListWebhookDeliveriesStatus | Unset = UNSET,
) -> Response[Error | NotAcceptable | WebhookDeliveryList]:
    """The endpoint's deliveries, newest first, each with its attempts.

    Args:
        id (UUID):
        limit (int | Unset):
        before (UUID | Unset):
        status (ListWebhookDeliveriesStatus | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | NotAcceptable | WebhookDeliveryList]
    """

    kwargs = _get_kwargs(
        id=id,
        limit=limit,
        before=before,
        status=status,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: UUID,
    *,
    client: AuthenticatedClient | Client,
    limit: int | Unset = UNSET,
    before: UUID | Unset = UNSET,
    status: ListWebhookDeliveriesStatus | Unset = UNSET,
) -> Error | NotAcceptable | WebhookDeliveryList | None:
    """The endpoint's deliveries, newest first, each with its attempts.

    Args:
        id (UUID):
        limit (int | Unset):
        before (UUID | Unset):
        status (ListWebhookDeliveriesStatus | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | NotAcceptable | WebhookDeliveryList
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
            limit=limit,
            before=before,
            status=status,
        )
    ).parsed
