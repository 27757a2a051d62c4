from enum import StrEnum


class Runtime(StrEnum):
    ACP = "acp"
    CLAUDE = "claude"
    CODEX = "codex"
    GEMINI = "gemini"
    OPENCODE = "opencode"

    def __str__(self) -> str:
        return str(self.value)
