//! The seccomp filter every machine runs under: a deny list in the spirit
//! of Docker's default profile and the Codex and Anthropic sandbox runtimes.
//!
//! Everything a development machine needs stays allowed (processes,
//! threads, files, sockets, ptrace of its own processes for debuggers);
//! what is refused is the kernel surface a machine has no use for and that
//! escapes are made of: new namespaces (user namespaces above all), mounts,
//! the keyring, eBPF, perf events, io_uring, module and kexec loading, clock
//! and swap changes, file-handle opens. Refused calls fail with `EPERM`
//! (`ENOSYS` for `clone3` and io_uring, which libc and libuv then treat as
//! "not supported" and fall back from), never by killing the process.
//!
//! bwrap loads the program (`--seccomp FD`) as the last step before it
//! executes the supervisor, so bwrap's own setup is unaffected and every
//! process of the machine inherits it. The program is plain classic BPF,
//! assembled here: a list of comparisons whose verdict the kernel caches per
//! syscall number, so no filter runs for an allowed call. What remains is
//! the slower system-call entry of a filtered process: about a tenth more
//! time for `git status` over 20,000 files (`bench/run`).

/// One classic BPF instruction (`struct sock_filter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct Insn {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const JGE_K: u16 = 0x35;
const JSET_K: u16 = 0x45;
const RET_K: u16 = 0x06;

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_ERRNO: u32 = 0x0005_0000;
const RET_KILL_PROCESS: u32 = 0x8000_0000;

/// Offsets in `struct seccomp_data`.
const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
/// The low 32 bits of the first argument (little-endian).
const OFF_ARG0_LO: u32 = 16;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xc000_003e;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xc000_00b7;

/// x32 system calls carry this bit on x86_64: refused whole, or each
/// refusal below would have a second number that bypasses it.
#[cfg(target_arch = "x86_64")]
const X32_BIT: u32 = 0x4000_0000;

/// `clone`/`unshare` flags that make a new namespace.
const NAMESPACE_FLAGS: u32 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWCGROUP
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET
    | 0x0000_0080/* CLONE_NEWTIME */) as u32;

