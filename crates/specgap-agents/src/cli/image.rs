//! `cli:` agents in image environments (issue 25 item 3; docs/adapters.md "Image
//! environments").
//!
//! The CLI and its runtime are the harness's own installation, built against the host's libc;
//! nothing is installed into the image at run time. So the agent's sandbox on an image gets,
//! read-only, besides the installation at its own path:
//! * the host's library directory (the one holding the host's dynamic loader, e.g.
//!   `/usr/lib/x86_64-linux-gnu`) at [`HOST_LIB`];
//! * host programs under the host's system directories that an adapter needs (the host's
//!   `node`) at [`HOST_EXE`]`/<name>`;
//! * a directory of small `/bin/sh` wrappers at [`HOST_BIN`], first on `PATH`, one for each
//!   entry program of the adapter: each starts its program through the host's own loader,
//!   `exec /run/specgap/host/lib/ld-linux-x86-64.so.2 --inhibit-cache --library-path … --argv0 …
//!   <program> "$@"`, so the image's libc and loader never load the CLI (a script's
//!   interpreter is started that way, with the script as its argument; a static program is
//!   linked as it is). The harness tools (`specgap-bridge`, `ask_user`, `submit`) get the same
//!   wrappers in their own directory.
//!
//! `--library-path` applies to that one process (its `dlopen`s included) and is not
//! inherited: every program the CLI starts — `sh`, `bash`, the task's tools — is the image's,
//! with the image's libc. The adapter's own directories are not on the `PATH` its commands
//! see, so `python` in a command is the image's, not the agent's virtual environment's.
//!
//! [`check`] says, before anything starts, why an adapter cannot run in an image: the host's
//! loader is not one this module knows or lacks `--argv0` (glibc before 2.33), the image has
//! no `/bin/sh` (the wrappers and the agent server need it), or the image lacks a program the
//! CLI runs its commands with (`bash` for the vendors' CLIs).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use specgap_sandbox::Mount;

use super::adapter::shell_quote;

/// Where the host's runtime appears in the agent's sandbox on an image.
pub const HOST_PREFIX: &str = "/run/specgap/host";
/// The host's library directory (the one holding its dynamic loader).
pub const HOST_LIB: &str = "/run/specgap/host/lib";
/// The wrappers of the adapter's entry programs, first on `PATH`.
pub const HOST_BIN: &str = "/run/specgap/host/bin";
/// Host programs from the host's system directories (the host's `node`).
pub const HOST_EXE: &str = "/run/specgap/host/exe";

/// The dynamic loaders this module knows, by architecture (their standard paths on the host).
const LOADERS: &[&str] = &["/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"];

/// Host directories that the image's own replace inside the sandbox.
const SYSTEM_DIRS: &[&str] = &["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"];

/// The host's dynamic loader and the library directory it lives in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRuntime {
    /// The loader's file name (`ld-linux-x86-64.so.2`).
    loader_name: String,
    /// The host directory holding it (its links followed), mounted at [`HOST_LIB`].
    lib_dir: PathBuf,
}

impl HostRuntime {
    /// The host's loader, found once per process: the first of the known standard paths that
    /// exists, whose `--help` offers `--argv0`.
    ///
    /// # Errors
    /// A message saying what is missing.
    pub fn detect() -> Result<HostRuntime, String> {
        static FOUND: OnceLock<Result<HostRuntime, String>> = OnceLock::new();
        FOUND.get_or_init(find_runtime).clone()
    }

    /// The loader inside the sandbox.
    pub fn loader(&self) -> String {
        format!("{HOST_LIB}/{}", self.loader_name)
    }

    /// The host library directory.
    pub fn lib_dir(&self) -> &Path {
        &self.lib_dir
    }
}

fn find_runtime() -> Result<HostRuntime, String> {
    let Some(standard) = LOADERS.iter().map(Path::new).find(|p| p.exists()) else {
        return Err(format!("the host has none of the dynamic loaders specgap starts a CLI with ({})", LOADERS.join(", ")));
    };
    let real = std::fs::canonicalize(standard).map_err(|e| format!("cannot resolve the host's loader {}: {e}", standard.display()))?;
    let (Some(dir), Some(name)) = (real.parent(), real.file_name()) else {
        return Err(format!("the host's loader {} has no directory", real.display()));
    };
    let help = std::process::Command::new(&real)
        .arg("--help")
        .output()
        .map_err(|e| format!("cannot run the host's loader {}: {e}", real.display()))?;
    if !String::from_utf8_lossy(&help.stdout).contains("--argv0") {
        return Err(format!("the host's loader {} has no --argv0 option (glibc 2.33 or later has it)", real.display()));
    }
    Ok(HostRuntime { loader_name: name.to_string_lossy().into_owned(), lib_dir: dir.to_path_buf() })
}

