from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.respond_to import RespondTo
from ..models.sandbox_mode import SandboxMode
from ..types import UNSET, Unset

T = TypeVar("T", bound="ChatRelayIdentity")


@_attrs_define
class ChatRelayIdentity:
    """A hosted chat-relay identity. Its private key is never part of it.

    Attributes:
        agent_id (UUID): The agent that answers.
        enabled (bool): Whether the harness keeps a connection to the relay for it.
        id (UUID):
        inserted_at (datetime.datetime):
        name (str):
        pubkey (str): The identity's public key, 64 hexadecimal characters.
        relay_url (str):
        respond_to (RespondTo): Whom an identity answers: its owner (the key in `auth_tag`), the owner and
            the allowlist, anyone, or nobody.
        respond_to_allowlist (list[str]): Keys answered besides the owner in `allowlist` mode.
        updated_at (datetime.datetime):
        vault_id (UUID): The vault the identity's conversations run with (created for it; it never holds the private
            key).
        display_name (None | str | Unset):
        environment_id (None | Unset | UUID): Provision from this environment instead of the agent's.
        sandbox_mode (None | SandboxMode | Unset):
    """

    agent_id: UUID
    enabled: bool
    id: UUID
    inserted_at: datetime.datetime
    name: str
    pubkey: str
    relay_url: str
    respond_to: RespondTo
    respond_to_allowlist: list[str]
    updated_at: datetime.datetime
    vault_id: UUID
    display_name: None | str | Unset = UNSET
    environment_id: None | Unset | UUID = UNSET
    sandbox_mode: None | SandboxMode | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        agent_id = str(self.agent_id)

        enabled = self.enabled

        id = str(self.id)

        inserted_at = self.inserted_at.isoformat()

        name = self.name

        pubkey = self.pubkey

        relay_url = self.relay_url

        respond_to = self.respond_to.value

        respond_to_allowlist = self.respond_to_allowlist

        updated_at = self.updated_at.isoformat()

        vault_id = str(self.vault_id)

        display_name: None | str | Unset
        if isinstance(self.display_name, Unset):
            display_name = UNSET
        else:
            display_name = self.display_name

        environment_id: None | str | Unset
        if isinstance(self.environment_id, Unset):
            environment_id = UNSET
        elif isinstance(self.environment_id, UUID):
            environment_id = str(self.environment_id)
        else:
            environment_id = self.environment_id

        sandbox_mode: None | str | Unset
        if isinstance(self.sandbox_mode, Unset):
            sandbox_mode = UNSET
        elif isinstance(self.sandbox_mode, SandboxMode):
            sandbox_mode = self.sandbox_mode.value
        else:
            sandbox_mode = self.sandbox_mode

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "agent_id": agent_id,
                "enabled": enabled,
                "id": id,
                "inserted_at": inserted_at,
                "name": name,
                "pubkey": pubkey,
                "relay_url": relay_url,
                "respond_to": respond_to,
                "respond_to_allowlist": respond_to_allowlist,
                "updated_at": updated_at,
                "vault_id": vault_id,
            }
        )
        if display_name is not UNSET:
            field_dict["display_name"] = display_name
        if environment_id is not UNSET:
            field_dict["environment_id"] = environment_id
        if sandbox_mode is not UNSET:
            field_dict["sandbox_mode"] = sandbox_mode

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        agent_id = UUID(d.pop("agent_id"))

        enabled = d.pop("enabled")

        id = UUID(d.pop("id"))

        inserted_at = datetime.datetime.fromisoformat(d.pop("inserted_at"))

        name = d.pop("name")

        pubkey = d.pop("pubkey")

        relay_url = d.pop("relay_url")

        respond_to = RespondTo(d.pop("respond_to"))

        respond_to_allowlist = cast(list[str], d.pop("respond_to_allowlist"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        vault_id = UUID(d.pop("vault_id"))

        def _parse_display_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        display_name = _parse_display_name(d.pop("display_name", UNSET))

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

        def _parse_sandbox_mode(data: object) -> None | SandboxMode | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                sandbox_mode_type_0 = SandboxMode(data)

                return sandbox_mode_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SandboxMode | Unset, data)

        sandbox_mode = _parse_sandbox_mode(d.pop("sandbox_mode", UNSET))

        chat_relay_identity = cls(
            agent_id=agent_id,
            enabled=enabled,
            id=id,
            inserted_at=inserted_at,
            name=name,
            pubkey=pubkey,
            relay_url=relay_url,
            respond_to=respond_to,
            respond_to_allowlist=respond_to_allowlist,
            updated_at=updated_at,
            vault_id=vault_id,
            display_name=display_name,
            environment_id=environment_id,
            sandbox_mode=sandbox_mode,
        )

        chat_relay_identity.additional_properties = d
        return chat_relay_identity

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
