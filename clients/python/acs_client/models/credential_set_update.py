from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="CredentialSetUpdate")


@_attrs_define
class CredentialSetUpdate:
    """
    Attributes:
        is_default (bool | None | Unset): Only `true` is accepted: promote this set to default.
        name (None | str | Unset):
        openai_grant_id (None | Unset | UUID): A linked subscription this set runs `codex` on; null clears it.
    """

    is_default: bool | None | Unset = UNSET
    name: None | str | Unset = UNSET
    openai_grant_id: None | Unset | UUID = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        is_default: bool | None | Unset
        if isinstance(self.is_default, Unset):
            is_default = UNSET
        else:
            is_default = self.is_default

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        openai_grant_id: None | str | Unset
        if isinstance(self.openai_grant_id, Unset):
            openai_grant_id = UNSET
        elif isinstance(self.openai_grant_id, UUID):
            openai_grant_id = str(self.openai_grant_id)
        else:
            openai_grant_id = self.openai_grant_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if is_default is not UNSET:
            field_dict["is_default"] = is_default
        if name is not UNSET:
            field_dict["name"] = name
        if openai_grant_id is not UNSET:
            field_dict["openai_grant_id"] = openai_grant_id

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_is_default(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        is_default = _parse_is_default(d.pop("is_default", UNSET))

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        def _parse_openai_grant_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                openai_grant_id_type_0 = UUID(data)

                return openai_grant_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        openai_grant_id = _parse_openai_grant_id(d.pop("openai_grant_id", UNSET))

        credential_set_update = cls(
            is_default=is_default,
            name=name,
            openai_grant_id=openai_grant_id,
        )

        credential_set_update.additional_properties = d
        return credential_set_update

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
