//! The machines on this host seen from outside any server, for operators:
//! `acs sandboxes list` and `acs sandboxes reap`. Machines outlive their
//! server on purpose (the next one reattaches), so a server that stops for
//! good, or a test harness that crashed, leaves them running; this finds
//! them by their directories under `sandbox.dir` and judges each against
//! the database.

use std::path::{Path, PathBuf};

use uuid::Uuid;

use super::model::SandboxState;
use crate::config::SandboxConfig;
use crate::db::Db;
use crate::provider::local::{self, Inspected};

/// What becomes of a machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// A live server serves it.
    Served,
    /// Its server is gone, but a live server on this host takes it over at its next heartbeat.
    Adoptable,
    /// Its server is gone and no live server on this host will take it: stopped (disk kept).
    Abandoned,
    /// Nothing of it runs or is held (parked, failed, or already stopped): left for a later server.
    Idle,
    /// No database row names it, or its row is terminated: stopped and removed.
    Stray,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Served => "served",
            Verdict::Adoptable => "adoptable",
            Verdict::Abandoned => "abandoned",
            Verdict::Idle => "idle",
            Verdict::Stray => "stray",
        }
    }
}

#[derive(Debug, Clone)]
pub struct HostMachine {
    pub machine: Inspected,
    /// The row's status and owner; None when no row names the machine.
    pub row: Option<(SandboxState, Option<Uuid>)>,
    pub verdict: Verdict,
}

struct Dirs {
    machines: PathBuf,
    run: PathBuf,
    lease: PathBuf,
}

fn dirs(cfg: &SandboxConfig) -> Dirs {
    Dirs {
        machines: Path::new(&cfg.dir).join("machines"),
        run: PathBuf::from(&cfg.run_dir),
        lease: PathBuf::from(&cfg.lease_dir),
    }
}

/// The verdict for one machine: the rules above, as a plain function.
/// `active`: its processes run, or its mount or network is still held.
pub fn judge(active: bool, row: Option<(SandboxState, Option<Uuid>)>, alive: &[(Uuid, bool)]) -> Verdict {
    let Some((status, owner)) = row else { return Verdict::Stray };
    let owned = matches!(status, SandboxState::Pending | SandboxState::Starting | SandboxState::Ready);
    match status {
        SandboxState::Terminated => Verdict::Stray,
        _ if owned && owner.is_some_and(|o| alive.iter().any(|(id, _)| *id == o)) => Verdict::Served,
        _ if owned && alive.iter().any(|(_, here)| *here) => Verdict::Adoptable,
        // Owned by a gone server, or parked or failed yet still running: nobody but this stops it.
        _ if active => Verdict::Abandoned,
        _ => Verdict::Idle,
    }
}

/// Every machine under `sandbox.dir` with its verdict.
pub async fn survey(db: &Db, cfg: &SandboxConfig) -> Result<Vec<HostMachine>, sqlx::Error> {
    let d = dirs(cfg);
    let alive = crate::replicas::alive(db).await?;
    let mut out = Vec::new();
    for machine in local::inspect_all(&d.machines, &d.run) {
        let row = super::store::status_and_owner(db, machine.id).await?;
        let verdict = judge(machine.running || machine.held, row, &alive);
        out.push(HostMachine { machine, row, verdict });
    }
    Ok(out)
}

/// What `reap` did (or, dry, would do) to one machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reaped {
    Stopped,
    Removed,
}

/// Stops abandoned machines (their processes, network, cgroups and mount;
/// the disk stays for a later server) and removes stray ones whole; drops
/// the spare disks and networks made ahead for machines not yet asked for.
pub async fn reap(db: &Db, cfg: &SandboxConfig, dry_run: bool) -> Result<Vec<(HostMachine, Reaped)>, String> {
    let machines = survey(db, cfg).await.map_err(|e| format!("reading the database: {e}"))?;
    let d = dirs(cfg);
    let mut done = Vec::new();
    for m in machines {
        let action = match m.verdict {
            Verdict::Abandoned => Reaped::Stopped,
            Verdict::Stray => Reaped::Removed,
            Verdict::Served | Verdict::Adoptable | Verdict::Idle => continue,
        };
        if !dry_run {
            let (machines, run, lease, id) = (d.machines.clone(), d.run.clone(), d.lease.clone(), m.machine.id);
            tokio::task::spawn_blocking(move || match action {
                Reaped::Stopped => {
                    local::stop_blocking(&machines, &run, &lease, id);
                    Ok(())
                }
                Reaped::Removed => local::destroy_blocking(&machines, &run, &lease, id),
            })
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("machine {}: {e}", m.machine.id))?;
        }
        done.push((m, action));
    }
    if !dry_run {
        // Spares belong to no machine and to no row: a server that is gone leaves them behind.
        // A live server keeps its spare networks; its claims mount images for the disks dropped.
        let (machines, lease) = (d.machines.clone(), d.lease.clone());
        tokio::task::spawn_blocking(move || local::drop_spares_blocking(&machines, &lease))
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_follow_the_row_and_the_live_servers() {
        let (mine, other) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let here = [(mine, true)];
        let elsewhere = [(other, false)];
        assert_eq!(judge(true, None, &here), Verdict::Stray);
        assert_eq!(judge(false, None, &[]), Verdict::Stray);
        assert_eq!(judge(false, Some((SandboxState::Terminated, None)), &here), Verdict::Stray);
        assert_eq!(judge(true, Some((SandboxState::Ready, Some(mine))), &here), Verdict::Served);
        // Its owner is gone: a live server of this host adopts it; one of another host cannot.
        assert_eq!(judge(true, Some((SandboxState::Ready, Some(other))), &here), Verdict::Adoptable);
        assert_eq!(judge(true, Some((SandboxState::Ready, Some(mine))), &elsewhere), Verdict::Abandoned);
        assert_eq!(judge(true, Some((SandboxState::Starting, None)), &[]), Verdict::Abandoned);
        // Once stopped, there is nothing more to do.
        assert_eq!(judge(false, Some((SandboxState::Ready, Some(mine))), &elsewhere), Verdict::Idle);
        assert_eq!(judge(false, Some((SandboxState::Suspended, None)), &[]), Verdict::Idle);
        assert_eq!(judge(true, Some((SandboxState::Failed, None)), &here), Verdict::Abandoned);
    }
}
