//! The `specgap-bridge` program (crate `specgap-bridge`): the harness tools inside a `cli:`
//! agent's sandbox. Declared here so that `cargo install --path crates/specgap-cli` installs
//! it next to `specgap`, where the harness looks for it.

fn main() -> std::process::ExitCode {
    specgap_bridge::main()
}