/// A system call's number and its `libc` constant's name (`SYS_<name>`),
/// for the container provider's profile, which names calls.
type Call = (libc::c_long, &'static str);

macro_rules! calls {
    ($($(#[$attr:meta])* $name:ident),* $(,)?) => {
        &[$($(#[$attr])* (libc::$name, stringify!($name))),*]
    };
}

/// Refused with `EPERM`.
const DENIED: &[Call] = calls![
    // Mounts and namespaces other than through clone/unshare.
    SYS_mount,
    SYS_umount2,
    SYS_pivot_root,
    SYS_setns,
    SYS_open_tree,
    SYS_move_mount,
    SYS_fsopen,
    SYS_fsconfig,
    SYS_fsmount,
    SYS_fspick,
    SYS_mount_setattr,
    // The kernel keyring, eBPF, perf events, userfaultfd: large, often-exploited surfaces.
    SYS_add_key,
    SYS_request_key,
    SYS_keyctl,
    SYS_bpf,
    SYS_perf_event_open,
    SYS_userfaultfd,
    SYS_fanotify_init,
    // Loading code into the kernel or replacing it.
    SYS_init_module,
    SYS_finit_module,
    SYS_delete_module,
    SYS_kexec_load,
    SYS_kexec_file_load,
    // Host-wide state.
    SYS_reboot,
    SYS_swapon,
    SYS_swapoff,
    SYS_acct,
    SYS_syslog,
    SYS_settimeofday,
    SYS_clock_settime,
    SYS_clock_adjtime,
    SYS_quotactl,
    SYS_quotactl_fd,
    // Opening files by handle walks past the mount namespace (the "shocker" escape).
    SYS_open_by_handle_at,
    SYS_name_to_handle_at,
    SYS_lookup_dcookie,
    SYS_vhangup,
    #[cfg(target_arch = "x86_64")]
    SYS_iopl,
    #[cfg(target_arch = "x86_64")]
    SYS_ioperm,
    #[cfg(target_arch = "x86_64")]
    SYS_uselib,
    #[cfg(target_arch = "x86_64")]
    SYS_ustat,
    #[cfg(target_arch = "x86_64")]
    SYS_sysfs,
    #[cfg(target_arch = "x86_64")]
    SYS__sysctl,
    #[cfg(target_arch = "x86_64")]
    SYS_nfsservctl,
];

/// Refused with `ENOSYS`: callers fall back (glibc from `clone3` to
/// `clone`, whose flags the filter can read; libuv from io_uring to threads).
const UNSUPPORTED: &[Call] = calls![SYS_clone3, SYS_io_uring_setup, SYS_io_uring_enter, SYS_io_uring_register];

/// Calls refused when their first argument asks for a new namespace.
const NAMESPACING: &[Call] = calls![SYS_clone, SYS_unshare];

/// A jump target, resolved when the program is assembled.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Label {
    Eperm,
    Enosys,
    Namespaces,
}

enum Op {
    Insn(Insn),
    /// `jeq k` to a label, falling through otherwise.
    JeqTo(u32, Label),
    #[cfg(target_arch = "x86_64")]
    JgeTo(u32, Label),
    /// `jset k` to a label, falling through otherwise.
    JsetTo(u32, Label),
    Mark(Label),
}

fn ld(offset: u32) -> Op {
    Op::Insn(Insn { code: LD_W_ABS, jt: 0, jf: 0, k: offset })
}

fn ret(k: u32) -> Op {
    Op::Insn(Insn { code: RET_K, jt: 0, jf: 0, k })
}

/// The filter program.
pub fn program() -> Vec<Insn> {
    let mut ops = vec![
        ld(OFF_ARCH),
        // Another architecture's numbers mean other calls: never run them.
        Op::Insn(Insn { code: JEQ_K, jt: 1, jf: 0, k: AUDIT_ARCH }),
        ret(RET_KILL_PROCESS),
        ld(OFF_NR),
    ];
    #[cfg(target_arch = "x86_64")]
    ops.push(Op::JgeTo(X32_BIT, Label::Enosys));
    ops.extend(UNSUPPORTED.iter().map(|(nr, _)| Op::JeqTo(*nr as u32, Label::Enosys)));
    ops.extend(NAMESPACING.iter().map(|(nr, _)| Op::JeqTo(*nr as u32, Label::Namespaces)));
    ops.extend(DENIED.iter().map(|(nr, _)| Op::JeqTo(*nr as u32, Label::Eperm)));
    ops.push(ret(RET_ALLOW));
    ops.push(Op::Mark(Label::Namespaces));
    ops.push(ld(OFF_ARG0_LO));
    ops.push(Op::JsetTo(NAMESPACE_FLAGS, Label::Eperm));
    ops.push(ret(RET_ALLOW));
    ops.push(Op::Mark(Label::Eperm));
    ops.push(ret(RET_ERRNO | libc::EPERM as u32));
    ops.push(Op::Mark(Label::Enosys));
    ops.push(ret(RET_ERRNO | libc::ENOSYS as u32));
    assemble(&ops)
}

/// Resolves labels into relative jumps (classic BPF jumps forward only, at
/// most 255 instructions: the list above is far shorter).
fn assemble(ops: &[Op]) -> Vec<Insn> {
    let mut at = Vec::new();
    let mut pc = 0usize;
    for op in ops {
        match op {
            Op::Mark(label) => at.push((*label, pc)),
            _ => pc += 1,
        }
    }
    let target = |label: Label| at.iter().find(|(l, _)| *l == label).map(|(_, pc)| *pc).expect("label marked");
    let jump = |from: usize, label: Label| -> u8 {
        u8::try_from(target(label) - from - 1).expect("seccomp jump within 255 instructions")
    };
    let mut out = Vec::with_capacity(pc);
    for op in ops {
        let here = out.len();
        match *op {
            Op::Insn(insn) => out.push(insn),
            Op::JeqTo(k, label) => out.push(Insn { code: JEQ_K, jt: jump(here, label), jf: 0, k }),
            #[cfg(target_arch = "x86_64")]
            Op::JgeTo(k, label) => out.push(Insn { code: JGE_K, jt: jump(here, label), jf: 0, k }),
            Op::JsetTo(k, label) => out.push(Insn { code: JSET_K, jt: jump(here, label), jf: 0, k }),
            Op::Mark(_) => {}
        }
    }
    out
}

/// The program as the bytes bwrap reads from its `--seccomp` descriptor.
pub fn program_bytes() -> Vec<u8> {
    program()
        .iter()
        .flat_map(|i| {
            let mut b = Vec::with_capacity(8);
            b.extend_from_slice(&i.code.to_ne_bytes());
            b.push(i.jt);
            b.push(i.jf);
            b.extend_from_slice(&i.k.to_ne_bytes());
            b
        })
        .collect()
}

/// The same refusals as an OCI seccomp profile (what container engines
/// take): every call allowed but these, refused with the same errors; a
/// namespace flag refused one rule per flag, as a profile's argument test
/// is a masked equality. What it cannot say: x32 numbers, which the
/// runtime kills as a foreign architecture's instead of answering `ENOSYS`.
pub fn oci_profile() -> serde_json::Value {
    let names = |list: &[Call]| -> Vec<&'static str> {
        list.iter().map(|(_, name)| name.strip_prefix("SYS_").unwrap_or(name)).collect()
    };
    let mut rules = vec![
        serde_json::json!({"names": names(DENIED), "action": "SCMP_ACT_ERRNO", "errnoRet": libc::EPERM}),
        serde_json::json!({"names": names(UNSUPPORTED), "action": "SCMP_ACT_ERRNO", "errnoRet": libc::ENOSYS}),
    ];
    for bit in (0..32).map(|b| 1u32 << b).filter(|b| NAMESPACE_FLAGS & b != 0) {
        rules.push(serde_json::json!({
            "names": names(NAMESPACING),
            "action": "SCMP_ACT_ERRNO",
            "errnoRet": libc::EPERM,
            "args": [{"index": 0, "value": bit, "valueTwo": bit, "op": "SCMP_CMP_MASKED_EQ"}],
        }));
    }
    #[cfg(target_arch = "x86_64")]
    let arch = "SCMP_ARCH_X86_64";
    #[cfg(target_arch = "aarch64")]
    let arch = "SCMP_ARCH_AARCH64";
    serde_json::json!({"defaultAction": "SCMP_ACT_ALLOW", "architectures": [arch], "syscalls": rules})
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the program the way the kernel would, for one call.
    fn verdict(nr: libc::c_long, arg0: u64, arch: u32) -> u32 {
        let prog = program();
        let (mut acc, mut pc) = (0u32, 0usize);
        loop {
            let i = prog[pc];
            match i.code {
                LD_W_ABS => {
                    acc = match i.k {
                        OFF_NR => nr as u32,
                        OFF_ARCH => arch,
                        OFF_ARG0_LO => arg0 as u32,
                        other => panic!("unexpected load at {other}"),
                    };
                    pc += 1;
                }
                JEQ_K | JGE_K | JSET_K => {
                    let taken = match i.code {
                        JEQ_K => acc == i.k,
                        JGE_K => acc >= i.k,
                        _ => acc & i.k != 0,
                    };
                    pc += 1 + usize::from(if taken { i.jt } else { i.jf });
                }
                RET_K => return i.k,
                other => panic!("unknown instruction {other:#x}"),
            }
        }
    }

    fn run(nr: libc::c_long, arg0: u64) -> u32 {
        verdict(nr, arg0, AUDIT_ARCH)
    }

    const EPERM: u32 = RET_ERRNO | libc::EPERM as u32;
    const ENOSYS: u32 = RET_ERRNO | libc::ENOSYS as u32;

    #[test]
    fn ordinary_work_is_allowed() {
        for nr in [
            libc::SYS_read,
            libc::SYS_write,
            libc::SYS_openat,
            libc::SYS_execve,
            libc::SYS_socket,
            libc::SYS_connect,
            libc::SYS_ptrace,
            libc::SYS_prctl,
            libc::SYS_seccomp,
            libc::SYS_landlock_create_ruleset,
        ] {
            assert_eq!(run(nr, 0), RET_ALLOW, "syscall {nr}");
        }
        // fork and thread creation through clone, and unshare of non-namespace state.
        let thread = (libc::CLONE_VM | libc::CLONE_FS | libc::CLONE_FILES | libc::CLONE_THREAD) as u64;
        assert_eq!(run(libc::SYS_clone, thread), RET_ALLOW);
        assert_eq!(run(libc::SYS_clone, libc::SIGCHLD as u64), RET_ALLOW);
        assert_eq!(run(libc::SYS_unshare, libc::CLONE_FILES as u64), RET_ALLOW);
    }

    #[test]
    fn escapes_are_refused() {
        for nr in [libc::SYS_mount, libc::SYS_keyctl, libc::SYS_bpf, libc::SYS_perf_event_open, libc::SYS_setns] {
            assert_eq!(run(nr, 0), EPERM, "syscall {nr}");
        }
        for flag in [libc::CLONE_NEWUSER, libc::CLONE_NEWNS, libc::CLONE_NEWNET, libc::CLONE_NEWPID, 0x80] {
            assert_eq!(run(libc::SYS_unshare, flag as u64), EPERM, "unshare {flag:#x}");
            assert_eq!(run(libc::SYS_clone, (flag | libc::SIGCHLD) as u64), EPERM, "clone {flag:#x}");
        }
        assert_eq!(run(libc::SYS_clone3, 0), ENOSYS);
        assert_eq!(run(libc::SYS_io_uring_setup, 0), ENOSYS);
    }

    #[test]
    fn foreign_architectures_and_x32_numbers_never_run() {
        assert_eq!(verdict(libc::SYS_read, 0, 0x4000_0003), RET_KILL_PROCESS);
        #[cfg(target_arch = "x86_64")]
        assert_eq!(run(libc::SYS_mount | X32_BIT as libc::c_long, 0), ENOSYS);
    }

    #[test]
    fn the_oci_profile_names_the_same_calls() {
        let profile = oci_profile();
        let rules = profile["syscalls"].as_array().unwrap();
        let denied = rules[0]["names"].as_array().unwrap();
        assert_eq!(denied.len(), DENIED.len());
        for name in ["mount", "setns", "keyctl", "bpf", "open_by_handle_at"] {
            assert!(denied.iter().any(|n| n == name), "{name}");
        }
        assert_eq!(rules[1]["errnoRet"], libc::ENOSYS);
        assert!(rules[1]["names"].as_array().unwrap().iter().any(|n| n == "clone3"));
        // One rule per namespace flag: CLONE_NEWUSER among them.
        let user = libc::CLONE_NEWUSER as u32;
        assert!(rules.iter().any(|r| r["args"][0]["value"] == user && r["names"][1] == "unshare"));
        assert_eq!(rules.len(), 2 + NAMESPACE_FLAGS.count_ones() as usize);
    }

    #[test]
    fn bytes_are_eight_per_instruction() {
        assert_eq!(program_bytes().len(), program().len() * 8);
    }
}
