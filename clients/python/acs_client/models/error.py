from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.error_errors_type_0 import ErrorErrorsType0


T = TypeVar("T", bound="Error")


@_attrs_define
class Error:
    """The error body, for the OpenAPI document.

    Attributes:
        error (str): The code to branch on (prose for key-authentication refusals, whose code is in `reason`).
        errors (ErrorErrorsType0 | None | Unset): Field name -> messages, beside `validation_failed`.
        message (None | str | Unset):
        reason (None | str | Unset): For key-authentication and scope refusals: `api_key_invalid`, `api_key_expired`,
            `insufficient_scope`.
    """

    error: str
    errors: ErrorErrorsType0 | None | Unset = UNSET
    message: None | str | Unset = UNSET
    reason: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.error_errors_type_0 import ErrorErrorsType0  # noqa: PLC0415

        error = self.error

        errors: dict[str, Any] | None | Unset
        if isinstance(self.errors, Unset):
            errors = UNSET
        elif isinstance(self.errors, ErrorErrorsType0):
            errors = self.errors.to_dict()
        else:
            errors = self.errors

        message: None | str | Unset
        if isinstance(self.message, Unset):
            message = UNSET
        else:
            message = self.message

        reason: None | str | Unset
        if isinstance(self.reason, Unset):
            reason = UNSET
        else:
            reason = self.reason

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "error": error,
            }
        )
        if errors is not UNSET:
            field_dict["errors"] = errors
        if message is not UNSET:
            field_dict["message"] = message
        if reason is not UNSET:
            field_dict["reason"] = reason

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.error_errors_type_0 import ErrorErrorsType0  # noqa: PLC0415

        d = dict(src_dict)
        error = d.pop("error")

        def _parse_errors(data: object) -> ErrorErrorsType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                errors_type_0 = ErrorErrorsType0.from_dict(data)

                return errors_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ErrorErrorsType0 | None | Unset, data)

        errors = _parse_errors(d.pop("errors", UNSET))

        def _parse_message(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        message = _parse_message(d.pop("message", UNSET))

        def _parse_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reason = _parse_reason(d.pop("reason", UNSET))

        error = cls(
            error=error,
            errors=errors,
            message=message,
            reason=reason,
        )

        error.additional_properties = d
        return error

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
