//! Integration tests of the model panels, against scripted mock servers that check every
//! request: one binary, one module per use.

mod detector;
mod extract;
mod fixture;
mod judge;
mod mock;
mod review;
