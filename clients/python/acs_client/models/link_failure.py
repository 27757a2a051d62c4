from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.grant_ref import GrantRef


T = TypeVar("T", bound="LinkFailure")


@_attrs_define
class LinkFailure:
    """
    Attributes:
        reason (str): `stale_grant`, `account_already_linked`, `grant_limit_reached`, `grant_not_found`, `name_taken`,
            `owner_ineligible`, `linking_disabled`, `tenant_key_unavailable`, `invalid_sign_in`,
            `authorization_failed`, `exchange_failed`, `internal_error`.
        grant (GrantRef | None | Unset):
        grant_id (None | Unset | UUID):
    """

    reason: str
    grant: GrantRef | None | Unset = UNSET
    grant_id: None | Unset | UUID = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.grant_ref import GrantRef  # noqa: PLC0415

        reason = self.reason

        grant: dict[str, Any] | None | Unset
        if isinstance(self.grant, Unset):
            grant = UNSET
        elif isinstance(self.grant, GrantRef):
            grant = self.grant.to_dict()
        else:
            grant = self.grant

        grant_id: None | str | Unset
        if isinstance(self.grant_id, Unset):
            grant_id = UNSET
        elif isinstance(self.grant_id, UUID):
            grant_id = str(self.grant_id)
        else:
            grant_id = self.grant_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "reason": reason,
            }
        )
        if grant is not UNSET:
            field_dict["grant"] = grant
        if grant_id is not UNSET:
            field_dict["grant_id"] = grant_id

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.grant_ref import GrantRef  # noqa: PLC0415

        d = dict(src_dict)
        reason = d.pop("reason")

        def _parse_grant(data: object) -> GrantRef | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                grant_type_0 = GrantRef.from_dict(data)

                return grant_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(GrantRef | None | Unset, data)

        grant = _parse_grant(d.pop("grant", UNSET))

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

        link_failure = cls(
            reason=reason,
            grant=grant,
            grant_id=grant_id,
        )

        link_failure.additional_properties = d
        return link_failure

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
