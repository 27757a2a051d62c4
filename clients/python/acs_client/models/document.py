from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.document_spec import DocumentSpec


T = TypeVar("T", bound="Document")


@_attrs_define
class Document:
    """One manifest document.

    Attributes:
        kind (str): `Environment`, `Vault`, `Agent`, `Teammate`, `Schedule` or `Webhook`.
        name (str | Unset): The key of the record (a Webhook is keyed by `spec.url`; its name is optional).
        spec (DocumentSpec | Unset):
    """

    kind: str
    name: str | Unset = UNSET
    spec: DocumentSpec | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        kind = self.kind

        name = self.name

        spec: dict[str, Any] | Unset = UNSET
        if not isinstance(self.spec, Unset):
            spec = self.spec.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "kind": kind,
            }
        )
        if name is not UNSET:
            field_dict["name"] = name
        if spec is not UNSET:
            field_dict["spec"] = spec

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.document_spec import DocumentSpec  # noqa: PLC0415

        d = dict(src_dict)
        kind = d.pop("kind")

        name = d.pop("name", UNSET)

        _spec = d.pop("spec", UNSET)
        spec: DocumentSpec | Unset
        if isinstance(_spec, Unset):
            spec = UNSET
        else:
            spec = DocumentSpec.from_dict(_spec)

        document = cls(
            kind=kind,
            name=name,
            spec=spec,
        )

        return document
