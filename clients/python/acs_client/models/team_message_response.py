from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.delivery import Delivery
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.sandbox_request import SandboxRequest


T = TypeVar("T", bound="TeamMessageResponse")


@_attrs_define
class TeamMessageResponse:
    """What happened to a team message. It precedes the turn, so it carries no turn id.

    Attributes:
        status (Delivery): What happened to a delivered prompt.
        client_request_id (None | str | Unset): Repeated as sent.
        conversation_id (None | Unset | UUID): The receiving conversation; null while it waits in the sandbox queue.
        sandbox_request (None | SandboxRequest | Unset):
    """

    status: Delivery
    client_request_id: None | str | Unset = UNSET
    conversation_id: None | Unset | UUID = UNSET
    sandbox_request: None | SandboxRequest | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.sandbox_request import SandboxRequest  # noqa: PLC0415

        status = self.status.value

        client_request_id: None | str | Unset
        if isinstance(self.client_request_id, Unset):
            client_request_id = UNSET
        else:
            client_request_id = self.client_request_id

        conversation_id: None | str | Unset
        if isinstance(self.conversation_id, Unset):
            conversation_id = UNSET
        elif isinstance(self.conversation_id, UUID):
            conversation_id = str(self.conversation_id)
        else:
            conversation_id = self.conversation_id

        sandbox_request: dict[str, Any] | None | Unset
        if isinstance(self.sandbox_request, Unset):
            sandbox_request = UNSET
        elif isinstance(self.sandbox_request, SandboxRequest):
            sandbox_request = self.sandbox_request.to_dict()
        else:
            sandbox_request = self.sandbox_request

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "status": status,
            }
        )
        if client_request_id is not UNSET:
            field_dict["client_request_id"] = client_request_id
        if conversation_id is not UNSET:
            field_dict["conversation_id"] = conversation_id
        if sandbox_request is not UNSET:
            field_dict["sandbox_request"] = sandbox_request

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.sandbox_request import SandboxRequest  # noqa: PLC0415

        d = dict(src_dict)
        status = Delivery(d.pop("status"))

        def _parse_client_request_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        client_request_id = _parse_client_request_id(d.pop("client_request_id", UNSET))

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

        def _parse_sandbox_request(data: object) -> None | SandboxRequest | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                sandbox_request_type_0 = SandboxRequest.from_dict(data)

                return sandbox_request_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SandboxRequest | Unset, data)

        sandbox_request = _parse_sandbox_request(d.pop("sandbox_request", UNSET))

        team_message_response = cls(
            status=status,
            client_request_id=client_request_id,
            conversation_id=conversation_id,
            sandbox_request=sandbox_request,
        )

        team_message_response.additional_properties = d
        return team_message_response

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
