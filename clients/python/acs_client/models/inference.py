from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.inference_origin import InferenceOrigin
from ..models.inference_scope import InferenceScope
from ..types import UNSET, Unset

T = TypeVar("T", bound="Inference")


@_attrs_define
class Inference:
    """A turn's `inference` object: written when the turn starts, never changed.

    Attributes:
        origin (InferenceOrigin): Who provides the model access.
        scope (InferenceScope): Where the credential came from.
        openai_grant_id (None | Unset | UUID):
    """

    origin: InferenceOrigin
    scope: InferenceScope
    openai_grant_id: None | Unset | UUID = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        origin = self.origin.value

        scope = self.scope.value

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
                "origin": origin,
                "scope": scope,
            }
        )
        if openai_grant_id is not UNSET:
            field_dict["openai_grant_id"] = openai_grant_id

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        origin = InferenceOrigin(d.pop("origin"))

        scope = InferenceScope(d.pop("scope"))

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

        inference = cls(
            origin=origin,
            scope=scope,
            openai_grant_id=openai_grant_id,
        )

        inference.additional_properties = d
        return inference

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
