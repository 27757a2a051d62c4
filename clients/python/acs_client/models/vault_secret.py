from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="VaultSecret")


@_attrs_define
class VaultSecret:
    """A vault secret; its value is never returned.

    Attributes:
        id (UUID):
        inserted_at (datetime.datetime):
        key (str):
        updated_at (datetime.datetime):
        vault_id (UUID):
        expires_at (datetime.datetime | None | Unset): After this time the secret is no longer injected; still listed.
    """

    id: UUID
    inserted_at: datetime.datetime
    key: str
    updated_at: datetime.datetime
    vault_id: UUID
    expires_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = str(self.id)

        inserted_at = self.inserted_at.isoformat()

        key = self.key

        updated_at = self.updated_at.isoformat()

        vault_id = str(self.vault_id)

        expires_at: None | str | Unset
        if isinstance(self.expires_at, Unset):
            expires_at = UNSET
        elif isinstance(self.expires_at, datetime.datetime):
            expires_at = self.expires_at.isoformat()
        else:
            expires_at = self.expires_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "inserted_at": inserted_at,
                "key": key,
                "updated_at": updated_at,
                "vault_id": vault_id,
            }
        )
        if expires_at is not UNSET:
            field_dict["expires_at"] = expires_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = UUID(d.pop("id"))

        inserted_at = datetime.datetime.fromisoformat(d.pop("inserted_at"))

        key = d.pop("key")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        vault_id = UUID(d.pop("vault_id"))

        def _parse_expires_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                expires_at_type_0 = datetime.datetime.fromisoformat(data)

                return expires_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        expires_at = _parse_expires_at(d.pop("expires_at", UNSET))

        vault_secret = cls(
            id=id,
            inserted_at=inserted_at,
            key=key,
            updated_at=updated_at,
            vault_id=vault_id,
            expires_at=expires_at,
        )

        vault_secret.additional_properties = d
        return vault_secret

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
