//! Refusals that the domain decides and that other code acts on: the
//! sandbox queue waits out a ceiling, a busy conversation or a machine still
//! being built; a schedule records "teammate was busy". They are types, so
//! no code tells them apart by an HTTP status or an error string; the API
//! layer (`acs_core::error`) gives each its spec code, status and message
//! in one place.

/// A request the domain turned down for a reason callers act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A turn is running (or a prompt waits) where another cannot start.
    Busy(Busy),
    /// The conversation has ended.
    Ended(Ended),
    /// A concurrency ceiling (spec 4.1 create rule 8).
    Capacity(Capacity),
    /// The machine is still being built.
    Provisioning(Building),
    /// Something the request needs is out of reach for now.
    Unavailable(Unavailable),
    /// A part of a conversation's selection was deleted.
    SelectionDeleted(Deleted),
}

/// What met a running turn; only the message told to the caller differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Busy {
    /// A prompt or a wake.
    Prompt,
    /// A queued start resuming a conversation whose turn runs or whose prompt waits.
    Resume,
    /// A reapply.
    Reapply,
    /// A message to a teammate.
    Teammate,
}

/// What met an ended conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It was terminated.
    Terminated,
    /// A reapply.
    Reapply,
    /// Anything else.
    Other,
}

/// Which ceiling a start met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capacity {
    /// The account's own: it holds `active` machines of `limit`.
    Tenant { active: i64, limit: u32 },
    /// The fleet's: every place of the service is taken.
    Fleet { active: i64, limit: u32 },
}

/// What waited for a machine still being built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Building {
    /// A start that found the agent's persistent machine being built.
    Start,
    /// A reapply.
    Reapply,
}

/// The part of a conversation's selection that was deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deleted {
    Agent,
    Environment,
    Vault,
}

impl Deleted {
    /// Its name in the `field` of the refusal.
    pub fn field(self) -> &'static str {
        match self {
            Deleted::Agent => "agent",
            Deleted::Environment => "environment",
            Deleted::Vault => "vault",
        }
    }
}

/// What is out of reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unavailable {
    /// The database (a dropped connection, a full pool).
    Database,
    /// The sandbox service has not started.
    Sandboxes,
    /// One machine's supervisor did not answer (the detail says how).
    Machine(String),
    /// The egress broker on another host did not answer.
    Broker(BrokerDown),
}

/// How the egress broker failed to answer (`reason` of `broker_unavailable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrokerDown {
    /// Nothing listens at `broker.url`.
    Refused,
    /// It did not answer in time.
    Timeout,
}

impl BrokerDown {
    pub fn reason(self) -> &'static str {
        match self {
            BrokerDown::Refused => "econnrefused",
            BrokerDown::Timeout => "timeout",
        }
    }
}
