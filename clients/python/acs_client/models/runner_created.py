from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.runner import Runner


T = TypeVar("T", bound="RunnerCreated")


@_attrs_define
class RunnerCreated:
    """A new runner and its token, shown this once.

    Attributes:
        runner (Runner): A sandbox's self-hosted runner (provider `runner` only).
        token (str): `acs runner --token` takes it; only its digest is kept.
    """

    runner: Runner
    token: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        runner = self.runner.to_dict()

        token = self.token

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "runner": runner,
                "token": token,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.runner import Runner  # noqa: PLC0415

        d = dict(src_dict)
        runner = Runner.from_dict(d.pop("runner"))

        token = d.pop("token")

        runner_created = cls(
            runner=runner,
            token=token,
        )

        runner_created.additional_properties = d
        return runner_created

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
