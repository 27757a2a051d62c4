from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.team_message_request_labels_type_0 import TeamMessageRequestLabelsType0


T = TypeVar("T", bound="TeamMessageRequest")


@_attrs_define
class TeamMessageRequest:
    """Body of `POST /api/team/{agent_id}/messages`.

    Attributes:
        client_request_id (None | str | Unset): 1 to 200 characters, no NUL; stored on the turn as sent.
        labels (None | TeamMessageRequestLabelsType0 | Unset): Merged into the receiving conversation before the turn is
            queued (the labels rules).
        prompt (str | Unset): Must contain non-whitespace words.
    """

    client_request_id: None | str | Unset = UNSET
    labels: None | TeamMessageRequestLabelsType0 | Unset = UNSET
    prompt: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.team_message_request_labels_type_0 import TeamMessageRequestLabelsType0  # noqa: PLC0415

        client_request_id: None | str | Unset
        if isinstance(self.client_request_id, Unset):
            client_request_id = UNSET
        else:
            client_request_id = self.client_request_id

        labels: dict[str, Any] | None | Unset
        if isinstance(self.labels, Unset):
            labels = UNSET
        elif isinstance(self.labels, TeamMessageRequestLabelsType0):
            labels = self.labels.to_dict()
        else:
            labels = self.labels

        prompt = self.prompt

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if client_request_id is not UNSET:
            field_dict["client_request_id"] = client_request_id
        if labels is not UNSET:
            field_dict["labels"] = labels
        if prompt is not UNSET:
            field_dict["prompt"] = prompt

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.team_message_request_labels_type_0 import TeamMessageRequestLabelsType0  # noqa: PLC0415

        d = dict(src_dict)

        def _parse_client_request_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        client_request_id = _parse_client_request_id(d.pop("client_request_id", UNSET))

        def _parse_labels(data: object) -> None | TeamMessageRequestLabelsType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                labels_type_0 = TeamMessageRequestLabelsType0.from_dict(data)

                return labels_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TeamMessageRequestLabelsType0 | Unset, data)

        labels = _parse_labels(d.pop("labels", UNSET))

        prompt = d.pop("prompt", UNSET)

        team_message_request = cls(
            client_request_id=client_request_id,
            labels=labels,
            prompt=prompt,
        )

        team_message_request.additional_properties = d
        return team_message_request

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
