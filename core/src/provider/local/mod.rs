//! The `local` provider: bubblewrap namespaces on this host.
//!
//! Each machine is a bwrap process tree (own user, PID, IPC, UTS and mount
//! namespaces) started inside its own network namespace, whose only way out
//! is the egress proxy on the host end of its veth pair. Its first process is
//! `sandboxd`; bwrap is started in its own process group and without
//! `--die-with-parent`, so machines outlive a server restart and the next
//! server reattaches to them. Limits come from a cgroup per machine when the
//! host allows it. See `docs/sandboxes.md`.

pub mod bwrap;
pub mod cgroup;
pub mod checkpoint;
pub mod net;
#[cfg(any())]
mod machine;
