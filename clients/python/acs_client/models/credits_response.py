from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.credits_ import Credits
    from ..models.page_meta import PageMeta


T = TypeVar("T", bound="CreditsResponse")


@_attrs_define
class CreditsResponse:
    """`{data: Credits, meta}`: `meta` pages the ledger.

    Attributes:
        data (Credits): The account's credits.
        meta (PageMeta): Paging metadata of cursor-paged lists (the `meta` of the spec's list responses).
    """

    data: Credits
    meta: PageMeta
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = self.data.to_dict()

        meta = self.meta.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "data": data,
                "meta": meta,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.credits_ import Credits  # noqa: PLC0415
        from ..models.page_meta import PageMeta  # noqa: PLC0415

        d = dict(src_dict)
        data = Credits.from_dict(d.pop("data"))

        meta = PageMeta.from_dict(d.pop("meta"))

        credits_response = cls(
            data=data,
            meta=meta,
        )

        credits_response.additional_properties = d
        return credits_response

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