/// What an adapter needs of an image besides `/bin/sh`, or why it cannot run in one at all.
///
/// # Errors
/// Why the adapter does not run in image environments.
pub fn image_needs(adapter: &str) -> Result<&'static [&'static str], String> {
    match adapter {
        // mini runs each action with `sh -c` (subprocess with shell=True); a template is the
        // user's own and runs under /bin/sh.
        "mini-swe-agent" | "command" => Ok(&[]),
        // Their shell tools run `bash` (Claude Code's Bash tool, codex's `bash -lc`,
        // opencode's bash tool, gemini-cli's shell tool, OpenHands' terminal).
        "claude-code" | "codex" | "opencode" | "gemini-cli" | "openhands" => Ok(&["bash"]),
        other => Err(format!("adapter `{other}` is unknown")),
    }
}

/// Whether `adapter` (its name in `cli:<name>`, e.g. `mini-swe-agent`) can run in the image
/// whose unpacked root filesystem is `rootfs`.
///
/// # Errors
/// The reason, as a phrase to follow "cannot run in the image …: ".
pub fn check(adapter: &str, rootfs: &Path) -> Result<(), String> {
    let needs = image_needs(adapter)?;
    HostRuntime::detect()?;
    if specgap_sandbox::rootfs::find_program(rootfs, "sh").is_none_or(|(inside, _)| inside != Path::new("/bin/sh")) {
        return Err("the image has no /bin/sh, which starts the CLI and the harness tools".into());
    }
    let missing: Vec<&str> = needs.iter().copied().filter(|name| specgap_sandbox::rootfs::find_program(rootfs, name).is_none()).collect();
    if !missing.is_empty() {
        return Err(format!(
            "its shell tool runs {}, which the image lacks (looked in {})",
            missing.join(", "),
            specgap_sandbox::host::SYSTEM_PATH
        ));
    }
    Ok(())
}

/// What one agent sandbox on an image gets (module guide).
#[derive(Debug, Clone)]
pub struct ImageLaunch {
    /// Read-only mounts: the host's libraries, host system programs, the wrappers.
    pub mounts: Vec<Mount>,
}

/// Lays out the wrappers of `programs` (host paths of the adapter's entry programs) in the
/// empty or missing directory `wrappers` (mounted at [`HOST_BIN`]) and returns the mounts.
///
/// # Errors
/// A message naming the file that cannot be read or written.
pub fn prepare(runtime: &HostRuntime, programs: &[PathBuf], wrappers: &Path) -> Result<ImageLaunch, String> {
    let io = |path: &Path, e: std::io::Error| format!("{}: {e}", path.display());
    std::fs::create_dir_all(wrappers).map_err(|e| io(wrappers, e))?;
    let mut mounts = vec![
        Mount { host: runtime.lib_dir.clone(), sandbox: HOST_LIB.into(), writable: false },
        Mount { host: wrappers.to_path_buf(), sandbox: HOST_BIN.into(), writable: false },
    ];
    for program in programs {
        let Some(name) = program.file_name().map(|n| n.to_string_lossy().into_owned()) else { continue };
        let target = wrappers.join(&name);
        if target.exists() {
            continue;
        }
        match launch_of(program).map_err(|e| io(program, e))? {
            Start::Static => {
                // Nothing to load: the program runs as it is, from its own path.
                std::os::unix::fs::symlink(program, &target).map_err(|e| io(&target, e))?;
            }
            Start::Elf => {
                let inside = visible(program, &name, &mut mounts);
                let argv0 = inside.clone();
                write_wrapper(&target, &wrapper(runtime, &lib_path(program), &argv0, &inside, &[]))?;
            }
            Start::Script { interpreter, arg } => {
                let real = std::fs::canonicalize(&interpreter).map_err(|e| io(&interpreter, e))?;
                let interpreter_name = interpreter.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                // Started by the path the script names (a venv's `bin/python` link finds its
                // `pyvenv.cfg` from it), unless that is a host system path the image replaces.
                let inside = if is_system(&interpreter) {
                    visible(&real, &interpreter_name, &mut mounts)
                } else {
                    interpreter.display().to_string()
                };
                let mut args: Vec<String> = arg.into_iter().collect();
                args.push(program.display().to_string());
                write_wrapper(&target, &wrapper(runtime, &lib_path(&real), &inside, &inside, &args))?;
            }
            Start::Unknown => {
                // A script for an interpreter found on PATH (`#!/usr/bin/env node`) or another
                // kind of file: started as it is.
                std::os::unix::fs::symlink(program, &target).map_err(|e| io(&target, e))?;
            }
        }
    }
    Ok(ImageLaunch { mounts })
}

