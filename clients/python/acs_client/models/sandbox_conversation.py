from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.conversation_status import ConversationStatus
from ..models.runtime import Runtime
from ..types import UNSET, Unset

T = TypeVar("T", bound="SandboxConversation")


@_attrs_define
class SandboxConversation:
    """A conversation as listed on its sandbox.

    Attributes:
        id (UUID):
        inserted_at (datetime.datetime):
        mid_turn (bool): True while a turn runs.
        runtime (Runtime): The runtime an agent runs on (DESIGN section 1); `acp` runs the agent's `command`.
        status (ConversationStatus):
        title (None | str | Unset):
    """

    id: UUID
    inserted_at: datetime.datetime
    mid_turn: bool
    runtime: Runtime
    status: ConversationStatus
    title: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = str(self.id)

        inserted_at = self.inserted_at.isoformat()

        mid_turn = self.mid_turn

        runtime = self.runtime.value

        status = self.status.value

        title: None | str | Unset
        if isinstance(self.title, Unset):
            title = UNSET
        else:
            title = self.title

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "inserted_at": inserted_at,
                "mid_turn": mid_turn,
                "runtime": runtime,
                "status": status,
            }
        )
        if title is not UNSET:
            field_dict["title"] = title

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = UUID(d.pop("id"))

        inserted_at = datetime.datetime.fromisoformat(d.pop("inserted_at"))

        mid_turn = d.pop("mid_turn")

        runtime = Runtime(d.pop("runtime"))

        status = ConversationStatus(d.pop("status"))

        def _parse_title(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        title = _parse_title(d.pop("title", UNSET))

        sandbox_conversation = cls(
            id=id,
            inserted_at=inserted_at,
            mid_turn=mid_turn,
            runtime=runtime,
            status=status,
            title=title,
        )

        sandbox_conversation.additional_properties = d
        return sandbox_conversation

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
