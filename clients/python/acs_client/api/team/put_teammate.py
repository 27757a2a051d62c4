from http import HTTPStatus
from typing import Any
from urllib.parse import quote
from uuid import UUID

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.not_acceptable import NotAcceptable
from ...models.teammate_data import TeammateData
from ...models.teammate_request import TeammateRequest
from ...types import Response


def _get_kwargs(
    agent_id: UUID,
    *,
    body: TeammateRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/api/team/{agent_id}".format(
            agent_id=quote(str(agent_id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | NotAcceptable | TeammateData | None:
    if response.status_code == 200:
        response_200 = TeammateData.from_dict(response.json())

        return response_200

    if response.status_code == 201:
        response_201 = TeammateData.from_dict(response.json())

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

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Error | NotAcceptable | TeammateData]:
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
    body: TeammateRequest,
) -> Response[Error | NotAcceptable | TeammateData]:
    """Adds the agent to the team (201) or replaces its bindings (200); an
    omitted binding is cleared (the agent's own is used). Rebinding ends the
    teammate's conversations and retires their machines; it is refused while
    a turn runs on one (409 `conversation_busy`) and when the agent already
    has a persistent machine for the new bindings (409 `teammate_machine_exists`).

    Args:
        agent_id (UUID):
        body (TeammateRequest): Body of `PUT /api/team/{agent_id}`: the whole teammate; an omitted
            binding is cleared.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | NotAcceptable | TeammateData]
    """

    kwargs = _get_kwargs(
        agent_id=agent_id,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    agent_id: UUID,
    *,
    client: AuthenticatedClient | Client,
    body: TeammateRequest,
) -> Error | NotAcceptable | TeammateData | None:
    """Adds the agent to the team (201) or replaces its bindings (200); an
    omitted binding is cleared (the agent's own is used). Rebinding ends the
    teammate's conversations and retires their machines; it is refused while
    a turn runs on one (409 `conversation_busy`) and when the agent already
    has a persistent machine for the new bindings (409 `teammate_machine_exists`).

    Args:
        agent_id (UUID):
        body (TeammateRequest): Body of `PUT /api/team/{agent_id}`: the whole teammate; an omitted
            binding is cleared.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | NotAcceptable | TeammateData
    """

    return sync_detailed(
        agent_id=agent_id,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    agent_id: UUID,
    *,
    client: AuthenticatedClient | Client,
    body: TeammateRequest,
) -> Response[Error | NotAcceptable | TeammateData]:
    """Adds the agent to the team (201) or replaces its bindings (200); an
    omitted binding is cleared (the agent's own is used). Rebinding ends the
    teammate's conversations and retires their machines; it is refused while
    a turn runs on one (409 `conversation_busy`) and when the agent already
    has a persistent machine for the new bindings (409 `teammate_machine_exists`).

    Args:
        agent_id (UUID):
        body (TeammateRequest): Body of `PUT /api/team/{agent_id}`: the whole teammate; an omitted
            binding is cleared.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | NotAcceptable | TeammateData]
    """

    kwargs = _get_kwargs(
        agent_id=agent_id,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    agent_id: UUID,
    *,
    client: AuthenticatedClient | Client,
    body: TeammateRequest,
) -> Error | NotAcceptable | TeammateData | None:
    """Adds the agent to the team (201) or replaces its bindings (200); an
    omitted binding is cleared (the agent's own is used). Rebinding ends the
    teammate's conversations and retires their machines; it is refused while
    a turn runs on one (409 `conversation_busy`) and when the agent already
    has a persistent machine for the new bindings (409 `teammate_machine_exists`).

    Args:
        agent_id (UUID):
        body (TeammateRequest): Body of `PUT /api/team/{agent_id}`: the whole teammate; an omitted
            binding is cleared.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | NotAcceptable | TeammateData
    """

    return (
        await asyncio_detailed(
            agent_id=agent_id,
            client=client,
            body=body,
        )
    ).parsed
