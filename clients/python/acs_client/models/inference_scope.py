from enum import StrEnum


class InferenceScope(StrEnum):
    CREDENTIAL = "credential"
    GRANT = "grant"
    MISSING = "missing"
    NONE = "none"
    PLATFORM = "platform"
    TENANT_SECRET = "tenant_secret"

    def __str__(self) -> str:
        return str(self.value)
