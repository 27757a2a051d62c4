from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.token_auth_method import TokenAuthMethod
from ..types import UNSET, Unset

T = TypeVar("T", bound="ConnectionProviderUpdate")


@_attrs_define
class ConnectionProviderUpdate:
    """Fields not named keep their value; `null` clears an optional address.

    Attributes:
        authorization_endpoint (None | str | Unset):
        client_id (None | str | Unset):
        client_secret (None | str | Unset):
        hosts (list[str] | None | Unset):
        issuer (None | str | Unset):
        name (None | str | Unset):
        revocation_endpoint (None | str | Unset):
        scopes (list[str] | None | Unset):
        slug (None | str | Unset):
        token_endpoint (None | str | Unset):
        token_endpoint_auth_method (None | TokenAuthMethod | Unset):
    """

    authorization_endpoint: None | str | Unset = UNSET
    client_id: None | str | Unset = UNSET
    client_secret: None | str | Unset = UNSET
    hosts: list[str] | None | Unset = UNSET
    issuer: None | str | Unset = UNSET
    name: None | str | Unset = UNSET
    revocation_endpoint: None | str | Unset = UNSET
    scopes: list[str] | None | Unset = UNSET
    slug: None | str | Unset = UNSET
    token_endpoint: None | str | Unset = UNSET
    token_endpoint_auth_method: None | TokenAuthMethod | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        authorization_endpoint: None | str | Unset
        if isinstance(self.authorization_endpoint, Unset):
            authorization_endpoint = UNSET
        else:
            authorization_endpoint = self.authorization_endpoint

        client_id: None | str | Unset
        if isinstance(self.client_id, Unset):
            client_id = UNSET
        else:
            client_id = self.client_id

        client_secret: None | str | Unset
        if isinstance(self.client_secret, Unset):
            client_secret = UNSET
        else:
            client_secret = self.client_secret

        hosts: list[str] | None | Unset
        if isinstance(self.hosts, Unset):
            hosts = UNSET
        elif isinstance(self.hosts, list):
            hosts = self.hosts

        else:
            hosts = self.hosts

        issuer: None | str | Unset
        if isinstance(self.issuer, Unset):
            issuer = UNSET
        else:
            issuer = self.issuer

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        revocation_endpoint: None | str | Unset
        if isinstance(self.revocation_endpoint, Unset):
            revocation_endpoint = UNSET
        else:
            revocation_endpoint = self.revocation_endpoint

        scopes: list[str] | None | Unset
        if isinstance(self.scopes, Unset):
            scopes = UNSET
        elif isinstance(self.scopes, list):
            scopes = self.scopes

        else:
            scopes = self.scopes

        slug: None | str | Unset
        if isinstance(self.slug, Unset):
            slug = UNSET
        else:
            slug = self.slug

        token_endpoint: None | str | Unset
        if isinstance(self.token_endpoint, Unset):
            token_endpoint = UNSET
        else:
            token_endpoint = self.token_endpoint

        token_endpoint_auth_method: None | str | Unset
        if isinstance(self.token_endpoint_auth_method, Unset):
            token_endpoint_auth_method = UNSET
        elif isinstance(self.token_endpoint_auth_method, TokenAuthMethod):
            token_endpoint_auth_method = self.token_endpoint_auth_method.value
        else:
            token_endpoint_auth_method = self.token_endpoint_auth_method

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if authorization_endpoint is not UNSET:
            field_dict["authorization_endpoint"] = authorization_endpoint
        if client_id is not UNSET:
            field_dict["client_id"] = client_id
        if client_secret is not UNSET:
            field_dict["client_secret"] = client_secret
        if hosts is not UNSET:
            field_dict["hosts"] = hosts
        if issuer is not UNSET:
            field_dict["issuer"] = issuer
        if name is not UNSET:
            field_dict["name"] = name
        if revocation_endpoint is not UNSET:
            field_dict["revocation_endpoint"] = revocation_endpoint
        if scopes is not UNSET:
            field_dict["scopes"] = scopes
        if slug is not UNSET:
            field_dict["slug"] = slug
        if token_endpoint is not UNSET:
            field_dict["token_endpoint"] = token_endpoint
        if token_endpoint_auth_method is not UNSET:
            field_dict["token_endpoint_auth_method"] = token_endpoint_auth_method

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_authorization_endpoint(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        authorization_endpoint = _parse_authorization_endpoint(d.pop("authorization_endpoint", UNSET))

        def _parse_client_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        client_id = _parse_client_id(d.pop("client_id", UNSET))

        def _parse_client_secret(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        client_secret = _parse_client_secret(d.pop("client_secret", UNSET))

        def _parse_hosts(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                hosts_type_0 = cast(list[str], data)

                return hosts_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        hosts = _parse_hosts(d.pop("hosts", UNSET))

        def _parse_issuer(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        issuer = _parse_issuer(d.pop("issuer", UNSET))

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        def _parse_revocation_endpoint(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        revocation_endpoint = _parse_revocation_endpoint(d.pop("revocation_endpoint", UNSET))

        def _parse_scopes(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                scopes_type_0 = cast(list[str], data)

                return scopes_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        scopes = _parse_scopes(d.pop("scopes", UNSET))

        def _parse_slug(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        slug = _parse_slug(d.pop("slug", UNSET))

        def _parse_token_endpoint(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        token_endpoint = _parse_token_endpoint(d.pop("token_endpoint", UNSET))

        def _parse_token_endpoint_auth_method(data: object) -> None | TokenAuthMethod | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                token_endpoint_auth_method_type_0 = TokenAuthMethod(data)

                return token_endpoint_auth_method_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TokenAuthMethod | Unset, data)

        token_endpoint_auth_method = _parse_token_endpoint_auth_method(d.pop("token_endpoint_auth_method", UNSET))

        connection_provider_update = cls(
            authorization_endpoint=authorization_endpoint,
            client_id=client_id,
            client_secret=client_secret,
            hosts=hosts,
            issuer=issuer,
            name=name,
            revocation_endpoint=revocation_endpoint,
            scopes=scopes,
            slug=slug,
            token_endpoint=token_endpoint,
            token_endpoint_auth_method=token_endpoint_auth_method,
        )

        return connection_provider_update
