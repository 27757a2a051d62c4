from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="SandboxDiff")


@_attrs_define
class SandboxDiff:
    """
    Attributes:
        diff (str): Unified diff of tracked content, no colour.
        path (str):
        repo_root (str):
        staged (bool):
        truncated (bool):
        ref (None | str | Unset):
        snapshot_at (datetime.datetime | None | Unset):
    """

    diff: str
    path: str
    repo_root: str
    staged: bool
    truncated: bool
    ref: None | str | Unset = UNSET
    snapshot_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        diff = self.diff

        path = self.path

        repo_root = self.repo_root

        staged = self.staged

        truncated = self.truncated

        ref: None | str | Unset
        if isinstance(self.ref, Unset):
            ref = UNSET
        else:
            ref = self.ref

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
                "diff": diff,
                "path": path,
                "repo_root": repo_root,
                "staged": staged,
                "truncated": truncated,
            }
        )
        if ref is not UNSET:
            field_dict["ref"] = ref
        if snapshot_at is not UNSET:
            field_dict["snapshot_at"] = snapshot_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        diff = d.pop("diff")

        path = d.pop("path")

        repo_root = d.pop("repo_root")

        staged = d.pop("staged")

        truncated = d.pop("truncated")

        def _parse_ref(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        ref = _parse_ref(d.pop("ref", UNSET))

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

        sandbox_diff = cls(
            diff=diff,
            path=path,
            repo_root=repo_root,
            staged=staged,
            truncated=truncated,
            ref=ref,
            snapshot_at=snapshot_at,
        )

        sandbox_diff.additional_properties = d
        return sandbox_diff

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
