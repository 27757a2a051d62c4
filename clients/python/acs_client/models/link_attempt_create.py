from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="LinkAttemptCreate")


@_attrs_define
class LinkAttemptCreate:
    """Exactly one of `name` (a new link) or `grant_id` (a reconnect).

    Attributes:
        grant_id (None | Unset | UUID):
        name (None | str | Unset):
    """

    grant_id: None | Unset | UUID = UNSET
    name: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        grant_id: None | str | Unset
        if isinstance(self.grant_id, Unset):
            grant_id = UNSET
        elif isinstance(self.grant_id, UUID):
            grant_id = str(self.grant_id)
        else:
            grant_id = self.grant_id

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if grant_id is not UNSET:
            field_dict["grant_id"] = grant_id
        if name is not UNSET:
            field_dict["name"] = name

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_grant_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                grant_id_type_0 = UUID(data)

                return grant_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        grant_id = _parse_grant_id(d.pop("grant_id", UNSET))

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        link_attempt_create = cls(
            grant_id=grant_id,
            name=name,
        )

        return link_attempt_create
