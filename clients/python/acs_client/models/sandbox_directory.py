from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.directory_entry import DirectoryEntry


T = TypeVar("T", bound="SandboxDirectory")


@_attrs_define
class SandboxDirectory:
    """A directory's entries (`GET /api/sandboxes/{id}/directory`), names redacted.

    Attributes:
        entries (list[DirectoryEntry]): Directories first, then by name; at most 1000.
        path (str):
        truncated (bool): True when the directory holds more entries than listed.
        snapshot_at (datetime.datetime | None | Unset): Present only when the sandbox is parked and the answer comes
            from its snapshot.
    """

    entries: list[DirectoryEntry]
    path: str
    truncated: bool
    snapshot_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        entries = []
        for entries_item_data in self.entries:
            entries_item = entries_item_data.to_dict()
            entries.append(entries_item)

        path = self.path

        truncated = self.truncated

        snapshot_at: None | str | Unset
        if isinstance(self.snapshot_at, Unset):
            snapshot_at = UNSET
        elif isinstance(self.snapshot_at, datetime.datetime):
            snapshot_at = self.snapshot_at.isoformat()
        else:
            snapshot_at = self.snapshot_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "entries": entries,
                "path": path,
                "truncated": truncated,
            }
        )
        if snapshot_at is not UNSET:
            field_dict["snapshot_at"] = snapshot_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.directory_entry import DirectoryEntry  # noqa: PLC0415

        d = dict(src_dict)
        entries = []
        _entries = d.pop("entries")
        for entries_item_data in _entries:
            entries_item = DirectoryEntry.from_dict(entries_item_data)

            entries.append(entries_item)

        path = d.pop("path")

        truncated = d.pop("truncated")

        def _parse_snapshot_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                snapshot_at_type_0 = datetime.datetime.fromisoformat(data)

                return snapshot_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        snapshot_at = _parse_snapshot_at(d.pop("snapshot_at", UNSET))

        sandbox_directory = cls(
            entries=entries,
            path=path,
            truncated=truncated,
            snapshot_at=snapshot_at,
        )

        sandbox_directory.additional_properties = d
        return sandbox_directory

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
