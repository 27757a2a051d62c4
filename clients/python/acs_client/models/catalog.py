from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.catalog_apps import CatalogApps
    from ..models.catalog_models import CatalogModels
    from ..models.catalog_runtime_versions import CatalogRuntimeVersions
    from ..models.first_request import FirstRequest
    from ..models.mcp_server import McpServer
    from ..models.sandbox_providers import SandboxProviders


T = TypeVar("T", bound="Catalog")


@_attrs_define
class Catalog:
    """
    Attributes:
        apps (CatalogApps):
        first_request (FirstRequest):
        mcp_servers (list[McpServer]):
        model_providers (list[str]):
        models (CatalogModels): Runtime -> suggested `provider/model` ids (suggestions only).
        package_managers (list[str]):
        runtime_versions (CatalogRuntimeVersions): Every named runtime: its pinned npm package and the installed
            version.
        runtimes (list[str]): `acp` and the named runtimes installed on this instance.
        sandbox_api_access (list[str]):
        sandbox_providers (SandboxProviders):
    """

    apps: CatalogApps
    first_request: FirstRequest
    mcp_servers: list[McpServer]
    model_providers: list[str]
    models: CatalogModels
    package_managers: list[str]
    runtime_versions: CatalogRuntimeVersions
    runtimes: list[str]
    sandbox_api_access: list[str]
    sandbox_providers: SandboxProviders
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        apps = self.apps.to_dict()

        first_request = self.first_request.to_dict()

        mcp_servers = []
        for mcp_servers_item_data in self.mcp_servers:
            mcp_servers_item = mcp_servers_item_data.to_dict()
            mcp_servers.append(mcp_servers_item)

        model_providers = self.model_providers

        models = self.models.to_dict()

        package_managers = self.package_managers

        runtime_versions = self.runtime_versions.to_dict()

        runtimes = self.runtimes

        sandbox_api_access = self.sandbox_api_access

        sandbox_providers = self.sandbox_providers.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "apps": apps,
                "first_request": first_request,
                "mcp_servers": mcp_servers,
                "model_providers": model_providers,
                "models": models,
                "package_managers": package_managers,
                "runtime_versions": runtime_versions,
                "runtimes": runtimes,
                "sandbox_api_access": sandbox_api_access,
                "sandbox_providers": sandbox_providers,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.catalog_apps import CatalogApps  # noqa: PLC0415
        from ..models.catalog_models import CatalogModels  # noqa: PLC0415
        from ..models.catalog_runtime_versions import CatalogRuntimeVersions  # noqa: PLC0415
        from ..models.first_request import FirstRequest  # noqa: PLC0415
        from ..models.mcp_server import McpServer  # noqa: PLC0415
        from ..models.sandbox_providers import SandboxProviders  # noqa: PLC0415

        d = dict(src_dict)
        apps = CatalogApps.from_dict(d.pop("apps"))

        first_request = FirstRequest.from_dict(d.pop("first_request"))

        mcp_servers = []
        _mcp_servers = d.pop("mcp_servers")
        for mcp_servers_item_data in _mcp_servers:
            mcp_servers_item = McpServer.from_dict(mcp_servers_item_data)

            mcp_servers.append(mcp_servers_item)

        model_providers = cast(list[str], d.pop("model_providers"))

        models = CatalogModels.from_dict(d.pop("models"))

        package_managers = cast(list[str], d.pop("package_managers"))

        runtime_versions = CatalogRuntimeVersions.from_dict(d.pop("runtime_versions"))

        runtimes = cast(list[str], d.pop("runtimes"))

        sandbox_api_access = cast(list[str], d.pop("sandbox_api_access"))

        sandbox_providers = SandboxProviders.from_dict(d.pop("sandbox_providers"))

        catalog = cls(
            apps=apps,
            first_request=first_request,
            mcp_servers=mcp_servers,
            model_providers=model_providers,
            models=models,
            package_managers=package_managers,
            runtime_versions=runtime_versions,
            runtimes=runtimes,
            sandbox_api_access=sandbox_api_access,
            sandbox_providers=sandbox_providers,
        )

        catalog.additional_properties = d
        return catalog

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
