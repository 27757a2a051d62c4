from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.turn_usage_accounting_type_0 import TurnUsageAccountingType0


T = TypeVar("T", bound="TurnUsage")


@_attrs_define
class TurnUsage:
    """Token counts of a turn as the runtime reported them; a count it did not report is null, never zero.

    Attributes:
        accounting (None | TurnUsageAccountingType0 | Unset): Only for qualified reports.
        cache_read (int | None | Unset):
        cache_write (int | None | Unset):
        input_ (int | None | Unset):
        output (int | None | Unset):
    """

    accounting: None | TurnUsageAccountingType0 | Unset = UNSET
    cache_read: int | None | Unset = UNSET
    cache_write: int | None | Unset = UNSET
    input_: int | None | Unset = UNSET
    output: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.turn_usage_accounting_type_0 import TurnUsageAccountingType0  # noqa: PLC0415

        accounting: dict[str, Any] | None | Unset
        if isinstance(self.accounting, Unset):
            accounting = UNSET
        elif isinstance(self.accounting, TurnUsageAccountingType0):
            accounting = self.accounting.to_dict()
        else:
            accounting = self.accounting

        cache_read: int | None | Unset
        if isinstance(self.cache_read, Unset):
            cache_read = UNSET
        else:
            cache_read = self.cache_read

        cache_write: int | None | Unset
        if isinstance(self.cache_write, Unset):
            cache_write = UNSET
        else:
            cache_write = self.cache_write

        input_: int | None | Unset
        if isinstance(self.input_, Unset):
            input_ = UNSET
        else:
            input_ = self.input_

        output: int | None | Unset
        if isinstance(self.output, Unset):
            output = UNSET
        else:
            output = self.output

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if accounting is not UNSET:
            field_dict["accounting"] = accounting
        if cache_read is not UNSET:
            field_dict["cache_read"] = cache_read
        if cache_write is not UNSET:
            field_dict["cache_write"] = cache_write
        if input_ is not UNSET:
            field_dict["input"] = input_
        if output is not UNSET:
            field_dict["output"] = output

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.turn_usage_accounting_type_0 import TurnUsageAccountingType0  # noqa: PLC0415

        d = dict(src_dict)

        def _parse_accounting(data: object) -> None | TurnUsageAccountingType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                accounting_type_0 = TurnUsageAccountingType0.from_dict(data)

                return accounting_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TurnUsageAccountingType0 | Unset, data)

        accounting = _parse_accounting(d.pop("accounting", UNSET))

        def _parse_cache_read(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        cache_read = _parse_cache_read(d.pop("cache_read", UNSET))

        def _parse_cache_write(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        cache_write = _parse_cache_write(d.pop("cache_write", UNSET))

        def _parse_input_(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        input_ = _parse_input_(d.pop("input", UNSET))

        def _parse_output(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        output = _parse_output(d.pop("output", UNSET))

        turn_usage = cls(
            accounting=accounting,
            cache_read=cache_read,
            cache_write=cache_write,
            input_=input_,
            output=output,
        )

        turn_usage.additional_properties = d
        return turn_usage

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
