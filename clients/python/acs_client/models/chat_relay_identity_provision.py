from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define

from ..models.respond_to import RespondTo
from ..models.sandbox_mode import SandboxMode
from ..types import UNSET, Unset

T = TypeVar("T", bound="ChatRelayIdentityProvision")


@_attrs_define
class ChatRelayIdentityProvision:
    """The provision request: creates the identity, or updates the caller's
    identity with the same `pubkey`. Deliberately not `Debug`: it holds the private key.

        Attributes:
            agent_id (UUID):
            auth_tag (str): The owner attestation tag, a JSON array string: `["auth","<owner pubkey hex>", ...]`.
            name (str): 1 to 200 characters.
            private_key_nsec (str): Bech32 `nsec1...`: sealed on the server, never returned, never in a sandbox.
            pubkey (str): 64 hexadecimal characters: the public key of `private_key_nsec`.
            relay_url (str): `wss://` (also `ws://` where `chat_relay.allow_insecure_relays` is on).
            display_name (None | str | Unset):
            environment_id (None | Unset | UUID): Omitted clears a previous value.
            respond_to (None | RespondTo | Unset):
            respond_to_allowlist (list[str] | None | Unset): 64-hex keys; required non-empty in `allowlist` mode.
            sandbox_mode (None | SandboxMode | Unset):
    """

    agent_id: UUID
    auth_tag: str
    name: str
    private_key_nsec: str
    pubkey: str
    relay_url: str
    display_name: None | str | Unset = UNSET
    environment_id: None | Unset | UUID = UNSET
    respond_to: None | RespondTo | Unset = UNSET
    respond_to_allowlist: list[str] | None | Unset = UNSET
    sandbox_mode: None | SandboxMode | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        agent_id = str(self.agent_id)

        auth_tag = self.auth_tag

        name = self.name

        private_key_nsec = self.private_key_nsec

        pubkey = self.pubkey

        relay_url = self.relay_url

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

        field_dict.update(
            {
                "agent_id": agent_id,
                "auth_tag": auth_tag,
                "name": name,
                "private_key_nsec": private_key_nsec,
                "pubkey": pubkey,
                "relay_url": relay_url,
            }
        )
        if display_name is not UNSET:
            field_dict["display_name"] = display_name
        if environment_id is not UNSET:
            field_dict["environment_id"] = environment_id
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
        agent_id = UUID(d.pop("agent_id"))

        auth_tag = d.pop("auth_tag")

        name = d.pop("name")

        private_key_nsec = d.pop("private_key_nsec")

        pubkey = d.pop("pubkey")

        relay_url = d.pop("relay_url")

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

        chat_relay_identity_provision = cls(
            agent_id=agent_id,
            auth_tag=auth_tag,
            name=name,
            private_key_nsec=private_key_nsec,
            pubkey=pubkey,
            relay_url=relay_url,
            display_name=display_name,
            environment_id=environment_id,
            respond_to=respond_to,
            respond_to_allowlist=respond_to_allowlist,
            sandbox_mode=sandbox_mode,
        )

        return chat_relay_identity_provision
