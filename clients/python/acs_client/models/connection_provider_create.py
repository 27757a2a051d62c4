from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.token_auth_method import TokenAuthMethod
from ..types import UNSET, Unset

T = TypeVar("T", bound="ConnectionProviderCreate")


@_attrs_define
class ConnectionProviderCreate:
    """
    Attributes:
        client_id (str):
        client_secret (str): Stored sealed; never returned.
        hosts (list[str]): Host patterns (exact or `*.`-prefixed) its tokens may be sent to; at least one.
        name (str):
        slug (str): Lowercase letters, digits and `-`, 1 to 63 characters.
        authorization_endpoint (None | str | Unset):
        issuer (None | str | Unset): The authorization server's issuer; discovery reads its metadata.
        revocation_endpoint (None | str | Unset):
        scopes (list[str] | Unset):
        token_endpoint (None | str | Unset):
        token_endpoint_auth_method (None | TokenAuthMethod | Unset):
    """

    client_id: str
    client_secret: str
    hosts: list[str]
    name: str
    slug: str
    authorization_endpoint: None | str | Unset = UNSET
    issuer: None | str | Unset = UNSET
    revocation_endpoint: None | str | Unset = UNSET
    scopes: list[str] | Unset = UNSET
    token_endpoint: None | str | Unset = UNSET
    token_endpoint_auth_method: None | TokenAuthMethod | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        client_id = self.client_id

        client_secret = self.client_secret

        hosts = self.hosts

        name = self.name

        slug = self.slug

        authorization_endpoint: None | str | Unset
        if isinstance(self.authorization_endpoint, Unset):
            authorization_endpoint = UNSET
        else:
            authorization_endpoint = self.authorization_endpoint

        issuer: None | str | Unset
        if isinstance(self.issuer, Unset):
            issuer = UNSET
        else:
            issuer = self.issuer

        revocation_endpoint: None | str | Unset
        if isinstance(self.revocation_endpoint, Unset):
            revocation_endpoint = UNSET
        else:
            revocation_endpoint = self.revocation_endpoint

        scopes: list[str] | Unset = UNSET
        if not isinstance(self.scopes, Unset):
            scopes = self.scopes

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

        field_dict.update(
            {
                "client_id": client_id,
                "client_secret": client_secret,
                "hosts": hosts,
                "name": name,
                "slug": slug,
            }
        )
        if authorization_endpoint is not UNSET:
            field_dict["authorization_endpoint"] = authorization_endpoint
        if issuer is not UNSET:
            field_dict["issuer"] = issuer
        if revocation_endpoint is not UNSET:
            field_dict["revocation_endpoint"] = revocation_endpoint
        if scopes is not UNSET:
            field_dict["scopes"] = scopes
        if token_endpoint is not UNSET:
            field_dict["token_endpoint"] = token_endpoint
        if token_endpoint_auth_method is not UNSET:
            field_dict["token_endpoint_auth_method"] = token_endpoint_auth_method

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        client_id = d.pop("client_id")

        client_secret = d.pop("client_secret")

        hosts = cast(list[str], d.pop("hosts"))

        name = d.pop("name")

        slug = d.pop("slug")

        def _parse_authorization_endpoint(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        authorization_endpoint = _parse_authorization_endpoint(d.pop("authorization_endpoint", UNSET))

        def _parse_issuer(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        issuer = _parse_issuer(d.pop("issuer", UNSET))

        def _parse_revocation_endpoint(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        revocation_endpoint = _parse_revocation_endpoint(d.pop("revocation_endpoint", UNSET))

        scopes = cast(list[str], d.pop("scopes", UNSET))

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

        connection_provider_create = cls(
            client_id=client_id,
            client_secret=client_secret,
            hosts=hosts,
            name=name,
            slug=slug,
            authorization_endpoint=authorization_endpoint,
            issuer=issuer,
            revocation_endpoint=revocation_endpoint,
            scopes=scopes,
            token_endpoint=token_endpoint,
            token_endpoint_auth_method=token_endpoint_auth_method,
        )

        return connection_provider_create