/// Replaces the harness tools' directory entries (`specgap-bridge` and its command links)
/// with wrappers starting the bridge program, renamed `.specgap-bridge`, through the host's
/// loader with the command's name as `argv[0]` (the program dispatches on it).
///
/// # Errors
/// A message naming the file that cannot be changed.
pub fn wrap_bridge_tools(runtime: &HostRuntime, tools_dir: &Path, sandbox_dir: &str) -> Result<(), String> {
    let io = |path: &Path, e: std::io::Error| format!("{}: {e}", path.display());
    let program = tools_dir.join(bridge_program_name());
    let hidden = tools_dir.join(".specgap-bridge");
    std::fs::rename(&program, &hidden).map_err(|e| io(&program, e))?;
    let inside = format!("{sandbox_dir}/.specgap-bridge");
    let mut names = vec![bridge_program_name().to_string()];
    for entry in std::fs::read_dir(tools_dir).map_err(|e| io(tools_dir, e))? {
        let entry = entry.map_err(|e| io(tools_dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().is_ok_and(|t| t.is_symlink()) {
            std::fs::remove_file(entry.path()).map_err(|e| io(&entry.path(), e))?;
            names.push(name);
        }
    }
    for name in names {
        let text = wrapper(runtime, &[], &name, &inside, &[]);
        write_wrapper(&tools_dir.join(&name), &text)?;
    }
    Ok(())
}

fn bridge_program_name() -> &'static str {
    specgap_bridge::install::BRIDGE_PROGRAM
}

/// The wrapper script: the host's loader on `program` (a sandbox path) with `argv0`, the
/// library path `extra` then the host's libraries, `args` before the caller's.
fn wrapper(runtime: &HostRuntime, extra: &[PathBuf], argv0: &str, program: &str, args: &[String]) -> String {
    let mut dirs: Vec<String> = extra.iter().map(|d| d.display().to_string()).collect();
    dirs.push(HOST_LIB.to_string());
    let mut words = vec![
        "exec".to_string(),
        shell_quote(&runtime.loader()),
        "--inhibit-cache".to_string(),
        "--library-path".to_string(),
        shell_quote(&dirs.join(":")),
        "--argv0".to_string(),
        shell_quote(argv0),
        shell_quote(program),
    ];
    words.extend(args.iter().map(|a| shell_quote(a)));
    words.push("\"$@\"".to_string());
    format!("#!/bin/sh\n# specgap: started through the host's loader (cli: agents in image environments)\n{}\n", words.join(" "))
}

fn write_wrapper(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).map_err(|e| format!("{}: {e}", path.display()))
}

/// The sandbox path of host program `real`: its own path, or under [`HOST_EXE`] (mounted
/// there) when it lies in a host system directory the image replaces.
fn visible(real: &Path, name: &str, mounts: &mut Vec<Mount>) -> String {
    if !is_system(real) {
        return real.display().to_string();
    }
    let inside = PathBuf::from(HOST_EXE).join(name);
    if !mounts.iter().any(|m| m.sandbox == inside) {
        mounts.push(Mount { host: real.to_path_buf(), sandbox: inside.clone(), writable: false });
    }
    inside.display().to_string()
}

/// Library directories of `program`'s own installation searched before the host's: `P/lib`
/// for a program at `P/bin/x` outside the system directories (a pyenv Python's
/// `libpython3.11.so`, which `--library-path` would otherwise find in the host's directory
/// first when the host has a Python of the same version).
fn lib_path(program: &Path) -> Vec<PathBuf> {
    let real = std::fs::canonicalize(program).unwrap_or_else(|_| program.to_path_buf());
    let prefix = real.parent().filter(|bin| bin.file_name().is_some_and(|n| n == "bin")).and_then(Path::parent);
    prefix.filter(|p| !is_system(p)).map(|p| p.join("lib")).filter(|lib| lib.is_dir()).into_iter().collect()
}

fn is_system(path: &Path) -> bool {
    SYSTEM_DIRS.iter().any(|dir| path.starts_with(dir))
}

/// Whether `path` lies in one of the host's system directories, which an image replaces.
pub fn is_host_system_path(path: &Path) -> bool {
    is_system(path)
}

