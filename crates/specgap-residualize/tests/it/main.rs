//! Integration tests of the Residualization pipeline on run stores written through the store's
//! episode API (so each predecessor's outcome is exactly what the test says) and on copies of
//! the bundled `interval-tree` package, rebuilt and verified in the real sandbox.

mod machine;
mod pipeline;
mod review;
mod support;
mod validation;
