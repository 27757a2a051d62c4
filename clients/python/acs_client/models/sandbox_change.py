from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.change_kind import ChangeKind
from ..types import UNSET, Unset

T = TypeVar("T", bound="SandboxChange")


@_attrs_define
class SandboxChange:
    """One path of git status, relative to the repository root.

    Attributes:
        index (ChangeKind):
        path (str):
        worktree (ChangeKind):
        renamed_from (None | str | Unset): Source path when a side is a rename or copy.
    """

    index: ChangeKind
    path: str
    worktree: ChangeKind
    renamed_from: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        index = self.index.value

        path = self.path

        worktree = self.worktree.value

        renamed_from: None | str | Unset
        if isinstance(self.renamed_from, Unset):
            renamed_from = UNSET
        else:
            renamed_from = self.renamed_from

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "index": index,
                "path": path,
                "worktree": worktree,
            }
        )
        if renamed_from is not UNSET:
            field_dict["renamed_from"] = renamed_from

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        index = ChangeKind(d.pop("index"))

        path = d.pop("path")

        worktree = ChangeKind(d.pop("worktree"))

        def _parse_renamed_from(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        renamed_from = _parse_renamed_from(d.pop("renamed_from", UNSET))

        sandbox_change = cls(
            index=index,
            path=path,
            worktree=worktree,
            renamed_from=renamed_from,
        )

        sandbox_change.additional_properties = d
        return sandbox_change

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