/// How a program is started.
#[derive(Debug, PartialEq, Eq)]
enum Start {
    /// An ELF file without an interpreter (static, or static-pie).
    Static,
    /// A dynamically linked ELF file.
    Elf,
    /// A script whose `#!` names an absolute interpreter, with its one optional argument.
    Script { interpreter: PathBuf, arg: Option<String> },
    /// Anything else.
    Unknown,
}

/// Reads what kind of program `path` is (links followed).
fn launch_of(path: &Path) -> std::io::Result<Start> {
    let bytes = read_head(path, 64 * 1024)?;
    if bytes.starts_with(b"\x7fELF") {
        return Ok(if elf_has_interpreter(&bytes) { Start::Elf } else { Start::Static });
    }
    let Some(rest) = bytes.strip_prefix(b"#!") else { return Ok(Start::Unknown) };
    let line = rest.split(|b| *b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut words = line.split_whitespace();
    let Some(interpreter) = words.next().map(PathBuf::from) else { return Ok(Start::Unknown) };
    let arg = words.next().map(str::to_string);
    if !interpreter.is_absolute() || interpreter.ends_with("env") {
        return Ok(Start::Unknown);
    }
    let interpreter_head = read_head(&interpreter, 64 * 1024)?;
    if interpreter_head.starts_with(b"\x7fELF") && elf_has_interpreter(&interpreter_head) {
        Ok(Start::Script { interpreter, arg })
    } else {
        Ok(Start::Unknown)
    }
}

fn read_head(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?.take(limit).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Whether a 64-bit little-endian ELF file (its first bytes) has a `PT_INTERP` program header
/// (is dynamically linked); `false` for what cannot be read from `head`.
fn elf_has_interpreter(head: &[u8]) -> bool {
    const PT_INTERP: u32 = 3;
    let u16_at = |at: usize| head.get(at..at + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u32_at = |at: usize| head.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let u64_at = |at: usize| head.get(at..at + 8).and_then(|b| <[u8; 8]>::try_from(b).ok()).map(u64::from_le_bytes);
    // EI_CLASS 2 (64-bit), EI_DATA 1 (little-endian).
    if head.get(4) != Some(&2) || head.get(5) != Some(&1) {
        return false;
    }
    let (Some(phoff), Some(phentsize), Some(phnum)) = (u64_at(0x20), u16_at(0x36), u16_at(0x38)) else { return false };
    let Ok(phoff) = usize::try_from(phoff) else { return false };
    (0..usize::from(phnum)).any(|i| u32_at(phoff + i * usize::from(phentsize)) == Some(PT_INTERP))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dynamic_and_static_programs_are_told_apart() {
        assert_eq!(launch_of(Path::new("/bin/sh")).unwrap(), Start::Elf);
        if Path::new("/bin/busybox").is_file() {
            assert_eq!(launch_of(Path::new("/bin/busybox")).unwrap(), Start::Static, "Debian's busybox-static");
        }
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("tool");
        std::fs::write(&script, "#!/bin/sh -e\necho hi\n").unwrap();
        assert_eq!(launch_of(&script).unwrap(), Start::Script { interpreter: "/bin/sh".into(), arg: Some("-e".into()) });
        std::fs::write(&script, "#!/usr/bin/env node\n").unwrap();
        assert_eq!(launch_of(&script).unwrap(), Start::Unknown);
    }

    #[test]
    fn a_wrapper_starts_its_program_through_the_host_loader() {
        let runtime = HostRuntime { loader_name: "ld-linux-x86-64.so.2".into(), lib_dir: "/usr/lib/x86_64-linux-gnu".into() };
        assert_eq!(
            wrapper(&runtime, &[PathBuf::from("/opt/py/lib")], "/v/bin/python", "/v/bin/python", &["/v/bin/mini".into()]),
            "#!/bin/sh\n# specgap: started through the host's loader (cli: agents in image environments)\n\
             exec '/run/specgap/host/lib/ld-linux-x86-64.so.2' --inhibit-cache --library-path '/opt/py/lib:/run/specgap/host/lib' \
             --argv0 '/v/bin/python' '/v/bin/python' '/v/bin/mini' \"$@\"\n"
        );
    }

    #[test]
    fn adapters_needs_of_an_image() {
        assert_eq!(image_needs("mini-swe-agent").unwrap(), &[] as &[&str]);
        assert_eq!(image_needs("claude-code").unwrap(), &["bash"]);
        assert_eq!(image_needs("gemini-cli").unwrap(), &["bash"]);
        assert!(image_needs("aider").unwrap_err().contains("unknown"));
    }
}
