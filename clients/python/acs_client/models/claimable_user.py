from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="ClaimableUser")


@_attrs_define
class ClaimableUser:
    """A principal as its application sees it on create.

    Attributes:
        account_id (UUID): The principal's account id (its tenant), kept by the claim.
        api_key (str): A full-scope key that acts as the principal; shown once. Every create
            (repeats too) mints a new one; earlier ones keep working until the claim.
        claimed (bool): Always false here: a claimed principal is no longer the application's.
        id (UUID): The claim grant id: used in this resource's paths and handed to the person who claims it.
    """

    account_id: UUID
    api_key: str
    claimed: bool
    id: UUID
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        account_id = str(self.account_id)

        api_key = self.api_key

        claimed = self.claimed

        id = str(self.id)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "account_id": account_id,
                "api_key": api_key,
                "claimed": claimed,
                "id": id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        account_id = UUID(d.pop("account_id"))

        api_key = d.pop("api_key")

        claimed = d.pop("claimed")

        id = UUID(d.pop("id"))

        claimable_user = cls(
            account_id=account_id,
            api_key=api_key,
            claimed=claimed,
            id=id,
        )

        claimable_user.additional_properties = d
        return claimable_user

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
