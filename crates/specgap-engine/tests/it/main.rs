//! Integration tests of the episode engine: one binary (`cargo test -p specgap-engine`).
//!
//! They run real episodes on the task crate's fixtures (`req-basic`, `delivery-basic`)
//! under bubblewrap, with the relay user and a store in a temporary directory.

mod applicability;
mod batched;
mod byte_names;
mod clarification;
mod deadline;
mod detector;
mod end_rules;
mod evaluation;
mod image_env;
mod plan_mode;
mod protocols;
mod relay_owner;
mod residual;
mod self_driven;
mod stages;
mod submissions;
mod support;
mod text_channel;
mod tools;
