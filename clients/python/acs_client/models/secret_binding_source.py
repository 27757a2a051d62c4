from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="SecretBindingSource")


@_attrs_define
class SecretBindingSource:
    """A binding's source on the wire: exactly one of `{vault_id, key}`,
    `{environment_id, key}`, `{connection_id}`.

        Attributes:
            connection_id (None | Unset | UUID): A connection (the connections extension): its access token.
            environment_id (None | Unset | UUID):
            key (None | str | Unset): The secret's key in the vault or environment.
            vault_id (None | Unset | UUID):
    """

    connection_id: None | Unset | UUID = UNSET
    environment_id: None | Unset | UUID = UNSET
    key: None | str | Unset = UNSET
    vault_id: None | Unset | UUID = UNSET

    def to_dict(self) -> dict[str, Any]:
        connection_id: None | str | Unset
        if isinstance(self.connection_id, Unset):
            connection_id = UNSET
        elif isinstance(self.connection_id, UUID):
            connection_id = str(self.connection_id)
        else:
            connection_id = self.connection_id

        environment_id: None | str | Unset
        if isinstance(self.environment_id, Unset):
            environment_id = UNSET
        elif isinstance(self.environment_id, UUID):
            environment_id = str(self.environment_id)
        else:
            environment_id = self.environment_id

        key: None | str | Unset
        if isinstance(self.key, Unset):
            key = UNSET
        else:
            key = self.key

        vault_id: None | str | Unset
        if isinstance(self.vault_id, Unset):
            vault_id = UNSET
        elif isinstance(self.vault_id, UUID):
            vault_id = str(self.vault_id)
        else:
            vault_id = self.vault_id

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if connection_id is not UNSET:
            field_dict["connection_id"] = connection_id
        if environment_id is not UNSET:
            field_dict["environment_id"] = environment_id
        if key is not UNSET:
            field_dict["key"] = key
        if vault_id is not UNSET:
            field_dict["vault_id"] = vault_id

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_connection_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                connection_id_type_0 = UUID(data)

                return connection_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        connection_id = _parse_connection_id(d.pop("connection_id", UNSET))

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

        def _parse_key(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        key = _parse_key(d.pop("key", UNSET))

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

        secret_binding_source = cls(
            connection_id=connection_id,
            environment_id=environment_id,
            key=key,
            vault_id=vault_id,
        )

        return secret_binding_source
