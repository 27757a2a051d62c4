from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.delivery import Delivery
from ..types import UNSET, Unset

T = TypeVar("T", bound="PromptResponse")


@_attrs_define
class PromptResponse:
    """What happened to a prompt. It precedes the turn, so it carries no turn id.

    Attributes:
        conversation_id (UUID):
        status (Delivery): What happened to a delivered prompt.
        client_request_id (None | str | Unset): Repeated as sent.
    """

    conversation_id: UUID
    status: Delivery
    client_request_id: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        conversation_id = str(self.conversation_id)

        status = self.status.value

        client_request_id: None | str | Unset
        if isinstance(self.client_request_id, Unset):
            client_request_id = UNSET
        else:
            client_request_id = self.client_request_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "conversation_id": conversation_id,
                "status": status,
            }
        )
        if client_request_id is not UNSET:
            field_dict["client_request_id"] = client_request_id

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        conversation_id = UUID(d.pop("conversation_id"))

        status = Delivery(d.pop("status"))

        def _parse_client_request_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        client_request_id = _parse_client_request_id(d.pop("client_request_id", UNSET))

        prompt_response = cls(
            conversation_id=conversation_id,
            status=status,
            client_request_id=client_request_id,
        )

        prompt_response.additional_properties = d
        return prompt_response

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
