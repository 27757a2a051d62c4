from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="VerifyEmailResponse")


@_attrs_define
class VerifyEmailResponse:
    """
    Attributes:
        email_verified (bool):
        message (str):
        user_id (UUID):
    """

    email_verified: bool
    message: str
    user_id: UUID
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        email_verified = self.email_verified

        message = self.message

        user_id = str(self.user_id)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "email_verified": email_verified,
                "message": message,
                "user_id": user_id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        email_verified = d.pop("email_verified")

        message = d.pop("message")

        user_id = UUID(d.pop("user_id"))

        verify_email_response = cls(
            email_verified=email_verified,
            message=message,
            user_id=user_id,
        )

        verify_email_response.additional_properties = d
        return verify_email_response

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
