from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.provider_kind import ProviderKind
from ..models.sandbox_mode import SandboxMode
from ..models.sandbox_state import SandboxState
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.checkpoint import Checkpoint
    from ..models.runner import Runner
    from ..models.sandbox_conversation import SandboxConversation


T = TypeVar("T", bound="SandboxDetail")


@_attrs_define
class SandboxDetail:
    """
    Attributes:
        id (UUID):
        machine_name (str):
        mode (SandboxMode): `ephemeral`: one conversation's machine, reclaimed with it; `persistent`:
            the agent's home, shared and kept.
        provider (ProviderKind): Where a sandbox runs: `runner` (the user's own machine) or a hosted provider.
        status (SandboxState):
        conversations (list[SandboxConversation]): Every conversation ever opened on the machine, newest first.
        inserted_at (datetime.datetime):
        agent_id (None | Unset | UUID):
        checkpoint (Checkpoint | None | Unset):
        environment_id (None | Unset | UUID):
        runner (None | Runner | Unset):
        url (None | str | Unset): The sandbox's own HTTP endpoint; also `SANDBOX_URL` inside.
        vault_id (None | Unset | UUID):
        last_resumed_at (datetime.datetime | None | Unset):
    """

    id: UUID
    machine_name: str
    mode: SandboxMode
    provider: ProviderKind
    status: SandboxState
    conversations: list[SandboxConversation]
    inserted_at: datetime.datetime
    agent_id: None | Unset | UUID = UNSET
    checkpoint: Checkpoint | None | Unset = UNSET
    environment_id: None | Unset | UUID = UNSET
    runner: None | Runner | Unset = UNSET
    url: None | str | Unset = UNSET
    vault_id: None | Unset | UUID = UNSET
    last_resumed_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.checkpoint import Checkpoint  # noqa: PLC0415
        from ..models.runner import Runner  # noqa: PLC0415

        id = str(self.id)

        machine_name = self.machine_name

        mode = self.mode.value

        provider = self.provider.value

        status = self.status.value

        conversations = []
        for conversations_item_data in self.conversations:
            conversations_item = conversations_item_data.to_dict()
            conversations.append(conversations_item)

        inserted_at = self.inserted_at.isoformat()

        agent_id: None | str | Unset
        if isinstance(self.agent_id, Unset):
            agent_id = UNSET
        elif isinstance(self.agent_id, UUID):
            agent_id = str(self.agent_id)
        else:
            agent_id = self.agent_id

        checkpoint: dict[str, Any] | None | Unset
        if isinstance(self.checkpoint, Unset):
            checkpoint = UNSET
        elif isinstance(self.checkpoint, Checkpoint):
            checkpoint = self.checkpoint.to_dict()
        else:
            checkpoint = self.checkpoint

        environment_id: None | str | Unset
        if isinstance(self.environment_id, Unset):
            environment_id = UNSET
        elif isinstance(self.environment_id, UUID):
            environment_id = str(self.environment_id)
        else:
            environment_id = self.environment_id

        runner: dict[str, Any] | None | Unset
        if isinstance(self.runner, Unset):
            runner = UNSET
        elif isinstance(self.runner, Runner):
            runner = self.runner.to_dict()
        else:
            runner = self.runner

        url: None | str | Unset
        if isinstance(self.url, Unset):
            url = UNSET
        else:
            url = self.url

        vault_id: None | str | Unset
        if isinstance(self.vault_id, Unset):
            vault_id = UNSET
        elif isinstance(self.vault_id, UUID):
            vault_id = str(self.vault_id)
        else:
            vault_id = self.vault_id

        last_resumed_at: None | str | Unset
        if isinstance(self.last_resumed_at, Unset):
            last_resumed_at = UNSET
        elif isinstance(self.last_resumed_at, datetime.datetime):
            last_resumed_at = self.last_resumed_at.isoformat()
        else:
            last_resumed_at = self.last_resumed_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "machine_name": machine_name,
                "mode": mode,
                "provider": provider,
                "status": status,
                "conversations": conversations,
                "inserted_at": inserted_at,
            }
        )
        if agent_id is not UNSET:
            field_dict["agent_id"] = agent_id
        if checkpoint is not UNSET:
            field_dict["checkpoint"] = checkpoint
        if environment_id is not UNSET:
            field_dict["environment_id"] = environment_id
        if runner is not UNSET:
            field_dict["runner"] = runner
        if url is not UNSET:
            field_dict["url"] = url
        if vault_id is not UNSET:
            field_dict["vault_id"] = vault_id
        if last_resumed_at is not UNSET:
            field_dict["last_resumed_at"] = last_resumed_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.checkpoint import Checkpoint  # noqa: PLC0415
        from ..models.runner import Runner  # noqa: PLC0415
        from ..models.sandbox_conversation import SandboxConversation  # noqa: PLC0415

        d = dict(src_dict)
        id = UUID(d.pop("id"))

        machine_name = d.pop("machine_name")

        mode = SandboxMode(d.pop("mode"))

        provider = ProviderKind(d.pop("provider"))

        status = SandboxState(d.pop("status"))

        conversations = []
        _conversations = d.pop("conversations")
        for conversations_item_data in _conversations:
            conversations_item = SandboxConversation.from_dict(conversations_item_data)

            conversations.append(conversations_item)

        inserted_at = datetime.datetime.fromisoformat(d.pop("inserted_at"))

        def _parse_agent_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                agent_id_type_0 = UUID(data)

                return agent_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        agent_id = _parse_agent_id(d.pop("agent_id", UNSET))

        def _parse_checkpoint(data: object) -> Checkpoint | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                checkpoint_type_0 = Checkpoint.from_dict(data)

                return checkpoint_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Checkpoint | None | Unset, data)

        checkpoint = _parse_checkpoint(d.pop("checkpoint", UNSET))

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

        def _parse_runner(data: object) -> None | Runner | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                runner_type_0 = Runner.from_dict(data)

                return runner_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Runner | Unset, data)

        runner = _parse_runner(d.pop("runner", UNSET))

        def _parse_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        url = _parse_url(d.pop("url", UNSET))

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

        def _parse_last_resumed_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                last_resumed_at_type_0 = datetime.datetime.fromisoformat(data)

                return last_resumed_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        last_resumed_at = _parse_last_resumed_at(d.pop("last_resumed_at", UNSET))

        sandbox_detail = cls(
            id=id,
            machine_name=machine_name,
            mode=mode,
            provider=provider,
            status=status,
            conversations=conversations,
            inserted_at=inserted_at,
            agent_id=agent_id,
            checkpoint=checkpoint,
            environment_id=environment_id,
            runner=runner,
            url=url,
            vault_id=vault_id,
            last_resumed_at=last_resumed_at,
        )

        sandbox_detail.additional_properties = d
        return sandbox_detail

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
