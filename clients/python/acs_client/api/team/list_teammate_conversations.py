from http import HTTPStatus
from typing import Any
from urllib.parse import quote
from uuid import UUID

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.conversation_list import ConversationList
from ...models.error import Error
from ...models.not_acceptable import NotAcceptable
from ...types import UNSET, Response, Unset


def _get_kwargs(
    agent_id: UUID,
    *,
    label: list[str] | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    json_label: list[str] | Unset = UNSET
    if not isinstance(label, Unset):
        json_label = label

    params["label"] = json_label

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/team/{agent_id}/conversations".format(
            agent_id=quote(str(agent_id), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ConversationList | Error | NotAcceptable | None:
    if response.status_code == 200:
        response_200 = ConversationList.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = Error.from_dict(response.json())

        return response_400

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
) -> Response[ConversationList | Error | NotAcceptable]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    agent_id: UUID,
    *,
    client: AuthenticatedClient | Client,
    label: list[str] | Unset = UNSET,
) -> Response[ConversationList | Error | NotAcceptable]:
    """The teammate's team conversations, newest first, filtered by labels.

    Args:
        agent_id (UUID):
        label (list[str] | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ConversationList | Error | NotAcceptable]
    """

    kwargs = _get_kwargs(
        agent_id=agent_id,
        label=label,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    agent_id: UUID,
    *,
    client: AuthenticatedClient | Client,
    label: list[str] | Unset = UNSET,
) -> ConversationList | Error | NotAcceptable | None:
    """The teammate's team conversations, newest first, filtered by labels.

    Args:
        agent_id (UUID):
        label (list[str] | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ConversationList | Error | NotAcceptable
    """

    return sync_detailed(
        agent_id=agent_id,
        client=client,
        label=label,
    ).parsed


async def asyncio_detailed(
    agent_id: UUID,
    *,
    client: AuthenticatedClient | Client,
    label: list[str] | Unset = UNSET,
) -> Response[ConversationList | Error | NotAcceptable]:
    """The teammate's team conversations, newest first, filtered by labels.

    Args:
        agent_id (UUID):
        label (list[str] | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ConversationList | Error | NotAcceptable]
    """

    kwargs = _get_kwargs(
        agent_id=agent_id,
        label=label,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    agent_id: UUID,
    *,
    client: AuthenticatedClient | Client,
    label: list[str] | Unset = UNSET,
) -> ConversationList | Error | NotAcceptable | None:
    """The teammate's team conversations, newest first, filtered by labels.

    Args:
        agent_id (UUID):
        label (list[str] | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ConversationList | Error | NotAcceptable
    """

    return (
        await asyncio_detailed(
            agent_id=agent_id,
            client=client,
            label=label,
        )
    ).parsed
