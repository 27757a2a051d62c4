//! Runs the daemon in-process on a temporary socket and talks to it through the client (and raw sockets).

mod exec;
mod files;
mod kept;
mod protocol;
mod support;
