//! `specgap export-task` (to come).

/// Placeholder.
pub fn export_task() {}
