//! Integration tests of specgap-sandbox: materialization, the bubblewrap runner (including
//! escape attempts, each of which must fail) and the evaluator runner.

mod agent_sandbox;
mod byte_names;
mod cpu;
mod evaluator;
mod leftovers;
mod machine;
mod materialize;
mod reads;
mod rootfs;
mod sandbox;
mod session;
mod support;
