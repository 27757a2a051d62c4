from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.file_encoding import FileEncoding
from ..types import UNSET, Unset

T = TypeVar("T", bound="SandboxFile")


@_attrs_define
class SandboxFile:
    """
    Attributes:
        content (str):
        encoding (FileEncoding): `utf-8`, or `base64` when the bytes are not valid UTF-8.
        path (str):
        size (int): Bytes of the whole file.
        truncated (bool): True when `content` is shorter than the file (`max_bytes`, or redaction grew the text past
            it).
        snapshot_at (datetime.datetime | None | Unset): Present only when the sandbox is parked and the answer comes
            from its snapshot.
    """

    content: str
    encoding: FileEncoding
    path: str
    size: int
    truncated: bool
    snapshot_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        content = self.content

        encoding = self.encoding.value

        path = self.path

        size = self.size

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
                "content": content,
                "encoding": encoding,
                "path": path,
                "size": size,
                "truncated": truncated,
            }
        )
        if snapshot_at is not UNSET:
            field_dict["snapshot_at"] = snapshot_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        content = d.pop("content")

        encoding = FileEncoding(d.pop("encoding"))

        path = d.pop("path")

        size = d.pop("size")

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

        sandbox_file = cls(
            content=content,
            encoding=encoding,
            path=path,
            size=size,
            truncated=truncated,
            snapshot_at=snapshot_at,
        )

        sandbox_file.additional_properties = d
        return sandbox_file

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
