from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.secret_binding_source import SecretBindingSource


T = TypeVar("T", bound="SecretBinding")


@_attrs_define
class SecretBinding:
    """A secret binding: the broker adds `header: template` (with the source's
    value in place of `{value}`) to requests from the account's brokered
    machines to `host`. The value is never returned.

        Attributes:
            enabled (bool):
            header (str):
            host (str): `api.example.com`, or `*.example.com` for its subdomains.
            id (UUID):
            inserted_at (datetime.datetime):
            name (str):
            source (SecretBindingSource): A binding's source on the wire: exactly one of `{vault_id, key}`,
                `{environment_id, key}`, `{connection_id}`.
            template (str):
            updated_at (datetime.datetime):
    """

    enabled: bool
    header: str
    host: str
    id: UUID
    inserted_at: datetime.datetime
    name: str
    source: SecretBindingSource
    template: str
    updated_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        enabled = self.enabled

        header = self.header

        host = self.host

        id = str(self.id)

        inserted_at = self.inserted_at.isoformat()

        name = self.name

        source = self.source.to_dict()

        template = self.template

        updated_at = self.updated_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "enabled": enabled,
                "header": header,
                "host": host,
                "id": id,
                "inserted_at": inserted_at,
                "name": name,
                "source": source,
                "template": template,
                "updated_at": updated_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.secret_binding_source import SecretBindingSource  # noqa: PLC0415

        d = dict(src_dict)
        enabled = d.pop("enabled")

        header = d.pop("header")

        host = d.pop("host")

        id = UUID(d.pop("id"))

        inserted_at = datetime.datetime.fromisoformat(d.pop("inserted_at"))

        name = d.pop("name")

        source = SecretBindingSource.from_dict(d.pop("source"))

        template = d.pop("template")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        secret_binding = cls(
            enabled=enabled,
            header=header,
            host=host,
            id=id,
            inserted_at=inserted_at,
            name=name,
            source=source,
            template=template,
            updated_at=updated_at,
        )

        secret_binding.additional_properties = d
        return secret_binding

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
