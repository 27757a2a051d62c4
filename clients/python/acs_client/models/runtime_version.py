from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="RuntimeVersion")


@_attrs_define
class RuntimeVersion:
    """A named runtime's pinned package and what this instance has installed (`acs runtimes install`).

    Attributes:
        package (str):
        pinned (str):
        installed (None | str | Unset): `None`: not installed; agents of this runtime then need a `command`.
    """

    package: str
    pinned: str
    installed: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        package = self.package

        pinned = self.pinned

        installed: None | str | Unset
        if isinstance(self.installed, Unset):
            installed = UNSET
        else:
            installed = self.installed

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "package": package,
                "pinned": pinned,
            }
        )
        if installed is not UNSET:
            field_dict["installed"] = installed

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        package = d.pop("package")

        pinned = d.pop("pinned")

        def _parse_installed(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        installed = _parse_installed(d.pop("installed", UNSET))

        runtime_version = cls(
            package=package,
            pinned=pinned,
            installed=installed,
        )

        runtime_version.additional_properties = d
        return runtime_version

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
