//! A small seccomp filter handed to bubblewrap (`--seccomp FD`): it refuses, with `EPERM`, the
//! system calls that inspect or alter other processes (`ptrace`, `process_vm_readv`/`writev`)
//! and a few kernel interfaces a sandboxed command never needs (`perf_event_open`, `bpf`,
//! `userfaultfd`, the key-management calls, `io_uring`), and every system call of a foreign
//! ABI (32-bit or x32 entry points), which a deny-list keyed on native numbers would miss.

/// One classic-BPF instruction (`struct sock_filter`).
#[derive(Debug, Clone, Copy)]
struct Insn {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const RET_K: u16 = 0x06; // BPF_RET | BPF_K
const RET_ALLOW: u32 = 0x7fff_0000; // SECCOMP_RET_ALLOW
const RET_EPERM: u32 = 0x0005_0000 | libc::EPERM as u32; // SECCOMP_RET_ERRNO | EPERM
const OFFSET_NR: u32 = 0; // seccomp_data.nr
const OFFSET_ARCH: u32 = 4; // seccomp_data.arch

#[cfg(target_arch = "x86_64")]
const NATIVE_ARCH: u32 = 0xc000_003e; // AUDIT_ARCH_X86_64
#[cfg(target_arch = "aarch64")]
const NATIVE_ARCH: u32 = 0xc000_00b7; // AUDIT_ARCH_AARCH64

/// x32 system calls share the x86_64 audit arch and set this bit in the number.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: Option<u32> = Some(0x4000_0000);
#[cfg(not(target_arch = "x86_64"))]
const X32_SYSCALL_BIT: Option<u32> = None;

fn denied_syscalls() -> Vec<u32> {
    [
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_perf_event_open,
        libc::SYS_bpf,
        libc::SYS_userfaultfd,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ]
    .into_iter()
    .map(|nr| nr as u32)
    .collect()
}

/// The filter as the raw bytes of a `struct sock_filter` array, as `bwrap --seccomp` reads it.
pub(crate) fn filter_bytes() -> Vec<u8> {
    let mut checks: Vec<(u16, u32)> = Vec::new();
    if let Some(bit) = X32_SYSCALL_BIT {
        checks.push((JGE_K, bit));
    }
    checks.extend(denied_syscalls().into_iter().map(|nr| (JEQ_K, nr)));
    let n = checks.len();
    let mut prog = vec![
        Insn { code: LD_W_ABS, jt: 0, jf: 0, k: OFFSET_ARCH },
        Insn { code: JEQ_K, jt: 1, jf: 0, k: NATIVE_ARCH },
        Insn { code: RET_K, jt: 0, jf: 0, k: RET_EPERM },
        Insn { code: LD_W_ABS, jt: 0, jf: 0, k: OFFSET_NR },
    ];
    for (i, (code, k)) in checks.into_iter().enumerate() {
        // On a match jump over the remaining checks and the ALLOW to the final EPERM.
        let skip = u8::try_from(n - i).unwrap_or(u8::MAX);
        prog.push(Insn { code, jt: skip, jf: 0, k });
    }
    prog.push(Insn { code: RET_K, jt: 0, jf: 0, k: RET_ALLOW });
    prog.push(Insn { code: RET_K, jt: 0, jf: 0, k: RET_EPERM });
    let mut bytes = Vec::with_capacity(prog.len() * 8);
    for insn in prog {
        bytes.extend_from_slice(&insn.code.to_ne_bytes());
        bytes.push(insn.jt);
        bytes.push(insn.jf);
        bytes.extend_from_slice(&insn.k.to_ne_bytes());
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_match_lands_on_the_final_eperm() {
        let bytes = filter_bytes();
        let insns: Vec<(u16, u8, u32)> =
            bytes.chunks(8).map(|c| (u16::from_ne_bytes([c[0], c[1]]), c[2], u32::from_ne_bytes([c[4], c[5], c[6], c[7]]))).collect();
        let last = insns.len() - 1;
        assert_eq!(insns[last], (RET_K, 0, RET_EPERM));
        assert_eq!(insns[last - 1], (RET_K, 0, RET_ALLOW));
        for (i, (code, jt, _)) in insns.iter().enumerate().skip(4).take(last - 5) {
            assert!(*code == JEQ_K || *code == JGE_K);
            assert_eq!(i + 1 + *jt as usize, last, "instruction {i}");
        }
    }
}
