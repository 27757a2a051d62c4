from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.scope import Scope

T = TypeVar("T", bound="MeKey")


@_attrs_define
class MeKey:
    """
    Attributes:
        id (UUID):
        scope (Scope): Key scopes: `full` may do everything the account may; `restricted` is
            refused on administrative routes (key management, credentials, ...);
            `sandbox` is a machine's callback key: restricted, and it acts only for
            its own machine and conversations. Sandbox keys are minted by the server.
    """

    id: UUID
    scope: Scope
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = str(self.id)

        scope = self.scope.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "scope": scope,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = UUID(d.pop("id"))

        scope = Scope(d.pop("scope"))

        me_key = cls(
            id=id,
            scope=scope,
        )

        me_key.additional_properties = d
        return me_key

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
