from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.selection_status import SelectionStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.config_selection_applied import ConfigSelectionApplied
    from ..models.config_selection_requested import ConfigSelectionRequested


T = TypeVar("T", bound="ConfigSelection")


@_attrs_define
class ConfigSelection:
    """A turn's `config_selection`.

    Attributes:
        applied (ConfigSelectionApplied): Option id -> the value the runtime confirmed (sent now, or already in force).
        requested (ConfigSelectionRequested): Option id -> the value asked for (agent, conversation and prompt merged).
        skipped (list[str]): Option ids the runtime does not offer.
        status (SelectionStatus): `applied`, `failed` (a value was refused), or `not_applied` (the model failed first).
        error (None | str | Unset):
    """

    applied: ConfigSelectionApplied
    requested: ConfigSelectionRequested
    skipped: list[str]
    status: SelectionStatus
    error: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        applied = self.applied.to_dict()

        requested = self.requested.to_dict()

        skipped = self.skipped

        status = self.status.value

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "applied": applied,
                "requested": requested,
                "skipped": skipped,
                "status": status,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.config_selection_applied import ConfigSelectionApplied  # noqa: PLC0415
        from ..models.config_selection_requested import ConfigSelectionRequested  # noqa: PLC0415

        d = dict(src_dict)
        applied = ConfigSelectionApplied.from_dict(d.pop("applied"))

        requested = ConfigSelectionRequested.from_dict(d.pop("requested"))

        skipped = cast(list[str], d.pop("skipped"))

        status = SelectionStatus(d.pop("status"))

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        config_selection = cls(
            applied=applied,
            requested=requested,
            skipped=skipped,
            status=status,
            error=error,
        )

        config_selection.additional_properties = d
        return config_selection

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
