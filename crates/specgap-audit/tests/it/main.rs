//! Integration tests of specgap-audit: sampling, pages, import, the report's statistics and
//! resampling against a scripted mock user model. One binary, one module per concern.

mod agreement;
mod candidate;
mod extraction;
mod fixture;
mod import;
mod mock;
mod resample;
mod sample;
mod summary;
mod task;
