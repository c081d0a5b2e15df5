//! Hash maps and sets keyed by what the harness itself wrote: episode ids, task names, group
//! keys. They hash with foldhash under a fixed seed, several times cheaper than std's SipHash
//! for the short keys a million-episode report looks up tens of millions of times
//! (BENCHMARKS.md "Reports"). Keys an agent under test can choose (paths and text from its
//! trajectory, its questions) stay in std's randomly seeded maps, which resist collisions
//! chosen to slow the report down.

use std::collections::{HashMap, HashSet};

use foldhash::fast::FixedState;

/// A map over harness-written keys.
pub(crate) type KeyedMap<K, V> = HashMap<K, V, FixedState>;

/// A set of harness-written keys.
pub(crate) type KeyedSet<K> = HashSet<K, FixedState>;
