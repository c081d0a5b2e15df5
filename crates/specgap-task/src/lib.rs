//! specgap-task (under construction).
