from enum import StrEnum


class ActorType(StrEnum):
    ACCOUNT = "account"
    API_KEY = "api_key"
    BROWSER_SESSION = "browser_session"
    OPERATOR = "operator"
    SERVICE = "service"

    def __str__(self) -> str:
        return str(self.value)
