from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.secret_binding_source import SecretBindingSource


T = TypeVar("T", bound="SecretBindingCreate")


@_attrs_define
class SecretBindingCreate:
    """`POST /api/secret-bindings`.

    Attributes:
        header (str): Such as `authorization` or `x-api-key`.
        host (str):
        name (str): 1 to 200 characters, unique in the account; the egress record's `service`.
        source (SecretBindingSource): A binding's source on the wire: exactly one of `{vault_id, key}`,
            `{environment_id, key}`, `{connection_id}`.
        template (str): Contains `{value}` once, such as `Bearer {value}`.
        enabled (bool | None | Unset): Default true.
    """

    header: str
    host: str
    name: str
    source: SecretBindingSource
    template: str
    enabled: bool | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        header = self.header

        host = self.host

        name = self.name

        source = self.source.to_dict()

        template = self.template

        enabled: bool | None | Unset
        if isinstance(self.enabled, Unset):
            enabled = UNSET
        else:
            enabled = self.enabled

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "header": header,
                "host": host,
                "name": name,
                "source": source,
                "template": template,
            }
        )
        if enabled is not UNSET:
            field_dict["enabled"] = enabled

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.secret_binding_source import SecretBindingSource  # noqa: PLC0415

        d = dict(src_dict)
        header = d.pop("header")

        host = d.pop("host")

        name = d.pop("name")

        source = SecretBindingSource.from_dict(d.pop("source"))

        template = d.pop("template")

        def _parse_enabled(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        enabled = _parse_enabled(d.pop("enabled", UNSET))

        secret_binding_create = cls(
            header=header,
            host=host,
            name=name,
            source=source,
            template=template,
            enabled=enabled,
        )

        return secret_binding_create
