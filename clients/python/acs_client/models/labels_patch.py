from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.labels_patch_labels import LabelsPatchLabels


T = TypeVar("T", bound="LabelsPatch")


@_attrs_define
class LabelsPatch:
    """Body of `PATCH /api/conversations/{id}/labels`: a null value removes the key; keys not named stay.

    Attributes:
        labels (LabelsPatchLabels):
    """

    labels: LabelsPatchLabels
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        labels = self.labels.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "labels": labels,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.labels_patch_labels import LabelsPatchLabels  # noqa: PLC0415

        d = dict(src_dict)
        labels = LabelsPatchLabels.from_dict(d.pop("labels"))

        labels_patch = cls(
            labels=labels,
        )

        labels_patch.additional_properties = d
        return labels_patch

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
