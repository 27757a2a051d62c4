//! Stream signals: which account's list of what changed (`events::signal`
//! sends them and frames them for SSE).

use uuid::Uuid;

/// What changed; also the SSE event name of its frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignalKind {
    Conversations,
    Team,
    Schedule,
}

impl SignalKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SignalKind::Conversations => "conversations",
            SignalKind::Team => "team",
            SignalKind::Schedule => "schedule",
        }
    }

    pub fn parse(s: &str) -> Option<SignalKind> {
        [SignalKind::Conversations, SignalKind::Team, SignalKind::Schedule].into_iter().find(|k| k.as_str() == s)
    }
}

/// One account's list of `kind` changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signal {
    pub account_id: Uuid,
    pub kind: SignalKind,
    /// The machine of the conversation that changed (`conversations` only); `None` when the
    /// change is not one machine's, and then a callback key's stream is not told.
    pub sandbox_id: Option<Uuid>,
}

impl Signal {
    /// Whether a stream of `account` following `kinds` sends this signal; `machine` is the
    /// stream key's machine for a sandbox's callback key.
    pub fn is_for(&self, account: Uuid, machine: Option<Uuid>, kinds: &[SignalKind]) -> bool {
        self.account_id == account && kinds.contains(&self.kind) && machine.is_none_or(|m| self.sandbox_id == Some(m))
    }
}
