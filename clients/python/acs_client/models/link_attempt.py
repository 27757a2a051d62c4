from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.link_attempt_kind import LinkAttemptKind
from ..models.link_attempt_state import LinkAttemptState
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.link_failure import LinkFailure


T = TypeVar("T", bound="LinkAttempt")


@_attrs_define
class LinkAttempt:
    """A device-code sign-in (spec 2.5).

    Attributes:
        auth_unreachable (bool): True while the last poll of the vendor's sign-in service went unanswered.
        expires_at (datetime.datetime):
        id (UUID):
        inserted_at (datetime.datetime):
        kind (LinkAttemptKind): `link` (a new subscription) or `reconnect`.
        poll_interval (int): Seconds between reads of this attempt.
        state (LinkAttemptState): spec 3.1: `pending`, then for good `completed`, `cancelled`, `expired` or `failed`.
        updated_at (datetime.datetime):
        failure (LinkFailure | None | Unset):
        grant_id (None | Unset | UUID):
        name (None | str | Unset):
        result_grant_id (None | Unset | UUID):
        user_code (None | str | Unset): The code the person enters at `verification_url`; null once the attempt ended.
        verification_url (None | str | Unset):
    """

    auth_unreachable: bool
    expires_at: datetime.datetime
    id: UUID
    inserted_at: datetime.datetime
    kind: LinkAttemptKind
    poll_interval: int
    state: LinkAttemptState
    updated_at: datetime.datetime
    failure: LinkFailure | None | Unset = UNSET
    grant_id: None | Unset | UUID = UNSET
    name: None | str | Unset = UNSET
    result_grant_id: None | Unset | UUID = UNSET
    user_code: None | str | Unset = UNSET
    verification_url: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.link_failure import LinkFailure  # noqa: PLC0415

        auth_unreachable = self.auth_unreachable

        expires_at = self.expires_at.isoformat()

        id = str(self.id)

        inserted_at = self.inserted_at.isoformat()

        kind = self.kind.value

        poll_interval = self.poll_interval

        state = self.state.value

        updated_at = self.updated_at.isoformat()

        failure: dict[str, Any] | None | Unset
        if isinstance(self.failure, Unset):
            failure = UNSET
        elif isinstance(self.failure, LinkFailure):
            failure = self.failure.to_dict()
        else:
            failure = self.failure

        grant_id: None | str | Unset
        if isinstance(self.grant_id, Unset):
            grant_id = UNSET
        elif isinstance(self.grant_id, UUID):
            grant_id = str(self.grant_id)
        else:
            grant_id = self.grant_id

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        result_grant_id: None | str | Unset
        if isinstance(self.result_grant_id, Unset):
            result_grant_id = UNSET
        elif isinstance(self.result_grant_id, UUID):
            result_grant_id = str(self.result_grant_id)
        else:
            result_grant_id = self.result_grant_id

        user_code: None | str | Unset
        if isinstance(self.user_code, Unset):
            user_code = UNSET
        else:
            user_code = self.user_code

        verification_url: None | str | Unset
        if isinstance(self.verification_url, Unset):
            verification_url = UNSET
        else:
            verification_url = self.verification_url

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "auth_unreachable": auth_unreachable,
                "expires_at": expires_at,
                "id": id,
                "inserted_at": inserted_at,
                "kind": kind,
                "poll_interval": poll_interval,
                "state": state,
                "updated_at": updated_at,
            }
        )
        if failure is not UNSET:
            field_dict["failure"] = failure
        if grant_id is not UNSET:
            field_dict["grant_id"] = grant_id
        if name is not UNSET:
            field_dict["name"] = name
        if result_grant_id is not UNSET:
            field_dict["result_grant_id"] = result_grant_id
        if user_code is not UNSET:
            field_dict["user_code"] = user_code
        if verification_url is not UNSET:
            field_dict["verification_url"] = verification_url

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.link_failure import LinkFailure  # noqa: PLC0415

        d = dict(src_dict)
        auth_unreachable = d.pop("auth_unreachable")

        expires_at = datetime.datetime.fromisoformat(d.pop("expires_at"))

        id = UUID(d.pop("id"))

        inserted_at = datetime.datetime.fromisoformat(d.pop("inserted_at"))

        kind = LinkAttemptKind(d.pop("kind"))

        poll_interval = d.pop("poll_interval")

        state = LinkAttemptState(d.pop("state"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        def _parse_failure(data: object) -> LinkFailure | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                failure_type_0 = LinkFailure.from_dict(data)

                return failure_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(LinkFailure | None | Unset, data)

        failure = _parse_failure(d.pop("failure", UNSET))

        def _parse_grant_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                grant_id_type_0 = UUID(data)

                return grant_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        grant_id = _parse_grant_id(d.pop("grant_id", UNSET))

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        def _parse_result_grant_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                result_grant_id_type_0 = UUID(data)

                return result_grant_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        result_grant_id = _parse_result_grant_id(d.pop("result_grant_id", UNSET))

        def _parse_user_code(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        user_code = _parse_user_code(d.pop("user_code", UNSET))

        def _parse_verification_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        verification_url = _parse_verification_url(d.pop("verification_url", UNSET))

        link_attempt = cls(
            auth_unreachable=auth_unreachable,
            expires_at=expires_at,
            id=id,
            inserted_at=inserted_at,
            kind=kind,
            poll_interval=poll_interval,
            state=state,
            updated_at=updated_at,
            failure=failure,
            grant_id=grant_id,
            name=name,
            result_grant_id=result_grant_id,
            user_code=user_code,
            verification_url=verification_url,
        )

        link_attempt.additional_properties = d
        return link_attempt

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
