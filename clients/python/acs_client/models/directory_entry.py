from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.entry_kind import EntryKind

T = TypeVar("T", bound="DirectoryEntry")


@_attrs_define
class DirectoryEntry:
    """
    Attributes:
        kind (EntryKind): What a directory entry is: `file`, `directory`, `symlink`, or `other` (a socket, a device, a
            pipe).
        name (str):
        size (int): Bytes (of the link itself for a symlink).
    """

    kind: EntryKind
    name: str
    size: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        kind = self.kind.value

        name = self.name

        size = self.size

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "kind": kind,
                "name": name,
                "size": size,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        kind = EntryKind(d.pop("kind"))

        name = d.pop("name")

        size = d.pop("size")

        directory_entry = cls(
            kind=kind,
            name=name,
            size=size,
        )

        directory_entry.additional_properties = d
        return directory_entry

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
