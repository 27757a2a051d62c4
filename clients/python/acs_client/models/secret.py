from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="Secret")


@_attrs_define
class Secret:
    """An environment secret; its value is never returned.

    Attributes:
        environment_id (UUID):
        id (UUID):
        inserted_at (datetime.datetime):
        key (str):
        updated_at (datetime.datetime):
    """

    environment_id: UUID
    id: UUID
    inserted_at: datetime.datetime
    key: str
    updated_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        environment_id = str(self.environment_id)

        id = str(self.id)

        inserted_at = self.inserted_at.isoformat()

        key = self.key

        updated_at = self.updated_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "environment_id": environment_id,
                "id": id,
                "inserted_at": inserted_at,
                "key": key,
                "updated_at": updated_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        environment_id = UUID(d.pop("environment_id"))

        id = UUID(d.pop("id"))

        inserted_at = datetime.datetime.fromisoformat(d.pop("inserted_at"))

        key = d.pop("key")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        secret = cls(
            environment_id=environment_id,
            id=id,
            inserted_at=inserted_at,
            key=key,
            updated_at=updated_at,
        )

        secret.additional_properties = d
        return secret

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
