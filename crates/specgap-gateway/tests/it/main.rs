//! Integration tests of specgap-gateway: every protocol through the gateway to a scripted
//! mock upstream that checks each request, the security rules, budgets, faults, the journal
//! and the listeners.

mod admission;
mod budget;
mod faults;
mod journal;
mod listeners;
mod mock_model;
mod protocols;
mod security;
mod support;
mod tripwire;
mod usage;
