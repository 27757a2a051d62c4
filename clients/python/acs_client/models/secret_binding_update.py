from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.secret_binding_source import SecretBindingSource


T = TypeVar("T", bound="SecretBindingUpdate")


@_attrs_define
class SecretBindingUpdate:
    """`PATCH /api/secret-bindings/{id}`: omitted fields stay.

    Attributes:
        enabled (bool | None | Unset):
        header (None | str | Unset):
        host (None | str | Unset):
        name (None | str | Unset):
        source (None | SecretBindingSource | Unset):
        template (None | str | Unset):
    """

    enabled: bool | None | Unset = UNSET
    header: None | str | Unset = UNSET
    host: None | str | Unset = UNSET
    name: None | str | Unset = UNSET
    source: None | SecretBindingSource | Unset = UNSET
    template: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.secret_binding_source import SecretBindingSource  # noqa: PLC0415

        enabled: bool | None | Unset
        if isinstance(self.enabled, Unset):
            enabled = UNSET
        else:
            enabled = self.enabled

        header: None | str | Unset
        if isinstance(self.header, Unset):
            header = UNSET
        else:
            header = self.header

        host: None | str | Unset
        if isinstance(self.host, Unset):
            host = UNSET
        else:
            host = self.host

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        source: dict[str, Any] | None | Unset
        if isinstance(self.source, Unset):
            source = UNSET
        elif isinstance(self.source, SecretBindingSource):
            source = self.source.to_dict()
        else:
            source = self.source

        template: None | str | Unset
        if isinstance(self.template, Unset):
            template = UNSET
        else:
            template = self.template

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if enabled is not UNSET:
            field_dict["enabled"] = enabled
        if header is not UNSET:
            field_dict["header"] = header
        if host is not UNSET:
            field_dict["host"] = host
        if name is not UNSET:
            field_dict["name"] = name
        if source is not UNSET:
            field_dict["source"] = source
        if template is not UNSET:
            field_dict["template"] = template

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.secret_binding_source import SecretBindingSource  # noqa: PLC0415

        d = dict(src_dict)

        def _parse_enabled(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        enabled = _parse_enabled(d.pop("enabled", UNSET))

        def _parse_header(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        header = _parse_header(d.pop("header", UNSET))

        def _parse_host(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        host = _parse_host(d.pop("host", UNSET))

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        def _parse_source(data: object) -> None | SecretBindingSource | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                source_type_0 = SecretBindingSource.from_dict(data)

                return source_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SecretBindingSource | Unset, data)

        source = _parse_source(d.pop("source", UNSET))

        def _parse_template(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        template = _parse_template(d.pop("template", UNSET))

        secret_binding_update = cls(
            enabled=enabled,
            header=header,
            host=host,
            name=name,
            source=source,
            template=template,
        )

        return secret_binding_update
