from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.me_key import MeKey


T = TypeVar("T", bound="Me")


@_attrs_define
class Me:
    """The caller's identity.

    Attributes:
        brokered (bool): The account's sandboxes egress through the broker (`features.brokerage`).
        connections_enabled (bool): Connection providers are on.
        connections_manageable (bool): Connections are on and this key may manage them.
        email_verified (bool):
        inserted_at (datetime.datetime):
        key (MeKey):
        openai_subscriptions_enabled (bool): Linking openai subscriptions is on.
        user_id (UUID):
        email (None | str | Unset): Null for a claimable principal, an account without email or password
            (docs/claimable.md).
        pending_email (None | str | Unset): An email address waiting for verification before it replaces `email`.
    """

    brokered: bool
    connections_enabled: bool
    connections_manageable: bool
    email_verified: bool
    inserted_at: datetime.datetime
    key: MeKey
    openai_subscriptions_enabled: bool
    user_id: UUID
    email: None | str | Unset = UNSET
    pending_email: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        brokered = self.brokered

        connections_enabled = self.connections_enabled

        connections_manageable = self.connections_manageable

        email_verified = self.email_verified

        inserted_at = self.inserted_at.isoformat()

        key = self.key.to_dict()

        openai_subscriptions_enabled = self.openai_subscriptions_enabled

        user_id = str(self.user_id)

        email: None | str | Unset
        if isinstance(self.email, Unset):
            email = UNSET
        else:
            email = self.email

        pending_email: None | str | Unset
        if isinstance(self.pending_email, Unset):
            pending_email = UNSET
        else:
            pending_email = self.pending_email

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "brokered": brokered,
                "connections_enabled": connections_enabled,
                "connections_manageable": connections_manageable,
                "email_verified": email_verified,
                "inserted_at": inserted_at,
                "key": key,
                "openai_subscriptions_enabled": openai_subscriptions_enabled,
                "user_id": user_id,
            }
        )
        if email is not UNSET:
            field_dict["email"] = email
        if pending_email is not UNSET:
            field_dict["pending_email"] = pending_email

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.me_key import MeKey  # noqa: PLC0415

        d = dict(src_dict)
        brokered = d.pop("brokered")

        connections_enabled = d.pop("connections_enabled")

        connections_manageable = d.pop("connections_manageable")

        email_verified = d.pop("email_verified")

        inserted_at = datetime.datetime.fromisoformat(d.pop("inserted_at"))

        key = MeKey.from_dict(d.pop("key"))

        openai_subscriptions_enabled = d.pop("openai_subscriptions_enabled")

        user_id = UUID(d.pop("user_id"))

        def _parse_email(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        email = _parse_email(d.pop("email", UNSET))

        def _parse_pending_email(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        pending_email = _parse_pending_email(d.pop("pending_email", UNSET))

        me = cls(
            brokered=brokered,
            connections_enabled=connections_enabled,
            connections_manageable=connections_manageable,
            email_verified=email_verified,
            inserted_at=inserted_at,
            key=key,
            openai_subscriptions_enabled=openai_subscriptions_enabled,
            user_id=user_id,
            email=email,
            pending_email=pending_email,
        )

        me.additional_properties = d
        return me

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
