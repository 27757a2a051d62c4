from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.sandbox_request_status import SandboxRequestStatus
from ..types import UNSET, Unset

T = TypeVar("T", bound="SandboxRequest")


@_attrs_define
class SandboxRequest:
    """`SandboxRequest`: a start that met a concurrency ceiling and waits in the
    account's line, or what became of it.

        Attributes:
            agent_id (UUID):
            expires_at (datetime.datetime): A request still queued then ends `failed` with `queue_wait_expired`.
            id (UUID):
            inserted_at (datetime.datetime):
            status (SandboxRequestStatus): Where a request is.
            updated_at (datetime.datetime):
            channel_id (None | str | Unset):
            conversation_id (None | Unset | UUID): The conversation the start opened or resumed; also set on
                `prompt_delivery_unknown`.
            error (None | str | Unset): Why it failed: `queue_wait_expired`,
                `permission_policy_requires_fresh_conversation`,
                `prompt_delivery_unknown`, or the code the start was refused with (`insufficient_credits`,
                `not_found`, ...).
            position (int | None | Unset): One-based place in the account's line while `queued`; null otherwise.
    """

    agent_id: UUID
    expires_at: datetime.datetime
    id: UUID
    inserted_at: datetime.datetime
    status: SandboxRequestStatus
    updated_at: datetime.datetime
    channel_id: None | str | Unset = UNSET
    conversation_id: None | Unset | UUID = UNSET
    error: None | str | Unset = UNSET
    position: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        agent_id = str(self.agent_id)

        expires_at = self.expires_at.isoformat()

        id = str(self.id)

        inserted_at = self.inserted_at.isoformat()

        status = self.status.value

        updated_at = self.updated_at.isoformat()

        channel_id: None | str | Unset
        if isinstance(self.channel_id, Unset):
            channel_id = UNSET
        else:
            channel_id = self.channel_id

        conversation_id: None | str | Unset
        if isinstance(self.conversation_id, Unset):
            conversation_id = UNSET
        elif isinstance(self.conversation_id, UUID):
            conversation_id = str(self.conversation_id)
        else:
            conversation_id = self.conversation_id

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        position: int | None | Unset
        if isinstance(self.position, Unset):
            position = UNSET
        else:
            position = self.position

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "agent_id": agent_id,
                "expires_at": expires_at,
                "id": id,
                "inserted_at": inserted_at,
                "status": status,
                "updated_at": updated_at,
            }
        )
        if channel_id is not UNSET:
            field_dict["channel_id"] = channel_id
        if conversation_id is not UNSET:
            field_dict["conversation_id"] = conversation_id
        if error is not UNSET:
            field_dict["error"] = error
        if position is not UNSET:
            field_dict["position"] = position

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        agent_id = UUID(d.pop("agent_id"))

        expires_at = datetime.datetime.fromisoformat(d.pop("expires_at"))

        id = UUID(d.pop("id"))

        inserted_at = datetime.datetime.fromisoformat(d.pop("inserted_at"))

        status = SandboxRequestStatus(d.pop("status"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        def _parse_channel_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        channel_id = _parse_channel_id(d.pop("channel_id", UNSET))

        def _parse_conversation_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                conversation_id_type_0 = UUID(data)

                return conversation_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        conversation_id = _parse_conversation_id(d.pop("conversation_id", UNSET))

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        def _parse_position(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        position = _parse_position(d.pop("position", UNSET))

        sandbox_request = cls(
            agent_id=agent_id,
            expires_at=expires_at,
            id=id,
            inserted_at=inserted_at,
            status=status,
            updated_at=updated_at,
            channel_id=channel_id,
            conversation_id=conversation_id,
            error=error,
            position=position,
        )

        sandbox_request.additional_properties = d
        return sandbox_request

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
