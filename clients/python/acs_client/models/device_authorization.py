from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="DeviceAuthorization")


@_attrs_define
class DeviceAuthorization:
    """RFC 8628 section 3.2: what the device shows and how it polls.

    Attributes:
        device_code (str): Secret; sent back on every poll, never shown to the person.
        expires_in (int): Seconds until the codes expire.
        interval (int): Seconds to wait between polls.
        user_code (str): Shown to the person, who enters it at `verification_uri` (`XXXX-XXXX`).
        verification_uri (str):
        verification_uri_complete (str): `verification_uri` with the user code filled in.
    """

    device_code: str
    expires_in: int
    interval: int
    user_code: str
    verification_uri: str
    verification_uri_complete: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        device_code = self.device_code

        expires_in = self.expires_in

        interval = self.interval

        user_code = self.user_code

        verification_uri = self.verification_uri

        verification_uri_complete = self.verification_uri_complete

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "device_code": device_code,
                "expires_in": expires_in,
                "interval": interval,
                "user_code": user_code,
                "verification_uri": verification_uri,
                "verification_uri_complete": verification_uri_complete,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        device_code = d.pop("device_code")

        expires_in = d.pop("expires_in")

        interval = d.pop("interval")

        user_code = d.pop("user_code")

        verification_uri = d.pop("verification_uri")

        verification_uri_complete = d.pop("verification_uri_complete")

        device_authorization = cls(
            device_code=device_code,
            expires_in=expires_in,
            interval=interval,
            user_code=user_code,
            verification_uri=verification_uri,
            verification_uri_complete=verification_uri_complete,
        )

        device_authorization.additional_properties = d
        return device_authorization

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
