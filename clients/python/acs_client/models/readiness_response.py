from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.readiness_status import ReadinessStatus

if TYPE_CHECKING:
    from ..models.readiness_response_checks import ReadinessResponseChecks


T = TypeVar("T", bound="ReadinessResponse")


@_attrs_define
class ReadinessResponse:
    """
    Attributes:
        checks (ReadinessResponseChecks): Dependency -> `ok` or `error`.
        status (ReadinessStatus): `ok` when every check passes, else `error`.
    """

    checks: ReadinessResponseChecks
    status: ReadinessStatus
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        checks = self.checks.to_dict()

        status = self.status.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "checks": checks,
                "status": status,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.readiness_response_checks import ReadinessResponseChecks  # noqa: PLC0415

        d = dict(src_dict)
        checks = ReadinessResponseChecks.from_dict(d.pop("checks"))

        status = ReadinessStatus(d.pop("status"))

        readiness_response = cls(
            checks=checks,
            status=status,
        )

        readiness_response.additional_properties = d
        return readiness_response

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
