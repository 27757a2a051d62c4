from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.openai_grant import OpenaiGrant


T = TypeVar("T", bound="InferenceCredentialSet")


@_attrs_define
class InferenceCredentialSet:
    """
    Attributes:
        id (UUID):
        inserted_at (datetime.datetime):
        is_default (bool): Exactly one set per account is the default; it cannot be deleted.
        name (str):
        providers (list[str]): Provider credentials held, never their values.
        updated_at (datetime.datetime):
        openai_grant (None | OpenaiGrant | Unset):
        openai_grant_id (None | Unset | UUID):
    """

    id: UUID
    inserted_at: datetime.datetime
    is_default: bool
    name: str
    providers: list[str]
    updated_at: datetime.datetime
    openai_grant: None | OpenaiGrant | Unset = UNSET
    openai_grant_id: None | Unset | UUID = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.openai_grant import OpenaiGrant  # noqa: PLC0415

        id = str(self.id)

        inserted_at = self.inserted_at.isoformat()

        is_default = self.is_default

        name = self.name

        providers = self.providers

        updated_at = self.updated_at.isoformat()

        openai_grant: dict[str, Any] | None | Unset
        if isinstance(self.openai_grant, Unset):
            openai_grant = UNSET
        elif isinstance(self.openai_grant, OpenaiGrant):
            openai_grant = self.openai_grant.to_dict()
        else:
            openai_grant = self.openai_grant

        openai_grant_id: None | str | Unset
        if isinstance(self.openai_grant_id, Unset):
            openai_grant_id = UNSET
        elif isinstance(self.openai_grant_id, UUID):
            openai_grant_id = str(self.openai_grant_id)
        else:
            openai_grant_id = self.openai_grant_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "inserted_at": inserted_at,
                "is_default": is_default,
                "name": name,
                "providers": providers,
                "updated_at": updated_at,
            }
        )
        if openai_grant is not UNSET:
            field_dict["openai_grant"] = openai_grant
        if openai_grant_id is not UNSET:
            field_dict["openai_grant_id"] = openai_grant_id

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.openai_grant import OpenaiGrant  # noqa: PLC0415

        d = dict(src_dict)
        id = UUID(d.pop("id"))

        inserted_at = datetime.datetime.fromisoformat(d.pop("inserted_at"))

        is_default = d.pop("is_default")

        name = d.pop("name")

        providers = cast(list[str], d.pop("providers"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        def _parse_openai_grant(data: object) -> None | OpenaiGrant | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                openai_grant_type_0 = OpenaiGrant.from_dict(data)

                return openai_grant_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | OpenaiGrant | Unset, data)

        openai_grant = _parse_openai_grant(d.pop("openai_grant", UNSET))

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

        inference_credential_set = cls(
            id=id,
            inserted_at=inserted_at,
            is_default=is_default,
            name=name,
            providers=providers,
            updated_at=updated_at,
            openai_grant=openai_grant,
            openai_grant_id=openai_grant_id,
        )

        inference_credential_set.additional_properties = d
        return inference_credential_set

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
