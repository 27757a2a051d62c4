//! Black-box tests of the chat-relay extension, on both databases: the
//! identity API and its field rules, the flag, and the harness answering
//! real Nostr clients through a real local relay.

mod common;
mod identities;
mod messages;

// Links the extension, so its registration is in this binary's server.
use acs_ext_chat_relay as _;
