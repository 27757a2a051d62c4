from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define

from ..models.respond_to import RespondTo
from ..models.sandbox_mode import SandboxMode
from ..types import UNSET, Unset

T = TypeVar("T", bound="ChatRelayIdentityUpdate")


@_attrs_define
class ChatRelayIdentityUpdate:
    """A change to an identity; fields not named keep their value. The key pair
    and the owner change by provisioning again.

        Attributes:
            agent_id (None | Unset | UUID):
            display_name (None | str | Unset): Null clears it.
            enabled (bool | None | Unset):
            environment_id (None | Unset | UUID): Null clears it.
            name (None | str | Unset):
            relay_url (None | str | Unset):
            respond_to (None | RespondTo | Unset):
            respond_to_allowlist (list[str] | None | Unset):
            sandbox_mode (None | SandboxMode | Unset):
    """

    agent_id: None | Unset | UUID = UNSET
    display_name: None | str | Unset = UNSET
    enabled: bool | None | Unset = UNSET
    environment_id: None | Unset | UUID = UNSET
    name: None | str | Unset = UNSET
    relay_url: None | str | Unset = UNSET
    respond_to: None | RespondTo | Unset = UNSET
    respond_to_allowlist: list[str] | None | Unset = UNSET
    sandbox_mode: None | SandboxMode | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        agent_id: None | str | Unset
        if isinstance(self.agent_id, Unset):
            agent_id = UNSET
        elif isinstance(self.agent_id, UUID):
            agent_id = str(self.agent_id)
        else:
            agent_id = self.agent_id

        display_name: None | str | Unset
        if isinstance(self.display_name, Unset):
            display_name = UNSET
        else:
            display_name = self.display_name

        enabled: bool | None | Unset
        if isinstance(self.enabled, Unset):
            enabled = UNSET
        else:
            enabled = self.enabled

        environment_id: None | str | Unset
        if isinstance(self.environment_id, Unset):
            environment_id = UNSET
        elif isinstance(self.environment_id, UUID):
            environment_id = str(self.environment_id)
        else:
            environment_id = self.environment_id

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        relay_url: None | str | Unset
        if isinstance(self.relay_url, Unset):
            relay_url = UNSET
        else:
            relay_url = self.relay_url

        respond_to: None | str | Unset
        if isinstance(self.respond_to, Unset):
            respond_to = UNSET
        elif isinstance(self.respond_to, RespondTo):
            respond_to = self.respond_to.value
        else:
            respond_to = self.respond_to

        respond_to_allowlist: list[str] | None | Unset
        if isinstance(self.respond_to_allowlist, Unset):
            respond_to_allowlist = UNSET
        elif isinstance(self.respond_to_allowlist, list):
            respond_to_allowlist = self.respond_to_allowlist

        else:
            respond_to_allowlist = self.respond_to_allowlist

        sandbox_mode: None | str | Unset
        if isinstance(self.sandbox_mode, Unset):
            sandbox_mode = UNSET
        elif isinstance(self.sandbox_mode, SandboxMode):
            sandbox_mode = self.sandbox_mode.value
        else:
            sandbox_mode = self.sandbox_mode

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if agent_id is not UNSET:
            field_dict["agent_id"] = agent_id
        if display_name is not UNSET:
            field_dict["display_name"] = display_name
        if enabled is not UNSET:
            field_dict["enabled"] = enabled
        if environment_id is not UNSET:
            field_dict["environment_id"] = environment_id
        if name is not UNSET:
            field_dict["name"] = name
        if relay_url is not UNSET:
            field_dict["relay_url"] = relay_url
        if respond_to is not UNSET:
            field_dict["respond_to"] = respond_to
        if respond_to_allowlist is not UNSET:
            field_dict["respond_to_allowlist"] = respond_to_allowlist
        if sandbox_mode is not UNSET:
            field_dict["sandbox_mode"] = sandbox_mode

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

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

        def _parse_display_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        display_name = _parse_display_name(d.pop("display_name", UNSET))

        def _parse_enabled(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        enabled = _parse_enabled(d.pop("enabled", UNSET))

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

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        def _parse_relay_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        relay_url = _parse_relay_url(d.pop("relay_url", UNSET))

        def _parse_respond_to(data: object) -> None | RespondTo | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                respond_to_type_0 = RespondTo(data)

                return respond_to_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RespondTo | Unset, data)

        respond_to = _parse_respond_to(d.pop("respond_to", UNSET))

        def _parse_respond_to_allowlist(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                respond_to_allowlist_type_0 = cast(list[str], data)

                return respond_to_allowlist_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        respond_to_allowlist = _parse_respond_to_allowlist(d.pop("respond_to_allowlist", UNSET))

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

        chat_relay_identity_update = cls(
            agent_id=agent_id,
            display_name=display_name,
            enabled=enabled,
            environment_id=environment_id,
            name=name,
            relay_url=relay_url,
            respond_to=respond_to,
            respond_to_allowlist=respond_to_allowlist,
            sandbox_mode=sandbox_mode,
        )

        return chat_relay_identity_update
