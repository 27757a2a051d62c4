from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.agent import Agent
    from ..models.conversation import Conversation
    from ..models.turn import Turn


T = TypeVar("T", bound="Teammate")


@_attrs_define
class Teammate:
    """An agent on the account's team, with a stable conversation.

    Attributes:
        agent (Agent): An agent: its current version's fields plus identity.
        agent_id (UUID):
        inserted_at (datetime.datetime):
        updated_at (datetime.datetime):
        conversation (Conversation | None | Unset):
        environment_id (None | Unset | UUID): The environment its conversations run in; null uses the agent's.
        last_turn (None | Turn | Unset):
        vault_id (None | Unset | UUID): The vault its conversations use; null uses the agent's.
    """

    agent: Agent
    agent_id: UUID
    inserted_at: datetime.datetime
    updated_at: datetime.datetime
    conversation: Conversation | None | Unset = UNSET
    environment_id: None | Unset | UUID = UNSET
    last_turn: None | Turn | Unset = UNSET
    vault_id: None | Unset | UUID = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.conversation import Conversation  # noqa: PLC0415
        from ..models.turn import Turn  # noqa: PLC0415

        agent = self.agent.to_dict()

        agent_id = str(self.agent_id)

        inserted_at = self.inserted_at.isoformat()

        updated_at = self.updated_at.isoformat()

        conversation: dict[str, Any] | None | Unset
        if isinstance(self.conversation, Unset):
            conversation = UNSET
        elif isinstance(self.conversation, Conversation):
            conversation = self.conversation.to_dict()
        else:
            conversation = self.conversation

        environment_id: None | str | Unset
        if isinstance(self.environment_id, Unset):
            environment_id = UNSET
        elif isinstance(self.environment_id, UUID):
            environment_id = str(self.environment_id)
        else:
            environment_id = self.environment_id

        last_turn: dict[str, Any] | None | Unset
        if isinstance(self.last_turn, Unset):
            last_turn = UNSET
        elif isinstance(self.last_turn, Turn):
            last_turn = self.last_turn.to_dict()
        else:
            last_turn = self.last_turn

        vault_id: None | str | Unset
        if isinstance(self.vault_id, Unset):
            vault_id = UNSET
        elif isinstance(self.vault_id, UUID):
            vault_id = str(self.vault_id)
        else:
            vault_id = self.vault_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "agent": agent,
                "agent_id": agent_id,
                "inserted_at": inserted_at,
                "updated_at": updated_at,
            }
        )
        if conversation is not UNSET:
            field_dict["conversation"] = conversation
        if environment_id is not UNSET:
            field_dict["environment_id"] = environment_id
        if last_turn is not UNSET:
            field_dict["last_turn"] = last_turn
        if vault_id is not UNSET:
            field_dict["vault_id"] = vault_id

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.agent import Agent  # noqa: PLC0415
        from ..models.conversation import Conversation  # noqa: PLC0415
        from ..models.turn import Turn  # noqa: PLC0415

        d = dict(src_dict)
        agent = Agent.from_dict(d.pop("agent"))

        agent_id = UUID(d.pop("agent_id"))

        inserted_at = datetime.datetime.fromisoformat(d.pop("inserted_at"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        def _parse_conversation(data: object) -> Conversation | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                conversation_type_0 = Conversation.from_dict(data)

                return conversation_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Conversation | None | Unset, data)

        conversation = _parse_conversation(d.pop("conversation", UNSET))

        def _parse_environment_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                environment_id_type_0 = UUID(data)

                return environment_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        environment_id = _parse_environment_id(d.pop("environment_id", UNSET))

        def _parse_last_turn(data: object) -> None | Turn | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                last_turn_type_0 = Turn.from_dict(data)

                return last_turn_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Turn | Unset, data)

        last_turn = _parse_last_turn(d.pop("last_turn", UNSET))

        def _parse_vault_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                vault_id_type_0 = UUID(data)

                return vault_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        vault_id = _parse_vault_id(d.pop("vault_id", UNSET))

        teammate = cls(
            agent=agent,
            agent_id=agent_id,
            inserted_at=inserted_at,
            updated_at=updated_at,
            conversation=conversation,
            environment_id=environment_id,
            last_turn=last_turn,
            vault_id=vault_id,
        )

        teammate.additional_properties = d
        return teammate

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
